"""Well-known locations of the repository."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CODE = ROOT / "code"
DATA = ROOT / "data"
CACHE = Path(os.environ.get("LLM_SITE_CACHE", ROOT / ".cache"))


def rel(path: Path, root: Path = ROOT) -> str:
    """Path relative to the repository root (or another ``root``), for messages."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
