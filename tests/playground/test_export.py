"""The export of a playable model (llmsite/playground): same bytes from two clean exports, the digest, the float16
rounding, the validation loss it costs, and the marker's errors with file:line."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from llmsite import artifacts
from llmsite.features.playground import Playground
from llmsite.playground import export, pages, registry
from llmsite.problems import BuildStop

from . import reference

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("one_thread")


def run_export(cache: Path) -> Path:
    """``python -m llmsite.playground --force`` into an empty site cache (the trained model from the run's cache)."""
    env = {**os.environ, "LLM_SITE_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-m", "llmsite.playground", "--only", "tang-gpt", "--force"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (entry,) = (cache / "playground" / "tang-gpt").iterdir()
    return entry


@pytest.fixture(scope="module")
def exported(tmp_path_factory, trained_artifacts):
    return [run_export(tmp_path_factory.mktemp(f"export-{i}")) for i in range(2)]


def test_two_clean_exports_are_byte_identical_and_the_digest_matches(exported):
    first, second = exported
    assert first.name == second.name, "same key"
    for name in (export.HEADER, export.WEIGHTS):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    header = json.loads((first / export.HEADER).read_text(encoding="utf-8"))
    weights = (first / export.WEIGHTS).read_bytes()
    assert header["weights"]["sha256"] == hashlib.sha256(weights).hexdigest()
    assert header["weights"]["bytes"] == len(weights) == 2 * header["params"]
    assert header["weights"]["file"] == f"tang-gpt.{header['weights']['sha256'][:12]}.bin"


def test_the_weights_are_the_trained_model_rounded_to_float16(exported, trained_artifacts):
    header = json.loads((exported[0] / export.HEADER).read_text(encoding="utf-8"))
    model = reference.dequantized(header, (exported[0] / export.WEIGHTS).read_bytes())
    saved = torch.load(trained_artifacts["tang-gpt"], weights_only=True)
    assert header["vocab"] == {"bytes": 256, "chars": list(saved["chars"])}
    assert header["config"] == saved["config"]
    assert header["params"] == sum(t.numel() for t in saved["state_dict"].values()) == 592_321
    for name, tensor in saved["state_dict"].items():
        assert torch.equal(model.state_dict()[name], tensor.to(torch.float16).to(torch.float32)), name


def test_float16_changes_the_validation_loss_by_at_most_a_hundredth_of_a_nat(exported, trained_artifacts, capsys):
    from gpt_from_scratch import lm_loss, load_poem_gpt, load_poems, poem_starts, split_poems

    fp32, tok, _ = load_poem_gpt(trained_artifacts["tang-gpt"])
    header = json.loads((exported[0] / export.HEADER).read_text(encoding="utf-8"))
    fp16 = reference.dequantized(header, (exported[0] / export.WEIGHTS).read_bytes())
    _, held_out = split_poems(load_poems())
    ids = torch.tensor(tok.encode(held_out))
    T = fp32.cfg.max_len
    # as the article measures it, a window from every poem start of the held-out set (not only 48 of them)
    starts = poem_starts(ids, tok.encode("\n")[0], T)
    rows = torch.stack([ids[s : s + T + 1] for s in starts.tolist()])
    x, y = rows[:, :-1], rows[:, 1:]
    n = len(starts)
    with torch.no_grad():
        losses = [lm_loss(m(x), y).item() for m in (fp32, fp16)]
    change = losses[1] - losses[0]
    with capsys.disabled():
        print(f"\nheld-out loss over {n} windows of {T} tokens: float32 {losses[0]:.6f}, float16 {losses[1]:.6f}, "
              f"change {change:+.6f} nats")
    assert abs(change) <= 0.01


def test_the_cache_key_follows_the_artifact_and_the_format():
    (artifact,) = [a for a in artifacts.discover().values() if a.name == "tang-gpt"]
    key = export.key_for(artifact)
    assert key.inputs["artifact:tang-gpt"] == artifacts.key_for(artifact).digest
    assert key.inputs["exporter"] == hashlib.sha256(Path(export.__file__).read_bytes()).hexdigest()


# --------------------------------------------------------------------------- the marker

KNOWN = ("tang-gpt", "tiny-transformer")


@pytest.mark.parametrize("text, line", [
    ("# 标题\n\n<!-- playground:tang-gpt -->\n", None),  # well formed (no spaces needed)
    ("正文\n\n  <!-- playground: tang-gpt -->\n", 3),  # indented
    ("正文\n<!-- playground tang-gpt -->\n", 2),  # no colon
    ("正文\n\n\n<!-- playground: tang-gpt --> 多余的字\n", 4),  # text after it
    ("见下面 <!-- playground: tang-gpt -->\n", 1),  # not alone on its line
    ("\n<!-- Playground: Tang_GPT -->\n", 2),  # not the name's spelling
])
def test_a_malformed_marker_names_file_and_line(text, line):
    if line is None:
        assert [u.name for u in registry.uses(text, "docs/x.md", KNOWN)] == ["tang-gpt"]
        return
    with pytest.raises(registry.MarkerError, match=rf"^docs/x\.md:{line}: .*<!-- playground: tang-gpt -->"):
        registry.uses(text, "docs/x.md", KNOWN)


def test_an_unknown_or_repeated_marker_names_file_and_line():
    with pytest.raises(registry.MarkerError, match=r"^docs/x\.md:3: 没有名为 tang-bert 的构建产物.*tang-gpt"):
        registry.uses("a\n\n<!-- playground: tang-bert -->\n", "docs/x.md", KNOWN)
    with pytest.raises(registry.MarkerError, match=r"^docs/x\.md:4: 模型 tang-gpt 的演示在这一页已经放过一次"):
        registry.uses("<!-- playground: tang-gpt -->\n\n\n<!-- playground: tang-gpt -->\n", "docs/x.md", KNOWN)


def test_the_build_stops_on_a_bad_marker_with_file_and_line(tmp_path):
    docs = tmp_path / "docs" / "articles"
    docs.mkdir(parents=True)
    (docs / "x.md").write_text("---\ntitle: x\n---\n\n正文\n<!-- playground: nope -->\n", encoding="utf-8")
    with pytest.raises(registry.MarkerError, match=r"articles/x\.md:6: 没有名为 nope"):
        pages.marked(tmp_path / "docs")
    page = SimpleNamespace(file=SimpleNamespace(src_uri="articles/y.md"), url="articles/y/")
    with pytest.raises(BuildStop, match=r"^docs/articles/y\.md:2: 模型演示的标记写错了"):
        Playground(serving=False).expand("正文\n<!--playground tang-gpt-->\n", page)


def test_the_articles_mark_the_model_where_the_issue_asks():
    used = pages.marked()
    assert sorted(u.where.split(":")[0] for u in used["tang-gpt"]) == [
        "docs/articles/decoding.md", "docs/articles/gpt-from-scratch.md"]
