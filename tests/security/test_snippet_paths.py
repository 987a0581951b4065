"""Snippet includes may only read the repository's code/, labs/ and data/ (never other files of the machine).

pymdownx refuses paths outside its base path too, but with a Python traceback; the content
checks must name the file, the line and the fix first — in ``check_content.py`` and in the build.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.checks.conftest import ARTICLE, ROOT, Repo

BAD_TARGETS = {
    "absolute": "/etc/hostname",
    "parent-dirs": "../../../../etc/hostname",
    "parent-inside-path": "code/../../../etc/hostname",
    "outside-allowed-dirs": "mkdocs.yml",
    "windows-drive": "C:/Windows/win.ini",
    "url": "https://example.org/x.py",
}


@pytest.mark.parametrize("name", sorted(BAD_TARGETS))
def test_include_outside_the_repository_is_a_clear_problem(repo: Repo, name: str) -> None:
    line = repo.append(f'```text\n--8<-- "{BAD_TARGETS[name]}"\n```')
    result = repo.check()
    assert result.code == 1
    hits = [r for r in result.out.splitlines() if r.startswith(f"{ARTICLE}:{line + 1}: ")]
    assert hits and "代码片段" in hits[0], result.out
    assert "Traceback" not in result.out


def test_symlink_leaving_the_repository_is_refused(repo: Repo) -> None:
    (repo.root / "code" / "leak.py").symlink_to("/etc/hostname")
    line = repo.append('```text\n--8<-- "code/leak.py"\n```')
    result = repo.check()
    assert result.code == 1
    assert f"{ARTICLE}:{line + 1}: 代码片段的路径指向仓库之外" in result.out, result.out


def test_block_form_is_reported(repo: Repo) -> None:
    line = repo.append('--8<--\n/etc/hostname\n--8<--')
    result = repo.check()
    assert result.code == 1
    assert f"{ARTICLE}:{line}: 只支持单行的代码片段写法" in result.out, result.out


def test_other_pages_are_checked_too(repo: Repo) -> None:
    about = repo.read("docs/about.md")
    repo.write("docs/about.md", about + '\n--8<-- "/etc/hostname"\n')
    result = repo.check()
    assert result.code == 1
    assert f"docs/about.md:{about.count(chr(10)) + 2}: 代码片段的路径必须是仓库内的相对路径" in result.out, result.out


@pytest.mark.slow
def test_build_stops_with_file_and_line_and_no_traceback(repo: Repo) -> None:
    import shutil

    for folder in ("llmsite", "overrides"):
        shutil.copytree(ROOT / folder, repo.root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    line = repo.append('```text\n--8<-- "../../../../etc/hostname"\n```')
    before = repo.snapshot()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LLM_SITE_CACHE": str(repo.root.parent / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(repo.root.parent / "site")],
        cwd=repo.root, env=env, capture_output=True, text=True, encoding="utf-8", timeout=600, check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"{ARTICLE}:{line + 1}: 代码片段的路径不能用 .. 跳出仓库" in output, output
    assert "Traceback" not in output, output
    assert repo.snapshot() == before
