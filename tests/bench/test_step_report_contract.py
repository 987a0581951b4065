"""The benchmark reads what the build's steps report (llmsite.report), not the build's log: the two cannot drift.

The figure and lab steps of the MkDocs adapter are run with a stand-in worker (no drawing, no kernel), with
``LLM_BUILD_REPORT`` set as the benchmark sets it; the benchmark's own ``Run`` must then count exactly the
items each step did. Rewording the Chinese log lines cannot break this, and a renamed field would fail here.
"""

from __future__ import annotations

import io
import logging
import subprocess
from pathlib import Path

import pytest

from bench.common import Run
from llmsite import report
from llmsite.features import figures as figure_step
from llmsite.features import labs as lab_step
from llmsite.figures import registry


@pytest.fixture
def reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "steps.jsonl"
    monkeypatch.setenv(report.ENV, str(path))

    def fake_step(step: str, names: list[str], log: logging.Logger, label: str, timeout: float | None = None):
        return subprocess.CompletedProcess(["python", "-m", "llmsite", step], 0, "", "")

    monkeypatch.setattr(figure_step.worker, "run_step", fake_step)
    monkeypatch.setattr(lab_step.worker, "run_step", fake_step)
    return path


def test_the_bench_counts_what_the_figure_and_lab_steps_report(reports: Path) -> None:
    specs = registry.discover()
    names = sorted(specs)[:3]
    figure_step._build(specs, names)
    lab_step._execute(["lab_a", "lab_b"])
    figure_step._build(specs, names[:1])

    run = Run(seconds=1.0, returncode=0, output="（日志的措辞与此无关）", steps=report.read(reports))
    figures, figure_seconds = run.figures_built
    labs, lab_seconds = run.labs_executed
    assert (figures, labs) == (4, 2)
    assert figure_seconds >= 0 and lab_seconds >= 0
    assert [entry["step"] for entry in run.steps] == ["figures", "labs", "figures"]


def test_nothing_is_written_without_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(report.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    report.record("figures", 1, 0.5)
    assert list(tmp_path.iterdir()) == []
    assert report.total([], "figures") == (0, 0.0)


def test_each_figure_drawn_is_reported_by_name(reports: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from llmsite.figures import cache, runner

    specs = registry.discover()
    items = [runner.Planned(spec, cache.key_for(spec), cached=False) for spec in list(specs.values())[:2]]
    monkeypatch.setattr(runner, "draw", lambda item, cache_dir: tmp_path)  # no drawing: only the reporting
    monkeypatch.setattr(runner, "workers_for", lambda count: 1)
    monkeypatch.setattr(cache, "artifacts_used", lambda spec: [])
    runner.run(items, cache_dir=tmp_path, out=io.StringIO())
    run = Run(seconds=1.0, returncode=0, output="", steps=report.read(reports))
    assert [(e["step"], e["name"]) for e in run.steps] == [("figure", item.spec.name) for item in items]
