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


STYLE_MODULE = "figkit"  # the shared plotting helper: every figure depends on it


def _top_level(tree: ast.Module) -> tuple[dict[str, str], dict[str, ast.AST]]:
    """(imported name -> module name, defined name -> node) at module level."""
    imported: dict[str, str] = {}
    defined: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                imported[(alias.asname or alias.name).split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                imported[alias.asname or alias.name] = node.module
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defined[name.id] = node
    return imported, defined


def function_deps(module: Path, function: str, code_dir: Path = CODE) -> list[Path]:
    """Files of ``code_dir`` that one function of ``module`` really uses.

    Follows the names the function reads (and, transitively, the module-level
    helpers and constants it reads) to their imports; each imported module then
    brings its own import closure. The declaring module itself and the shared
    style module are always included.
    """
    tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
    imported, defined = _top_level(tree)
    if function not in defined:
        raise KeyError(f"{module}: no top-level function {function}")
    used_modules: set[str] = {STYLE_MODULE}
    seen: set[str] = set()
    stack = [function]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in ast.walk(defined[name]):
            if isinstance(node, ast.Name):
                if node.id in imported:
                    used_modules.add(imported[node.id])
                elif node.id in defined and node.id not in seen:
                    stack.append(node.id)
    files = {module.resolve()}
    for mod in used_modules:
        path = _resolve(mod, code_dir)
        if path is not None:
            files.update(closure(path, code_dir))
    return sorted(files)
