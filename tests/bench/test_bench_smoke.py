"""Smoke tests of the benchmark harness (bench/, ``python -m llmsite bench``): tiny N, no timing assertions.

They check that the pieces produce valid input for the measurements: synthetic
articles that pass the project's own validation, a baseline config MkDocs
accepts, a gzip server that really gzips, the edits the build and serve
benchmarks make, the search-index analysis and the report.
"""

from __future__ import annotations

import ast
import gzip
import json
import urllib.request
from pathlib import Path

import pytest

from bench import build, hugo, report, synth, variants, weight
from bench.common import Samples, Workspace, paired_ratio, read_config, rotate
from bench.httpd import serve


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "ws", git=False)


def test_workspace_is_a_copy(ws: Workspace) -> None:
    assert (ws.root / "mkdocs.yml").is_file()
    assert (ws.docs / "articles" / "transformer-attention.md").is_file()
    assert (ws.root / "llmsite" / "mkdocs" / "plugin.py").is_file()
    assert not (ws.root / "node_modules").exists(), "the build needs no Node packages"
    env = ws.env()
    assert env["LLM_SITE_CACHE"] == str(ws.cache)
    assert env["NO_MKDOCS_2_WARNING"] == "1"


def test_synthetic_articles_pass_the_project_checks(ws: Workspace) -> None:
    from llmsite.content.articles import load_site

    made = synth.add_articles(ws.root, 3, seed=1)
    assert [a.slug for a in made] == ["bench-0001", "bench-0002", "bench-0003"]
    for a in made:
        assert a.hanzi >= synth.TARGET_HANZI
        body = a.text.split("---", 2)[2]
        assert body.count("\n## ") == 2
        assert "```python" in body and "\n$$\n" in body
        assert "$" in body.replace("$$", "")
    site = load_site(root=ws.root)
    assert site.problems == [], "\n".join(str(p) for p in site.problems)
    assert {"bench-0001", "bench-0002", "bench-0003"} <= set(site.articles)
    route = read_config(ws.root / "data" / "route.yml")
    assert any("bench-0001" in (s.get("articles") or []) for s in route["stages"])


def test_synthetic_articles_are_deterministic_and_varied() -> None:
    tags = ["Transformer", "PyTorch"]
    assert synth.article(5, tags, seed=0).text == synth.article(5, tags, seed=0).text
    assert synth.article(5, tags, seed=0).text != synth.article(6, tags, seed=0).text


def test_baseline_config_is_accepted_by_mkdocs(ws: Workspace, tmp_path: Path) -> None:
    from mkdocs.config import load_config

    site = tmp_path / "site"
    (site / "figures").mkdir(parents=True)
    (site / "figures" / "attention-weights.light.svg").write_text("<svg/>")
    path = variants.prepare_baseline(ws, site)
    cfg = load_config(config_file=str(path))
    assert list(cfg["plugins"].keys()) == ["material/search"]
    assert not cfg["hooks"]
    assert "llmsite" not in cfg["plugins"]
    docs = ws.root / variants.BASELINE_DOCS
    article = (docs / "articles" / "transformer-attention.md").read_text(encoding="utf-8")
    assert "<!-- figure:" not in article and 'class="llm-figure"' in article
    assert (docs / "figures" / "attention-weights.light.svg").is_file()
    assert (docs / "assets" / "vendor" / "katex" / "katex.min.js").is_file()
    stages = [next(iter(item)) for item in cfg["nav"][1]["大模型学习笔记"][3:]]
    assert stages == [s["title"] for s in read_config(ws.root / "data" / "route.yml")["stages"]]


def test_nofig_config_turns_off_only_the_figure_step(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "site" / "figures").mkdir(parents=True)
    path = variants.prepare_nofig(ws, tmp_path / "site")
    plugins = variants.project_plugins(ws.root)
    child = read_config(path)["plugins"]
    ours = [p for p in plugins if isinstance(p, dict) and "llmsite" in p]
    assert len(ours) == 1 and ours[0]["llmsite"].get("figures", True) is True
    changed = [(a, b) for a, b in zip(plugins, child, strict=True) if a != b]
    assert changed == [(ours[0], {"llmsite": {**ours[0]["llmsite"], "figures": False}})]


