"""Smoke tests of the preview-at-scale benchmark (bench/serve_scale.py): tiny N, no timing assertions.

The real server run (``mkdocs serve`` on 3 synthetic articles, one edit of each kind) checks every served
change independently of the benchmark's own polling: after each edit, while the server still runs, the
test fetches the pages over HTTP itself and looks for the marker, and checks that a page that must not
change does not show it.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bench import serve_scale, synth
from bench.common import BenchError, Workspace
from bench.httpd import serve


class _Static:
    """Stands in for a preview server: pages of a folder served by the bench's static server."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.variant = serve_scale.VARIANTS[0]

    def page(self, path: str) -> str | None:
        try:
            with urllib.request.urlopen(self.base + path, timeout=5) as resp:
                return str(resp.read().decode("utf-8"))
        except OSError:
            return None

    def alive(self) -> bool:
        return True

    def log_text(self) -> str:
        return ""


def test_wait_all_waits_for_every_page_and_fails_without_the_marker(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.html").write_text("<p>旧的内容</p>", encoding="utf-8")
    (tmp_path / "a" / "index.html").write_text("<p>新的 benchmarkx1</p>", encoding="utf-8")
    late = threading.Timer(0.6, lambda: (tmp_path / "b" / "index.html").write_text("benchmarkx1", encoding="utf-8"))
    with serve(tmp_path) as server:
        fake: Any = _Static(server.base_url)
        start = time.perf_counter()
        late.start()
        seen = serve_scale.wait_all(fake, ["a/", "b/"], "benchmarkx1", start, timeout=30)
        assert set(seen) == {"a/", "b/"}
        assert seen["a/"] < 0.6 <= seen["b/"]  # the time is that of the last page to show it
        with pytest.raises(BenchError, match="not on"):
            serve_scale.wait_all(fake, ["a/"], "benchmarknever", time.perf_counter(), timeout=0.5)


def test_edits_keep_the_site_valid(tmp_path: Path) -> None:
    from llmsite.content.articles import load_site

    ws = Workspace.create(tmp_path / "ws", git=False)
    synth.add_articles(ws.root, 3)
    slug = serve_scale.target_slug(3)
    assert slug == "bench-0002"
    assert serve_scale.target_slug(1000) == "bench-0025"  # inside the first stage of 50
    path = ws.docs / "articles" / f"{slug}.md"
    serve_scale.append_body(path, "benchmarkb0abc")
    title = serve_scale.set_title(path, "benchmarkt0abc")
    assert serve_scale.front_title(path.read_text(encoding="utf-8")) == title
    assert "benchmarkt0abc" in title
    site = load_site(root=ws.root)
    assert site.problems == [], "\n".join(str(p) for p in site.problems)
    assert site.articles[slug].title == title


@pytest.mark.slow
def test_mkdocs_serve_tiny_site(tmp_path: Path, repo_cache: Path) -> None:
    """One server variant (``mkdocs serve``), N = 3, one edit of each kind: about a minute."""
    checked: list[str] = []

    def check(server: serve_scale.Server, sample: dict[str, Any]) -> None:
        marker = sample["marker"]
        for path in sample["pages"]:
            assert marker in (server.page(path) or ""), f"{marker} not served on {path}"
        untouched = "articles/prompt-engineering/"  # a real article, neither edited nor listing the synthetic one
        assert marker not in (server.page(untouched) or "")
        checked.append(marker)

    # seeded with the run's build cache: only the synthetic articles are new (without it, this test built every
    # figure, lab and model cold when it ran before the run's build: 225 s of a 31-minute suite)
    ctx = serve_scale.ServeScaleContext(
        tmp_path, repo_cache, sizes=[3], repeats=1, variants=["mkdocs"], after_edit=check
    )
    result = serve_scale.run_size(ctx, 3)
    v = result["variants"]["mkdocs"]
    assert set(result["variants"]) == {"mkdocs"}
    assert v["startup_s"] > 0
    for kind in serve_scale.EDITS:
        assert v[kind]["n"] == 1 and v[kind]["median"] > 0, kind
    assert len(checked) == len(serve_scale.EDITS)
    title_pages = set(v["title"]["samples"][0]["pages"])
    expected = {"articles/bench-0002/", "articles/bench-0001/", "articles/bench-0003/", "route/", "tags/", "articles/"}
    assert expected <= title_pages
    assert v["body"]["samples"][0]["pages"].keys() == {"articles/bench-0002/"}
    assert v["memory_end_kib"]["VmHWM"] >= v["memory_after_start_kib"]["VmRSS"] > 10_000
    assert v["stopped"] == "stopped with SIGINT"
    source = (tmp_path / "serve-scale-3" / "docs" / "articles" / "bench-0002.md").read_text(encoding="utf-8")
    assert "benchmark" not in source  # the edits were undone


@pytest.mark.slow
def test_zensical_serve_tiny_site(tmp_path: Path, repo_cache: Path) -> None:
    """Zensical's own preview of the staged tree (``python -m llmsite zensical --serve``), N = 3: the body edit of a
    synthetic article reaches its page with the extension's work in it; the other edits are recorded as skipped."""
    checked: list[str] = []

    def check(server: serve_scale.Server, sample: dict[str, Any]) -> None:
        page = server.page("articles/bench-0002/") or ""
        assert sample["marker"] in page
        real = server.page("articles/transformer-attention/") or ""
        assert "figure:" not in real and "figures/attention-weights." in real, "the extension's figures served"
        checked.append(sample["marker"])

    ctx = serve_scale.ServeScaleContext(
        tmp_path, repo_cache, sizes=[3], repeats=1, variants=["zensical"], after_edit=check
    )
    result = serve_scale.run_size(ctx, 3)
    v = result["variants"]["zensical"]
    assert "error" not in v, v
    assert v["startup_s"] > 0 and v["body"]["n"] == 1 and v["body"]["median"] > 0
    assert "skipped" in v["title"] and "skipped" in v["code"]
    assert len(checked) == 1
    assert v["stopped"].startswith("stopped")
