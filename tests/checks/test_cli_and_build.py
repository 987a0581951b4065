"""The command line (exit status, no writes, no heavy imports) and the MkDocs build running the same checks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ARTICLE, META, ROOT, Repo

CHECK = ["-m", "llmsite", "check"]


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *CHECK, "--root", str(root), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def test_exit_status_and_no_file_is_modified(repo: Repo) -> None:
    before = repo.snapshot()
    ok = _run(repo.root)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    n_articles = len([p for p in (repo.root / "docs" / "articles").glob("*.md") if p.name != "index.md"])
    assert ok.stdout.startswith(f"检查通过：{n_articles} 篇文章，0 个问题")
    assert repo.snapshot() == before

    repo.article(meta=META.replace("author: guohua", "author: nobody"), body="用PyTorch写。\n")
    before = repo.snapshot()
    bad = _run(repo.root)
    assert bad.returncode == 1
    assert f"{ARTICLE}:4: 未知作者 nobody" in bad.stdout
    assert f"{ARTICLE}:11: 排版规则 A" in bad.stdout
    assert "修改建议：" in bad.stdout
    assert repo.snapshot() == before, "the checker must not modify, create or delete files"


def test_runs_without_heavy_imports() -> None:
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['llmsite', 'check', '--root', {str(ROOT)!r}]\n"
        "try:\n"
        "    runpy.run_module('llmsite', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in ('torch', 'matplotlib', 'numpy', 'mkdocs') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "HEAVY []" in proc.stdout, proc.stdout + proc.stderr


def test_bad_arguments() -> None:
    proc = subprocess.run(
        [sys.executable, *CHECK, "--root", "/nonexistent-root"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2


@pytest.mark.slow
def test_mkdocs_build_stops_on_the_same_problems(repo: Repo) -> None:
    for folder in ("llmsite", "overrides"):
        shutil.copytree(ROOT / folder, repo.root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (repo.root / "node_modules").symlink_to(ROOT / "node_modules")
    repo.article(meta=META.replace("date: 2026-11-25", "date: 2026-13-45"), body="用PyTorch写。\n")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LLM_SITE_CACHE": str(repo.root / ".cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(repo.root / "site")],
        cwd=repo.root,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=600,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert f"{ARTICLE}:5: date 不是日期" in output, output
    assert f"{ARTICLE}:11: 排版规则 A" in output, output
