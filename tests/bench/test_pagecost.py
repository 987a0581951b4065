"""bench/pagecost.py on two tiny sites in Chromium: the table's rows and the counters it reads, no timings asserted."""

from __future__ import annotations

from pathlib import Path

from bench import pagecost


def _site(root: Path, paragraphs: int) -> Path:
    page = root / "p"
    page.mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>home</title><p>home</p>", encoding="utf-8")
    body = "".join(f"<p>第 {i} 段<span>文字</span></p>" for i in range(paragraphs))
    (page / "index.html").write_text(f"<!doctype html><title>p</title>{body}", encoding="utf-8")
    return root


def test_pagecost_prints_both_sites_and_their_ratio(tmp_path, capsys):
    """The DOM counter comes from the page that was opened: 2,000 paragraphs against 20 (each <p> with a <span> and
    two text nodes), so the 'after' site has about a hundredth of the nodes."""
    before, after = _site(tmp_path / "a", 2000), _site(tmp_path / "b", 20)
    assert pagecost.main([str(before), str(after), "p/", "--repeats", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| p/ |")]
    assert [r.split("|")[2].strip() for r in rows] == ["before", "after", "after / before"]
    nodes = [float(r.split("|")[-2].replace(",", "")) for r in rows]
    assert nodes[0] > 8000 and nodes[1] < 200, nodes
    assert nodes[2] < 0.05, nodes
