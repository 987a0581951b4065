"""A compact search index.

Material's search plugin writes ``search/search_index.json`` with ``json.dumps``'
default ``ensure_ascii=True``: every 汉字, and every zero-width space that the
jieba segmentation puts between words, becomes a 6-byte ``\\uXXXX`` escape
instead of 3 bytes of UTF-8. After the build this hook rewrites the file with
the same JSON value in UTF-8 (``ensure_ascii=False``, no spaces), atomically.
The browser reads it the same way (``fetch`` + JSON, always UTF-8), so search
works as before; only the bytes change. Measured with the benchmark (bench/):
this site 173 -> 105 kB raw, 34.7 -> 30.9 kB gzip; 1,000 synthetic articles
30.4 -> 15.7 MB raw, 2.40 -> 1.92 MB gzip (-20 %), for about 0.1 s of build time.

Material fetches the whole index on the first page load of a visit (on http(s)
at start-up, not when search is opened; only ``file://`` waits for the search
toggle), so its gzip size is part of every first visit.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import json
import logging
import zlib
from pathlib import Path
from typing import Any

from llmsite import atomic

log = logging.getLogger("mkdocs.plugins.llmsite.search_index")
INDEX = Path("search") / "search_index.json"


def compact(raw: bytes) -> bytes | None:
    """The same JSON in compact UTF-8, or None when it cannot be (or need not be) rewritten."""
    try:
        data = json.loads(raw)
        out = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (ValueError, UnicodeEncodeError):  # e.g. a lone surrogate: only the escaped form is valid
        return None
    return out if len(out) < len(raw) else None


def _gzip_size(data: bytes) -> int:
    return len(zlib.compress(data, 6))


def _dump(index: dict[str, Any]) -> bytes:
    return json.dumps(index, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def fit_budget(data: bytes, budget: int) -> tuple[bytes, int | None]:
    """Cut entries' text until the gzip size is within ``budget`` bytes.

    Returns the (possibly) new bytes and the character cap applied (None: no cut): the largest cap
    that fits, one more character per entry would not. Each try compresses the whole index, so the
    cap is searched by interpolation (the gzip size is close to linear in the characters kept, which
    are counted without compressing) between a cap that fits and one that does not, probing the
    neighbour of every guess: 6-8 compressions for 1,000 articles where bisection took 15.
    """
    if budget <= 0:
        return data, None
    full = _gzip_size(data)
    if full <= budget:
        return data, None
    index = json.loads(data)
    docs = index.get("docs", [])
    texts = [doc.get("text", "") for doc in docs]
    kept = _Kept([len(t) for t in texts])

    def size(cap: int) -> int:
        for doc, text in zip(docs, texts, strict=True):
            doc["text"] = text[:cap]
        return _gzip_size(_dump(index))

    fits, fits_size = 0, size(0)
    if fits_size > budget:  # even titles alone are over budget: every text is cut
        return _dump(index), 0
    over, over_size = kept.longest, full
    while over - fits > 1:
        lo, hi = kept(fits), kept(over)
        target = lo + (budget - fits_size) * (hi - lo) / (over_size - fits_size)
        guess = min(max(kept.cap_for(target), fits + 1), over - 1)
        neighbour = guess + 1 if (guess_size := size(guess)) <= budget else guess - 1
        for cap, cap_size in ((guess, guess_size), (neighbour, None)):
            if not fits < cap < over:
                continue
            cap_size = size(cap) if cap_size is None else cap_size
            if cap_size <= budget:
                fits, fits_size = cap, cap_size
            else:
                over, over_size = cap, cap_size
    for doc, text in zip(docs, texts, strict=True):
        doc["text"] = text[:fits]
    return _dump(index), fits


class _Kept:
    """The number of characters the entries keep at a cap, counted without building the index."""

    def __init__(self, lengths: list[int]) -> None:
        self.lengths = sorted(lengths)
        self.longest = self.lengths[-1] if self.lengths else 0
        self.prefix = [0, *itertools.accumulate(self.lengths)]

    def __call__(self, cap: int) -> int:
        shorter = bisect.bisect_right(self.lengths, cap)
        return self.prefix[shorter] + cap * (len(self.lengths) - shorter)

    def cap_for(self, target: float) -> int:
        """The largest cap keeping at most ``target`` characters (the count only grows with the cap)."""
        return max(bisect.bisect_right(range(self.longest + 1), target, key=self) - 1, 0)


def rewrite(site_dir: Path, budget_kb: int, memo: Path | None = None) -> None:
    """Called after Material's search plugin has written the index.

    The result is a function of the index's bytes, the budget and this module's code, so it is remembered
    in ``memo`` (a folder of the build cache) under a digest of the three: a warm build of 1,000 articles
    reads it back instead of parsing 30 MB of JSON and compressing it 7 times (1.3 s).
    """
    path = site_dir / INDEX
    if not path.is_file():
        return
    raw = path.read_bytes()
    budget = budget_kb * 1000
    key = hashlib.blake2b(raw + f"\x00{budget}\x00{_CODE}".encode(), digest_size=16).hexdigest()
    found = _recall(memo, key)
    if found is None:
        data, cap = fit_budget(compact(raw) or raw, budget)
        _remember(memo, key, data, cap)
    else:
        data, cap = found
    if cap is not None:
        log.info("search index: over %d kB gzip, text of each entry cut to %d characters", budget // 1000, cap)
    if data != raw:
        atomic.write_bytes(path, data)
    log.debug("search index: %d -> %d bytes", len(raw), len(data))


_CODE = hashlib.blake2b(Path(__file__).read_bytes(), digest_size=8).hexdigest()
_KEEP = 4  # results kept: a few sites (or budgets) built from one cache do not evict each other


def _recall(memo: Path | None, key: str) -> tuple[bytes, int | None] | None:
    if memo is None:
        return None
    for entry in memo.glob(f"{key}-*.json"):
        cap = entry.name.removeprefix(f"{key}-").removesuffix(".json")
        try:
            return entry.read_bytes(), (None if cap == "none" else int(cap))
        except (OSError, ValueError):
            return None
    return None


def _remember(memo: Path | None, key: str, data: bytes, cap: int | None) -> None:
    if memo is None:
        return
    with contextlib.suppress(OSError):  # a read-only cache only costs time
        atomic.write_bytes(memo / f"{key}-{'none' if cap is None else cap}.json", data)
        entries = sorted(memo.glob("*.json"), key=lambda e: e.stat().st_mtime, reverse=True)
        for old in entries[_KEEP:]:
            old.unlink(missing_ok=True)
