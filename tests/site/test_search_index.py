"""The compact search index and its size budget (llmsite/mkdocs/search_index.py)."""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path

import pytest

from llmsite.mkdocs import search_index as hook

ROOT = Path(__file__).resolve().parents[2]

HAN = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种"
    "面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本"
    "去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比"
    "或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总"
    "次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做"
    "必战先回则任取据处理府研质"
)
SEP = "\u200b"


def synthetic_index(entries: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    docs = []
    for i in range(entries):
        words = [
            "".join(rng.choice(HAN) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(300, 900))
        ]
        docs.append({"location": f"articles/a{i}/#s", "title": f"第 {i} 节：注意力", "text": SEP.join(words)})
    return json.dumps({"config": {"lang": ["zh"]}, "docs": docs}, ensure_ascii=False).encode()


def test_compact_is_the_same_json_in_fewer_bytes() -> None:
    escaped = json.dumps(json.loads(synthetic_index(20)), ensure_ascii=True).encode()
    compacted = hook.compact(escaped)
    assert compacted is not None and len(compacted) < len(escaped) * 0.7
    assert json.loads(compacted) == json.loads(escaped)


def test_an_index_within_budget_is_left_alone() -> None:
    data = synthetic_index(10)
    out, cap = hook.fit_budget(data, budget=10_000_000)
    assert out == data and cap is None


def test_an_index_over_budget_is_cut_to_fit_and_keeps_titles() -> None:
    data = synthetic_index(400)
    budget = len(zlib.compress(data, 6)) // 4
    out, cap = hook.fit_budget(data, budget)
    assert cap is not None and cap > 0
    assert len(zlib.compress(out, 6)) <= budget
    before, after = json.loads(data)["docs"], json.loads(out)["docs"]
    assert [d["title"] for d in after] == [d["title"] for d in before]
    assert [d["location"] for d in after] == [d["location"] for d in before]
    assert all(b["text"].startswith(a["text"]) and len(a["text"]) <= cap for a, b in zip(after, before, strict=True))
    # the largest cap that fits: one more character per entry would not
    bigger = json.loads(data)
    for doc in bigger["docs"]:
        doc["text"] = doc["text"][: cap + 1]
    assert len(zlib.compress(hook._dump(bigger), 6)) > budget


@pytest.mark.parametrize("fraction", [0.02, 0.1, 0.5, 0.9, 0.999])
def test_the_cap_is_the_largest_that_fits_for_any_budget(fraction: float) -> None:
    """The interpolation search ends where bisection would: cap fits, cap + 1 does not (or 0 when nothing fits)."""
    data = synthetic_index(150, seed=3)
    budget = int(len(zlib.compress(data, 6)) * fraction)
    out, cap = hook.fit_budget(data, budget)
    assert cap is not None
    docs = json.loads(data)["docs"]

    def gzip_at(c: int) -> int:
        index = json.loads(data)
        for doc, original in zip(index["docs"], docs, strict=True):
            doc["text"] = original["text"][:c]
        return len(zlib.compress(hook._dump(index), 6))

    assert out == hook._dump({**json.loads(data), "docs": [{**d, "text": d["text"][:cap]} for d in docs]})
    if cap > 0:
        assert gzip_at(cap) <= budget
    assert gzip_at(cap + 1) > budget


def test_the_real_site_index_is_compact_utf8_and_within_budget(built_site) -> None:
    raw = (built_site.dir / "search" / "search_index.json").read_bytes()
    assert hook._dump(json.loads(raw)) == raw  # compact UTF-8, no \\uXXXX escapes
    assert "注意力".encode() in raw
    assert len(zlib.compress(raw, 6)) < 600_000


def test_the_rewritten_index_is_remembered_by_its_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm build reads the result back (no fit_budget call); changed input or budget is computed afresh."""
    site, memo = tmp_path / "site", tmp_path / "cache" / "search"
    index = site / hook.INDEX
    index.parent.mkdir(parents=True)
    escaped = json.dumps(json.loads(synthetic_index(60)), ensure_ascii=True).encode()
    budget_kb = len(zlib.compress(escaped, 6)) // 3000
    index.write_bytes(escaped)
    hook.rewrite(site, budget_kb, memo)
    first = index.read_bytes()
    assert first != escaped and len(zlib.compress(first, 6)) <= budget_kb * 1000

    calls = []
    real_fit = hook.fit_budget
    monkeypatch.setattr(hook, "fit_budget", lambda data, budget: calls.append(budget) or real_fit(data, budget))
    index.write_bytes(escaped)  # Material writes the same index again
    hook.rewrite(site, budget_kb, memo)
    assert index.read_bytes() == first and calls == []
    index.write_bytes(escaped)
    hook.rewrite(site, budget_kb, None)  # no memo: the same bytes, computed
    assert index.read_bytes() == first and calls == [budget_kb * 1000]

    index.write_bytes(escaped)
    hook.rewrite(site, budget_kb + 5, memo)  # another budget: another result
    assert len(calls) == 2 and len(zlib.compress(index.read_bytes(), 6)) <= (budget_kb + 5) * 1000
    changed = json.dumps(json.loads(synthetic_index(60, seed=1)), ensure_ascii=True).encode()
    index.write_bytes(changed)
    hook.rewrite(site, budget_kb, memo)
    assert len(calls) == 3 and index.read_bytes() != first
    assert len(list(memo.glob("*.json"))) == 3
