"""The real labs (labs/*.py), executed once per session: outputs, head scores, the downloadable notebook."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from .conftest import ROOT

LABS = sorted(p.stem for p in (ROOT / "labs").glob("*.py") if not p.name.startswith("_"))
ARTICLE_LINK = "../articles/transformer-attention.md"


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def test_labs_found() -> None:
    assert LABS == ["attention_heads_lab", "attention_lab"]


@pytest.mark.parametrize("name", LABS)
def test_executed_notebook_has_outputs(executed_labs: dict[str, Path], name: str) -> None:
    nb = nbformat.read(executed_labs[name], as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# 动手实验："), first.source[:40]
    assert ARTICLE_LINK in first.source, "the first cell links back to the article"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code), "every code cell was executed"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    stderr = [o.text for c in code for o in c.outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, f"warnings printed by the lab: {stderr}"
    images = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2, "the lab draws its plots"
    assert sum(bool(_text(c)) for c in code) >= len(code) // 2, "most cells print something"
    for cell in code:
        assert "execution" not in cell.metadata, "timing metadata is dropped"


def test_attention_lab_agrees_with_pytorch(executed_labs: dict[str, Path]) -> None:
    nb = nbformat.read(executed_labs["attention_lab"], as_version=4)
    out = "\n".join(_text(c) for c in nb.cells if c.cell_type == "code")
    for line in ("与 scaled_dot_product_attention 的输出一致: True", "不加掩码一致: True",
                 "因果（is_causal=True）一致: True", "把掩码取反（~mask）后传给 attn_mask 一致: True",
                 "直接把我们的掩码传进去一致: False"):
        assert line in out, line
    assert "(B, n_heads, T, T)" in out


_ROW = re.compile(r"^第 (\d) 层 第 (\d) 个头((?:\s+\d\.\d\d){5})\s+(\S+)$", re.M)
_BASELINE = re.compile(r"^均匀注意力((?:\s+\d\.\d\d){5})", re.M)
COLUMNS = ("previous", "induction", "duplicate", "self", "first")  # SCORE_NAMES order, as printed


def head_table(path: Path) -> tuple[list[tuple[int, int, dict[str, float], str]], dict[str, float]]:
    nb = nbformat.read(path, as_version=4)
    [cell] = [c for c in nb.cells if "head-scores" in c.metadata.get("tags", [])]
    text = _text(cell)
    rows = []
    for m in _ROW.finditer(text):
        values = dict(zip(COLUMNS, map(float, m.group(3).split()), strict=True))
        rows.append((int(m.group(1)), int(m.group(2)), values, m.group(4)))
    base = _BASELINE.search(text)
    assert rows and base, text
    return rows, dict(zip(COLUMNS, map(float, base.group(1).split()), strict=True))


def test_heads_lab_finds_previous_token_and_induction_heads(executed_labs: dict[str, Path]) -> None:
    """At least one previous-token head and one induction head, by the lab's own measured scores.

    Thresholds: a previous-token score of at least 0.3, and an induction score of at least 0.5. A head
    that spread its weight uniformly over the positions it may see would score about 0.15 and 0.08 on
    these sequences (the lab prints that baseline, and it is checked here): 0.3 is twice the first, and
    0.5 is six times the second and the majority of the head's attention.
    """
    rows, baseline = head_table(executed_labs["attention_heads_lab"])
    assert len(rows) == 8
    assert baseline["previous"] == pytest.approx(0.15, abs=0.01)
    assert baseline["induction"] == pytest.approx(0.08, abs=0.01)
    previous = [(layer, h, s["previous"]) for layer, h, s, _ in rows if s["previous"] >= 0.3]
    induction = [(layer, h, s["induction"]) for layer, h, s, _ in rows if s["induction"] >= 0.5]
    assert previous, rows
    assert induction, rows
    assert min(layer for layer, _, _ in induction) > min(layer for layer, _, _ in previous), \
        "the induction heads sit in a later layer than the previous-token heads"
    names = {name for *_, name in rows}
    assert {"前一个词头", "归纳头"} <= names
    nb = nbformat.read(executed_labs["attention_heads_lab"], as_version=4)
    out = "\n".join(_text(c) for c in nb.cells if c.cell_type == "code")
    assert "结论：前一个词头全部在归纳头之前的层里" in out


@pytest.mark.slow
@pytest.mark.parametrize("name", LABS)
def test_downloaded_notebook_runs_top_to_bottom(executed_labs: dict[str, Path], name: str, tmp_path: Path) -> None:
    """The published .ipynb executes with plain nbconvert from a folder inside the repository."""
    work = ROOT / ".cache" / f"test-download-{tmp_path.name}"
    work.mkdir(parents=True)
    try:
        nb_path = work / f"{name}.ipynb"
        shutil.copy2(executed_labs[name], nb_path)
        proc = subprocess.run(
            [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
             "--ExecutePreprocessor.timeout=600", "--output", "executed", str(nb_path)],
            cwd=work, capture_output=True, text=True, encoding="utf-8", timeout=900,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        nb = nbformat.read(work / "executed.ipynb", as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in code)
        assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
