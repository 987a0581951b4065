"""Throwaway copies of the repository for the exercise tests (the answers pipeline, the content checks)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.ipynb")


@dataclass
class Copy:
    root: Path

    @property
    def answers(self) -> Path:
        return self.root / ".cache" / "answers"

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "LLM_SITE_CACHE"}
        env["NO_MKDOCS_2_WARNING"] = "1"
        return env

    def llmsite(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([sys.executable, "-m", "llmsite", *args], cwd=self.root, capture_output=True,
                              text=True, encoding="utf-8", env=self.env(), timeout=300)
        if check and proc.returncode != 0:
            raise AssertionError(f"python -m llmsite {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc


def make_copy(dest: Path, parts: tuple[str, ...] = ("code", "llmsite", "data")) -> Copy:
    for part in parts:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=IGNORE)
        else:
            shutil.copy2(src, dest / part)
    return Copy(dest)


@pytest.fixture
def code_copy(tmp_path: Path) -> Copy:
    """code/, llmsite/ and data/: enough for ``python -m llmsite figures``."""
    return make_copy(tmp_path / "repo")


@pytest.fixture
def site_copy(tmp_path: Path) -> Copy:
    """Enough for ``python -m llmsite check`` (and, with a cache, ``mkdocs build``)."""
    return make_copy(tmp_path / "repo", ("code", "llmsite", "data", "docs", "labs", "scripts", "overrides",
                                         "mkdocs.yml"))