def test_edits_make_unique_markers(ws: Workspace) -> None:
    from llmsite.content.snippets import sections

    marker = build.append_article_line(ws, "t")
    assert marker in (ws.root / build.ARTICLE).read_text(encoding="utf-8")
    first = build.edit_module(ws, "t1")
    second = build.edit_module(ws, "t2")
    module = ws.root / build.MODULE
    text = module.read_text(encoding="utf-8")
    ast.parse(text)
    assert second in text and first not in text  # one marker line at a time
    assert second in sections(module)["sinusoidal"]  # inside the snippet the article shows


def test_gzip_server(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    page = "<p>注意力机制</p>" * 200
    (tmp_path / "a" / "index.html").write_text(page, encoding="utf-8")
    (tmp_path / "f.woff2").write_bytes(b"\x00" * 100)
    with serve(tmp_path) as server:
        req = urllib.request.Request(server.base_url + "a/", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(req) as resp:
            assert resp.headers["Content-Encoding"] == "gzip"
            body = resp.read()
        assert gzip.decompress(body).decode("utf-8") == page
        req = urllib.request.Request(server.base_url + "f.woff2", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(req) as resp:
            assert resp.headers.get("Content-Encoding") is None
        log = server.take_log()
    assert log[0].encoding == "gzip" and log[0].wire_bytes == len(body) < log[0].raw_bytes
    assert log[1].wire_bytes == log[1].raw_bytes == 100


def test_search_index_stats(tmp_path: Path) -> None:
    docs = [{"location": "a/", "title": "注意力", "text": "<p>多头\u200b注意力</p><pre><code>x = 1</code></pre>"}]
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "search_index.json").write_text(
        json.dumps({"config": {}, "docs": docs}, separators=(",", ":"))  # as Material writes it
    )
    stats = weight.search_index_stats(tmp_path, 1)
    assert stats["compact_bytes"] < stats["escaped_bytes"] == stats["as_written_bytes"]
    assert stats["compact_no_code_bytes"] < stats["compact_bytes"]
    assert not stats["as_written_is_compact"]


def test_hugo_site(tmp_path: Path, ws: Workspace) -> None:
    synth.add_articles(ws.root, 2)
    assert hugo.write_site(ws.docs, tmp_path / "hugo") == len(list((ws.docs / "articles").glob("*.md"))) - 1
    if not hugo.available():
        pytest.skip("hugo is not installed")
    hugo.build(tmp_path / "hugo", tmp_path / "public", ws.env())
    assert (tmp_path / "public" / "articles" / "bench-0001" / "index.html").is_file()


def test_statistics_helpers() -> None:
    a, b = Samples([2.0, 4.0, 6.0]), Samples([1.0, 2.0, 2.0])
    assert a.median == 4.0
    assert paired_ratio(a, b) == 2.0
    assert rotate(["x", "y", "z"], 1) == ["y", "z", "x"]


def test_report_renders_partial_results() -> None:
    results = {
        "machine": {"packages": {}},
        "build": {"figure_hook_ratio": 1.01, "figure_step_over_import": 2.5, "labs": {"skipped": "no labs"}},
        "weight": {
            "first_load_goal": {
                "n": 1000,
                "attention_wire_bytes": 2_500_000,
                "search_index_wire_bytes": 2_200_000,
                "search_index_share": 0.88,
                "search_index_fetched_on_first_load": True,
                "without_search_index": 300_000,
                "met": False,
                "real_articles": 6,
                "real_attention_wire_bytes": 2_000_000,
                "ratio_to_real": 1.25,
                "ratio_goal": 1.1,
            }
        },
    }
    goals = report.goals(results)
    assert [g["status"] for g in goals] == ["MET", "MISSED", "MISSED", "MISSED"]
    text = report.render({**results, "goals": goals})
    assert "1. Build" in text and "Goals" in text and "ratio 1.250 (goal <= 1.1)" in text


def test_search_index_hook_rewrites_compactly(tmp_path: Path) -> None:
    """llmsite/mkdocs/search_index.py: same JSON value, UTF-8 instead of escapes, an ordinary file mode."""
    from llmsite.mkdocs import search_index as hook

    data = {"config": {"separator": "[\\s\\u200b]+"}, "docs": [{"location": "a/", "title": "多头\u200b注意力"}]}
    index = tmp_path / "search" / "search_index.json"
    index.parent.mkdir()
    escaped = json.dumps(data, separators=(",", ":")).encode()
    index.write_bytes(escaped)
    hook.rewrite(tmp_path, budget_kb=0)
    written = index.read_bytes()
    assert json.loads(written) == data
    assert len(written) < len(escaped) and "注意力".encode() in written
    assert index.stat().st_mode & 0o044  # readable by others, unlike mkstemp's 0600
    assert not list(index.parent.glob(".search_index-*"))
    assert hook.compact(b'{"t":"\\ud800"}') is None  # a lone surrogate stays escaped
    hook.rewrite(tmp_path / "nowhere", budget_kb=0)  # no index: nothing to do


def test_lighthouse_pages_cover_every_kind_of_page(tmp_path: Path) -> None:
    from bench import lighthouse

    for rel in ("", "articles/", "articles/a/", "articles/page/2/", "route/", "tags/", "labs/x_lab/", "about/"):
        (tmp_path / rel).mkdir(parents=True, exist_ok=True)
        (tmp_path / rel / "index.html").write_text("<html></html>", encoding="utf-8")
    names = [p.name for p in lighthouse.pages_of(tmp_path)]
    assert names == ["home", "list", "route", "tags", "article:a", "lab:x_lab"]  # list pages 2… are not articles


def test_lighthouse_summary_reads_the_report_fields() -> None:
    from bench import lighthouse

    report = {
        "categories": {"performance": {"score": 0.76}, "accessibility": {"score": 1}, "seo": {"score": None}},
        "audits": {
            "total-blocking-time": {"numericValue": 1250.4},
            "largest-contentful-paint": {"numericValue": 1500},
            "cumulative-layout-shift": {"numericValue": 0.01},
            "dom-size": {"numericValue": 7403},
            "total-byte-weight": {"numericValue": 400_000},
            "mainthread-work-breakdown": {"details": {"items": [
                {"group": "styleLayout", "groupLabel": "Style & Layout", "duration": 2900.6},
                {"group": "scriptEvaluation", "groupLabel": "Script Evaluation", "duration": 700}]}},
            "bootup-time": {"details": {"items": [{"url": "a.js", "total": 10}, {"url": "bundle.js", "total": 900}]}},
            "long-tasks": {"details": {"items": [{"url": "bundle.js", "duration": 1200}]}},
        },
    }
    s = lighthouse.summarize(report)
    assert s["scores"] == {"performance": 76, "accessibility": 100}  # a category without a score is left out
    assert (s["tbt_ms"], s["dom_elements"], s["cls"]) == (1250.4, 7403, 0.01)
    assert s["main_thread_ms"] == {"Style & Layout": 2901, "Script Evaluation": 700}
    assert list(s["scripts_ms"]) == ["bundle.js", "a.js"]  # most main-thread time first
    assert s["long_tasks"] == [{"url": "bundle.js", "ms": 1200}]
    median = lighthouse.median_summary([s, {**s, "tbt_ms": 100.0}, {**s, "tbt_ms": 3000.0}])
    assert median["tbt_ms"] == 1250.4 and median["repeats"] == 3
    assert "| x | 76 | 1250 ms | 1.5 s | 0.010 | 7403 | 391 KiB |" in lighthouse.table({"x": {"ours": s}})


def test_report_puts_the_two_cold_builds_side_by_side() -> None:
    results = {
        "machine": {"packages": {}},
        "cold-builders": {
            "cold_mkdocs": {"median": 741.5, "min": 741.5, "max": 741.5, "n": 1},
            "cold_zensical": {"median": 733.25, "min": 733.25, "max": 733.25, "n": 1},
            "cold_mkdocs_computed": {"median": 690.0, "n": 1},
            "cold_zensical_computed": {"median": 688.0, "n": 1},
            "zensical_over_mkdocs": 733.25 / 741.5,
            "zensical_over_mkdocs_paired": 0.9889,
            "load_average_start": 0.4,
            "load_average_end": 1.9,
        },
    }
    text = report.render(results)
    rows = {line.split("  ")[0]: line for line in text.splitlines() if line.startswith(("cold ", "Zensical /"))}
    mkdocs = rows["cold mkdocs build (empty .cache)"]
    assert "741.50 s" in mkdocs and "690.00 s" in mkdocs
    assert "733.25 s" in rows["cold zensical build (empty .cache)"]
    assert "0.99" in rows["Zensical / MkDocs, cold"] and "load 0.4 -> 1.9" in rows["Zensical / MkDocs, cold"]
    failed = report.render({"machine": {"packages": {}}, "cold-builders": {"error": "zensical build exited 1"}})
    assert "Cold builders: FAILED: zensical build exited 1" in failed
