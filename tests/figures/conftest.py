"""Fixtures for the figure pipeline: throwaway copies of the repository."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


@dataclass
class Repo:
    root: Path

    @property
    def cache(self) -> Path:
        return self.root / ".cache" / "figures"

    def run(self, *args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
        full_env = {k: v for k, v in os.environ.items() if k != "LLM_SITE_CACHE"}
        full_env.update(env or {})
        proc = subprocess.run(
            [sys.executable, "-m", "llmsite", "figures", *args],
            cwd=self.root, capture_output=True, text=True, env=full_env, timeout=300,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"python -m llmsite figures failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def outputs(self) -> dict[str, bytes]:
        """Every cached figure file by '<name>/<file>' (key directory left out)."""
        return {
            f"{p.parent.parent.name}/{p.name}": p.read_bytes()
            for p in sorted(self.cache.glob("*/*/*.svg"))
        }


def make_repo(dest: Path) -> Repo:
    for part in ("code", "llmsite", "data"):
        shutil.copytree(ROOT / part, dest / part, ignore=IGNORE)
    return Repo(dest)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "repo")


@pytest.fixture(scope="module")
def built_repo(tmp_path_factory, clean_build) -> Repo:
    """A copy whose figure cache is the one the run's second build filled from empty (``clean_build``: every
    figure drawn cold, by ``python -m llmsite figures`` from the same code), shared by a module's tests. Drawing
    them all cold once more here would check nothing that build did not."""
    repo = make_repo(tmp_path_factory.mktemp("built") / "repo")
    shutil.copytree(clean_build.cache / "figures", repo.cache)
    # the exercise answers the same step computed (llmsite/figures/answers.py): a warm run reads them too
    if (clean_build.cache / "answers").is_dir():
        shutil.copytree(clean_build.cache / "answers", repo.root / ".cache" / "answers")
    return repo


def status_lines(output: str) -> dict[str, str]:
    """{figure name: '生成' | '缓存'} from the script's per-figure lines."""
    out = {}
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("[生成]") or line.startswith("[缓存]"):
            parts = line.split()
            out[parts[1]] = parts[0].strip("[]")
    return out


def edit_definition(path: Path, name: str) -> None:
    """Change what the top-level function ``name`` of ``path`` does: one statement more at the top of its body."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    node = next(n for n in ast.parse("".join(lines)).body if isinstance(n, ast.FunctionDef) and n.name == name)
    first = node.body[0]
    lines.insert(first.lineno - 1, " " * first.col_offset + "_edited = 0\n")
    path.write_text("".join(lines), encoding="utf-8")


def declared_names(repo: Repo) -> dict[str, dict[str, list[str]]]:
    """{figure name: {file: [definitions used]}} as reported by --list."""
    out: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in repo.run("--list").stdout.splitlines():
        if line.startswith("      ") and "：" in line:
            assert current is not None
            path, names = line.strip().split("：", 1)
            out.setdefault(current, {})[path] = [n.strip() for n in names.split(",")]
        elif line and not line.startswith(" "):
            current = line.split()[0]
    return out


def declared(repo: Repo) -> dict[str, list[str]]:
    """{figure name: [dependency paths]} as reported by --list."""
    out: dict[str, list[str]] = {}
    current = None
    for line in repo.run("--list").stdout.splitlines():
        if line.startswith("    依赖："):
            assert current is not None
            out[current] = [d.strip() for d in line.split("：", 1)[1].split(",")]
        elif line and not line.startswith(" "):
            current = line.split()[0]
    return out

