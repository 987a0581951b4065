"""The stage-growth benchmark (bench/stage_growth.py): the copy it builds without a stage, no build, no timing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import stage_growth
from bench.common import BenchError, Workspace


def test_the_copy_without_the_third_stage_is_a_valid_site_with_every_other_stage(tmp_path: Path) -> None:
    from llmsite.content.articles import load_site
    from llmsite.content.catalog import load_route
    from llmsite.figures.registry import discover

    ws = Workspace.create(tmp_path / "ws", git=False)
    route = load_route(ws.root / "data" / "route.yml", root=ws.root)[0]
    before = route.stages
    third = before[2]
    removed = stage_growth.remove_stage(ws.root, 3)
    assert removed["articles"] == third.slugs and removed["title"] == third.title

    site = load_site(root=ws.root)
    assert site.problems == [], "\n".join(str(p) for p in site.problems)
    assert [s.slugs for s in site.route.stages] == [s.slugs for s in before[:2] + before[3:]]
    for slug in third.slugs:
        assert not (ws.docs / "articles" / f"{slug}.md").exists()
        assert f"docs/articles/{slug}.md" in removed["removed_files"]
    left = {spec.article for spec in discover(ws.root / "code").values()}
    assert left and not left & set(third.slugs), "no figure is left declared for a removed article"
    labs = {name for entry in route.entries if entry.slug in third.slugs for name in entry.lab_names}
    assert labs and all(not (ws.root / "labs" / f"{name}.py").exists() for name in labs)


def test_a_stage_the_route_does_not_have_is_refused(tmp_path: Path) -> None:
    ws = Workspace.create(tmp_path / "ws", git=False)
    with pytest.raises(BenchError, match="no stage 9"):
        stage_growth.remove_stage(ws.root, 9)


def test_the_report_gives_both_cold_builds_and_the_growth() -> None:
    from bench import report

    results = {
        "machine": {"packages": {}},
        "stage-growth": {
            "stage": 3, "title": "第三阶段", "articles": ["evaluation", "grpo"],
            "cold_without": {"median": 171.1, "min": 171.1, "max": 171.1, "n": 1},
            "cold_with": {"median": 558.9, "min": 558.9, "max": 558.9, "n": 1},
            "cold_without_cpu": {"median": 250.0, "n": 1}, "cold_with_cpu": {"median": 900.0, "n": 1},
            "cold_without_computed": {"median": 161.5, "n": 1}, "cold_with_computed": {"median": 546.1, "n": 1},
            "growth_s": 387.8, "growth_cpu_s": 650.0, "load_average_start": 0.5, "load_average_end": 1.7,
        },
    }
    text = report.render(results)
    assert "Cold build with and without stage 3 (第三阶段), interleaved" in text
    rows = {line.split("  ")[0]: line for line in text.splitlines() if line.startswith(("cold build", "growth"))}
    assert "171.10 s" in rows["cold build without stage 3"] and "558.90 s" in rows["cold build with stage 3"]
    assert "387.8 s" in rows["growth (evaluation, grpo)"] and "CPU 650.0 s" in rows["growth (evaluation, grpo)"]
    failed = report.render({"machine": {"packages": {}}, "stage-growth": {"error": "check failed"}})
    assert "Stage growth: FAILED: check failed" in failed
