"""Static import graph of the modules in ``code/``.

A figure depends on its own module and, transitively, on every module of
``code/`` that it imports. Imports of third-party packages are covered by the
library versions in the cache key instead.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from ..paths import CODE


def _imported_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _resolve(name: str, code_dir: Path) -> Path | None:
    parts = name.split(".")
    base = code_dir.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=512)
def _direct(path: Path, mtime_ns: int, code_dir: Path) -> tuple[Path, ...]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = {p for name in _imported_names(tree) if (p := _resolve(name, code_dir)) is not None}
    found.discard(path)
    return tuple(sorted(found))


def closure(module: Path, code_dir: Path = CODE) -> list[Path]:
    """``module`` and every module of ``code_dir`` it imports, transitively, sorted."""
    seen: set[Path] = set()
    stack = [module.resolve()]
    while stack:
        path = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        stack.extend(_direct(path, path.stat().st_mtime_ns, code_dir.resolve()))
    return sorted(seen)
