"""A pytest plugin for the lane (``-p llmsite.lane.report``): what each test did, written as JSON to the file named by
``LLM_LANE_REPORT`` when the run ends, so that the lane can say where each failure is, the way the build does.

A failure is located at the last place of its traceback inside the repository (pytest's rootdir; not a library in
``.venv``): the assertion of the test, or the line of ``code/`` that raised. Under pytest-xdist only the controlling
process writes.

It also copies what the run's strict build says it recomputed (models trained, figures redrawn, labs executed, the
build's time) from the output ``tests/conftest.py`` keeps for the run (``built-site.json`` in ``LLM_TEST_SHARED``),
so that a slow lane says whether its build was warm.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

ENV = "LLM_LANE_REPORT"
_OUTCOMES: dict[str, Any] = {"passed": 0, "failed": 0, "skipped": 0, "failures": []}
_ROOT: list[Path] = []  # pytest's rootdir


def pytest_configure(config: pytest.Config) -> None:
    _ROOT[:] = [config.rootpath.resolve()]


def _inside(path: str) -> str | None:
    """``path`` relative to the rootdir when it is a file of the repository (not of a library in .venv)."""
    try:
        resolved = Path(path).resolve()
    except (OSError, ValueError):
        return None
    if not _ROOT or not resolved.is_relative_to(_ROOT[0]):
        return None
    inside = resolved.relative_to(_ROOT[0])
    return None if inside.parts[:1] == (".venv",) or "site-packages" in inside.parts else inside.as_posix()


def _place(report: pytest.TestReport) -> tuple[str, int, str]:
    """(file relative to the repository, line, message) of a failure."""
    path, lineno0, _ = report.location
    where, line = path, lineno0 + 1
    message = ""
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        message = crash.message
    chain = getattr(longrepr, "chain", None) or []
    entries = []
    for traceback, _, _ in chain[-1:]:
        entries = getattr(traceback, "reprentries", []) or []
    for entry in reversed(entries):
        loc = getattr(entry, "reprfileloc", None)
        found = _inside(loc.path) if loc is not None else None
        if found is not None:
            where, line = found, loc.lineno
            break
    if not message:
        message = str(longrepr).strip().splitlines()[-1] if longrepr else report.outcome
    return where, line, message


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        where, line, message = _place(report)
        _OUTCOMES["failed"] += 1
        _OUTCOMES["failures"].append({"nodeid": report.nodeid, "when": report.when, "file": where, "line": line,
                                      "message": message})
    elif report.skipped and report.when in ("setup", "call"):
        _OUTCOMES["skipped"] += 1
    elif report.passed and report.when == "call":
        _OUTCOMES["passed"] += 1


# What the build recomputed, as its steps log it (llmsite/mkdocs: figures, labs, playground; MkDocs' own last line).
_BUILD_LINES = re.compile(r"\[产物\]|重新生成 \d+ 张图|重新计算 \d+ 个练习答案|执行了 \d+ 个实验|"
                          r"Documentation built in")


def build_summary(output: str) -> list[str]:
    """The lines of a build's output that say what it recomputed and how long it took."""
    return [re.sub(r"^(INFO|WARNING)\s+-\s+", "", line).strip() for line in output.splitlines()
            if _BUILD_LINES.search(line)]


def _build_lines() -> list[str]:
    shared = os.environ.get("LLM_TEST_SHARED")
    record = Path(shared) / "built-site.json" if shared else None
    if record is None or not record.is_file():
        return []
    try:
        return build_summary(json.loads(record.read_text(encoding="utf-8")).get("output") or "")
    except (OSError, ValueError, AttributeError):
        return []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = os.environ.get(ENV)
    if not target or hasattr(session.config, "workerinput"):
        return
    deselected = len(session.config.stash.get(_DESELECTED, []))
    data = {**_OUTCOMES, "exitstatus": int(exitstatus), "deselected": deselected, "build": _build_lines()}
    Path(target).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


_DESELECTED = pytest.StashKey[list]()


@pytest.hookimpl(trylast=True)
def pytest_deselected(items: list[pytest.Item]) -> None:
    config = items[0].config if items else None
    if config is not None:
        config.stash.setdefault(_DESELECTED, []).extend(item.nodeid for item in items)
