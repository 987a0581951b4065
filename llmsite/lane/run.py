"""Running one article's lane (or several at once): its content checks, then its tests in one pytest run.

1. The content checks of ``llmsite check``, narrowed to the article's file; a problem stops the lane there, as it
   would stop the build (``文件:行: 问题`` and how to fix it).
2. pytest on the files ``select.tests_for`` chose, with ``--article <slug>`` so that ``tests/conftest.py`` keeps
   only the article's tests and pages. The strict build those tests share is the suite's (``built_site``): warm
   from ``.cache/``, it only re-renders pages; from an empty cache it computes only the articles' own figures,
   answers, labs and models (``LLM_SITE_ONLY``, ``features/stale.py``). At the end every failure is listed as
   ``文件:行`` with its message and the command that reruns that test alone.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

from llmsite.content.articles import load_site
from llmsite.lane import report, select
from llmsite.lane.graph import SiteGraph
from llmsite.paths import ROOT, rel


def content_problems(graph: SiteGraph, slugs: list[str]) -> list[str]:
    """The content checks' problems located in the articles' files (the whole site is read, as ``llmsite check``
    does: links and the route need it)."""
    files = {rel(graph.articles[slug].source, graph.root) for slug in slugs}
    site = load_site(root=graph.root)
    return [str(p) for p in sorted(set(site.problems)) if p.path in files]


def chosen_tests(graph: SiteGraph, slugs: list[str], also: list[Path] | None = None) -> list[select.Chosen]:
    """The lanes' test files, then ``also`` (the own tests of changed modules, ``changes.own_tests``) if not chosen."""
    seen: dict[Path, select.Chosen] = {}
    for slug in slugs:
        for chosen in select.tests_for(graph, slug):
            seen.setdefault(chosen.path, chosen)
    for path in also or []:
        seen.setdefault(path, select.Chosen(path, "改动的模块自己的测试"))
    return list(seen.values())


def pytest_command(graph: SiteGraph, slugs: list[str], files: list[Path], workers: str | None,
                   extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "llmsite.lane.report", "--tb=short"]
    cmd += [f"--article={slug}" for slug in slugs]
    if workers is not None:
        cmd += ["-n", workers]
    return cmd + extra + [rel(path, graph.root) for path in files]


def describe_failures(failures: list[dict], slugs: list[str]) -> list[str]:
    """The failures as the build reports problems: ``文件:行: 测试`` and its message, then what to do."""
    if not failures:
        return []
    lines = ["", f"车道 {'、'.join(slugs)} 有 {len(failures)} 项失败："]
    for failure in failures:
        stage = {"setup": "（准备时）", "teardown": "（收尾时）"}.get(failure["when"], "")
        message = "\n    ".join(_shorten(failure["message"]))
        lines.append(f"{failure['file']}:{failure['line']}: {failure['nodeid']}{stage}\n    {message}\n"
                     f"    改好以后只重跑这一项：{_rerun(slugs, failure['nodeid'])}")
    return lines


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _shorten(message: str, head: int = 3, tail: int = 5) -> list[str]:
    """A failure's message without terminal colours; a long one as its first and last lines (a subprocess's output
    ends with the error)."""
    lines = [line.rstrip() for line in _ANSI.sub("", message).strip().splitlines() if line.strip()]
    if len(lines) <= head + tail + 1:
        return lines
    return [*lines[:head], f"……（省略 {len(lines) - head - tail} 行，完整的输出在上面）", *lines[-tail:]]


def _python() -> str:
    """The interpreter, as the contributor would type it (``.venv/bin/python`` inside the repository)."""
    exe = Path(sys.executable)
    return exe.relative_to(ROOT).as_posix() if exe.is_relative_to(ROOT) else "python"


def _rerun(slugs: list[str], nodeid: str) -> str:
    articles = " ".join(f"--article={slug}" for slug in slugs)
    return f"{_python()} -m pytest -n 0 -p no:cacheprovider {articles} {shlex.quote(nodeid)}"


def run(graph: SiteGraph, slugs: list[str], workers: str | None = None, extra: list[str] | None = None,
        out: TextIO | None = None, also: list[Path] | None = None) -> int:
    """Run the lanes of ``slugs`` together, and the test files ``also``; print the selection, the failures and the
    times. Returns the exit status (0 when everything passed)."""
    out = out or sys.stdout
    names = "、".join(slugs)
    started = time.perf_counter()
    problems = content_problems(graph, slugs)
    checked = time.perf_counter() - started
    for line in problems:
        print(line, file=out)
    if problems:
        print(f"\n车道 {names}：内容检查发现 {len(problems)} 个问题（{checked:.1f} s），请按上面的修改建议处理；"
              "构建也会因为它们停下，所以测试没有运行。", file=out, flush=True)
        return 1
    print(f"内容检查通过（{checked:.1f} s）", file=out)
    chosen = chosen_tests(graph, slugs, also)
    print(f"车道 {names} 运行这些测试文件（由文章的依赖选出）：", file=out)
    for item in chosen:
        print(f"  {rel(item.path, graph.root)}  ← {item.why}", file=out)
    out.flush()
    with tempfile.TemporaryDirectory(prefix="llm-lane-") as tmp:
        target = Path(tmp) / "report.json"
        cmd = pytest_command(graph, slugs, [c.path for c in chosen], workers, list(extra or []))
        env = {**os.environ, report.ENV: str(target)}
        tests_started = time.perf_counter()
        status = _stream(cmd, graph.root, env, out)
        tested = time.perf_counter() - tests_started
        outcome = json.loads(target.read_text(encoding="utf-8")) if target.is_file() else None
    total = time.perf_counter() - started
    if outcome is None:
        print(f"\n车道 {names}：pytest 没有运行完（退出码 {status}），见上面的输出。用时 {total:.1f} s", file=out)
        return status or 1
    if outcome.get("build"):
        print("\n严格构建（全套测试共用的那一次）：\n  " + "\n  ".join(outcome["build"]), file=out)
    counts = f"{outcome['passed']} 项通过，{outcome['failed']} 项失败，{outcome['skipped']} 项跳过"
    for line in describe_failures(outcome["failures"], slugs):
        print(line, file=out)
    verdict = "通过" if status == 0 else "没有通过"
    print(f"\n车道 {names} {verdict}：{counts}；用时 {total:.1f} s（内容检查 {checked:.1f} s，测试 {tested:.1f} s）",
          file=out, flush=True)
    return status



def _stream(cmd: list[str], cwd: Path, env: dict[str, str], out: TextIO) -> int:
    """Run ``cmd``, copying its output into ``out`` line by line; its exit status."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            encoding="utf-8", errors="replace")
    assert proc.stdout is not None
    for line in proc.stdout:
        out.write(line)
        out.flush()
    return proc.wait()
