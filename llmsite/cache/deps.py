"""Static import graph of the modules in ``code/``.

A figure depends on its own module and, transitively, on every module of
``code/`` that it imports. Imports of third-party packages are covered by the
library versions in the cache key instead.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import pickle
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TypeVar, cast

from llmsite import atomic
from llmsite.paths import CACHE, CODE, rel

T = TypeVar("T")


def _imported_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _resolve_file(name: str, code_dir: Path) -> Path | None:
    parts = name.split(".")
    base = code_dir.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


_resolve = _resolve_file


@lru_cache(maxsize=512)
def _direct(path: Path, mtime_ns: int, code_dir: Path) -> tuple[Path, ...]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = {p for name in _imported_names(tree) if (p := _resolve(name, code_dir)) is not None}
    found.discard(path)
    return tuple(sorted(found))


def direct_imports(path: Path, code_dir: Path = CODE) -> tuple[Path, ...]:
    """The files of ``code_dir`` that ``path`` (a module, or a test file outside it) imports directly."""
    return _direct(path, path.stat().st_mtime_ns, code_dir.resolve())


def closure(module: Path, code_dir: Path = CODE) -> list[Path]:
    """``module`` and every module of ``code_dir`` it imports, transitively, sorted (stored like
    ``definition_deps``: a warm build parses nothing; asked again within one build, remembered)."""
    root, code = module.resolve(), code_dir.resolve()
    found = per_build(("closure", root), lambda: tuple(_on_disk("closure", ((root, None),), code,
                                                                  lambda: _closure(root, code))), code)
    return list(found)


def _closure(module: Path, code_dir: Path) -> list[Path]:
    seen: set[Path] = set()
    stack = [module.resolve()]
    while stack:
        path = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        stack.extend(_direct(path, path.stat().st_mtime_ns, code_dir.resolve()))
    return sorted(seen)


# --------------------------------------------------------------------------- one snapshot of code/ per build
#
# A build asks for the dependencies of some 150 roots (every figure, answer, lab and artifact). Without a snapshot
# each call lists and stats every file of code/, so that it sees an edit made since the previous call (between two
# rebuilds of ``mkdocs serve``, say). Inside ``build_snapshot()`` the listing, the sizes and mtimes and the content
# digests are taken once, and values derived from the files (an artifact's key, a module's import closure) are
# remembered until the block ends (``per_build``). The keys are the same as without a snapshot: only the listing
# is shared. The snapshot ends with its block: the next build (the next save under serve) takes a new one.


@dataclass
class CodeSnapshot:
    """The Python files of ``code_dir`` as one build sees them, and what the build derived from them."""

    code_dir: Path
    state: tuple[tuple[str, int, int], ...]  # (path, size, mtime) of every file, as ``_tree_state``
    digests: dict[Path, str]  # every file's content digest
    memo: dict[Hashable, object] = field(default_factory=dict)


_ACTIVE: ContextVar[CodeSnapshot | None] = ContextVar("llmsite_code_snapshot", default=None)


def _take(code_dir: Path) -> CodeSnapshot:
    state: list[tuple[str, int, int]] = []
    digests: dict[Path, str] = {}
    for path in code_dir.rglob("*.py"):
        st = path.stat()
        state.append((str(path), st.st_size, st.st_mtime_ns))
        digests[path] = _content_digest(path, st.st_mtime_ns, st.st_size)
    return CodeSnapshot(code_dir, tuple(sorted(state)), digests)


def _snapshot(code_dir: Path) -> CodeSnapshot | None:
    """The snapshot of the build under way, if there is one and it is of ``code_dir``."""
    current = _ACTIVE.get()
    if current is None or (current.code_dir != code_dir and current.code_dir != code_dir.resolve()):
        return None
    return current


@contextlib.contextmanager
def build_snapshot(code_dir: Path = CODE) -> Iterator[CodeSnapshot]:
    """Within the block, ``code_dir`` is listed and digested once (see above); nested blocks share the outer one.

    Use it around one build's planning only: an edit made inside the block is not seen until the next block."""
    code = code_dir.resolve()
    current = _snapshot(code)
    if current is not None:
        yield current
        return
    token = _ACTIVE.set(_take(code))
    try:
        taken = _ACTIVE.get()
        assert taken is not None
        yield taken
        _write_bundle(taken)  # what this build read or computed, in one file for the next build of the same code
    finally:
        _ACTIVE.reset(token)


def per_build(key: Hashable, compute: Callable[[], T], code_dir: Path = CODE) -> T:
    """``compute()``, remembered under ``key`` until the current ``build_snapshot`` of ``code_dir`` ends (not
    remembered when there is none). For values that depend only on the files of ``code_dir`` (and on ``key``)."""
    snap = _snapshot(code_dir)
    if snap is None:
        return compute()
    if key not in snap.memo:
        snap.memo[key] = compute()
    return cast(T, snap.memo[key])


def key_name(path: Path, root: Path, code_dir: Path = CODE) -> str:
    """``paths.rel(path, root)`` for a file named in cache keys, remembered for the build (the same few files of
    code/ are named in the keys of dozens of figures, answers and labs; each ``rel`` resolves both paths)."""
    return per_build(("rel", path, root), lambda: rel(path, root), code_dir)


STYLE_MODULE = "figkit"  # the shared plotting helper: every figure depends on it


# --------------------------------------------------------------------------- definition-level dependencies
#
# A finer key than whole files: what a root (a function, or a lab's whole source) really runs is the set of
# top-level definitions it names, followed through imports and through the names those definitions read,
# plus the top-level statements of every module it touches (they run on import). Each definition is
# compared by its syntax tree without docstrings (``ast.dump`` carries neither comments nor line numbers),
# so a comment, a docstring or an unrelated function edited in a used module changes nothing.

def _is_main_guard(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def _is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _strip_docstrings(tree: ast.AST) -> None:
    """Remove the docstrings of every function and class, in place."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _is_docstring(node.body[0]):
            node.body = node.body[1:] or [ast.Pass()]


def _bound_names(node: ast.AST) -> set[str]:
    """Names a (compound) top-level statement binds, not looking inside function or class bodies."""
    names: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
            if item is node:
                stack.extend(item.decorator_list)
            continue
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
            names.add(item.id)
        elif isinstance(item, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in item.names if a.name != "*")
        stack.extend(ast.iter_child_nodes(item))
    return names


Binding = tuple[str, "str | None"]  # (module, attribute or None for the module itself)


@dataclass(frozen=True)
class Statement:
    """One top-level statement: its normalized syntax tree and the names it reads and imports."""

    dump: str
    bare: frozenset[str]  # names read
    dotted: frozenset[tuple[str, str]]  # ``name.attribute`` read
    imports: tuple[tuple[str, Binding], ...]  # names bound by imports inside it
    stars: tuple[str, ...]  # ``from m import *`` inside it


def _statement(node: ast.AST) -> Statement:
    bare: set[str] = set()
    dotted: set[tuple[str, str]] = set()
    consumed: set[int] = set()
    imports: dict[str, Binding] = {}
    stars: list[str] = []
    names: list[ast.Name] = []
    for item in ast.walk(node):
        if isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name):
            dotted.add((item.value.id, item.attr))
            consumed.add(id(item.value))
        elif isinstance(item, ast.Name):
            names.append(item)
        elif isinstance(item, ast.Import):
            for alias in item.names:
                top = alias.name.split(".")[0]
                imports[alias.asname or top] = (alias.name if alias.asname else top, None)
        elif isinstance(item, ast.ImportFrom) and item.module and item.level == 0 and item.module != "__future__":
            for alias in item.names:
                if alias.name == "*":
                    stars.append(item.module)
                else:
                    imports[alias.asname or alias.name] = (item.module, alias.name)
    bare.update(n.id for n in names if id(n) not in consumed)
    return Statement(ast.dump(node), frozenset(bare), frozenset(dotted), tuple(imports.items()), tuple(stars))


@dataclass(frozen=True)
class ModuleDefs:
    """The top level of one file: the statements binding each name, what runs on import, the imports."""

    path: Path
    defs: dict[str, tuple[Statement, ...]]  # name -> the statements that bind it
    imports: dict[str, Binding]
    stars: tuple[str, ...]
    effects: tuple[Statement, ...]  # top-level statements run for their effect (calls, if/try blocks, ...)


@lru_cache(maxsize=512)
def _module_defs(path: Path, mtime_ns: int) -> ModuleDefs:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    _strip_docstrings(tree)
    defs: dict[str, list[Statement]] = {}
    effects: list[Statement] = []
    imports: dict[str, Binding] = {}
    stars: list[str] = []
    for index, stmt in enumerate(tree.body):
        if (index == 0 and _is_docstring(stmt)) or _is_main_guard(stmt):
            continue
        info = _statement(stmt)
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            imports.update(info.imports)  # module-level imports, also inside if/try blocks
            stars += info.stars
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue  # the imported module's own top level is followed when a name from it is used
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                 ast.Assign, ast.AnnAssign, ast.AugAssign)):
            effects.append(info)
        for name in _bound_names(stmt):
            defs.setdefault(name, []).append(info)
    return ModuleDefs(path, {n: tuple(v) for n, v in defs.items()}, imports, tuple(stars), tuple(effects))


def _module_defs_now(path: Path) -> ModuleDefs:
    return _module_defs(path, path.stat().st_mtime_ns)


@dataclass
class DefinitionDeps:
    """The result of :func:`definition_deps`: for each file of ``code/`` touched, a digest and the names used."""

    digests: dict[Path, str]
    names: dict[Path, list[str]]  # "*" when the whole module is used
    roots: set[tuple[Path, str]]  # every (file, name) reached, for "does X use Y" questions


def _tree_state(code_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """(path, size, mtime) of every Python file under ``code_dir``: changes whenever any of them changes
    (taken once per build inside ``build_snapshot``)."""
    snap = _snapshot(code_dir)
    if snap is not None:
        return snap.state
    return tuple(sorted((str(p), (s := p.stat()).st_size, s.st_mtime_ns) for p in code_dir.rglob("*.py")))


def definition_deps(roots: list[tuple[Path, str | None]], code_dir: Path = CODE) -> DefinitionDeps:
    """What a set of roots uses, definition by definition (see ``_definition_deps``).

    Remembered for the life of the process while no Python file under ``code_dir`` changes (and none of the
    roots, which may lie outside it, such as a lab's source): ``mkdocs serve`` plans every figure and lab on
    each rebuild, and a save that does not touch code then costs a few dozen ``stat`` calls. Within one build
    (``build_snapshot``) the same roots are looked up once (a figure's key and the artifacts it uses both ask).
    """
    return per_build(("definition_deps", tuple(roots)), lambda: _definition_deps_now(roots, code_dir), code_dir)


def _definition_deps_now(roots: list[tuple[Path, str | None]], code_dir: Path) -> DefinitionDeps:
    resolved = tuple((p.resolve(), n) for p, n in roots)
    outside = tuple(sorted({(str(p), p.stat().st_mtime_ns) for p, _ in resolved}))
    return _remembered(resolved, code_dir.resolve(), _tree_state(code_dir.resolve()), outside)


@lru_cache(maxsize=1024)
def _remembered(roots: tuple[tuple[Path, str | None], ...], code_dir: Path, state: object,
                outside: object) -> DefinitionDeps:
    return _stored(roots, code_dir)


# The result on disk, for the next process (a warm build parses no syntax tree): keyed by the content of every
# Python file under code/ and of the roots outside it, and by this module's own source (the algorithm).
_ALGORITHM = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


@lru_cache(maxsize=4096)
def _content_digest(path: Path, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stored(roots: tuple[tuple[Path, str | None], ...], code_dir: Path) -> DefinitionDeps:
    result: DefinitionDeps = _on_disk("definitions", roots, code_dir, lambda: _definition_deps(list(roots), code_dir))
    return result


def _entry(kind: str, roots: tuple[tuple[Path, str | None], ...], code_dir: Path, digests: dict[Path, str]) -> Path:
    """Where the result for ``roots`` is stored, given the digests of ``code_dir``'s files (roots outside it are
    digested here)."""
    files = sorted({*digests, *(p for p, _ in roots)})
    inputs = {
        "kind": kind,
        "algorithm": _ALGORITHM,
        "code_dir": str(code_dir),
        "roots": [[str(p), n] for p, n in roots],
        "files": [[str(f), digests.get(f) or _content_digest(f, (st := f.stat()).st_mtime_ns, st.st_size)]
                  for f in files],
    }
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]
    return CACHE / "deps" / f"{digest}.pickle"


_MISSING = object()


def _load(path: Path) -> object:
    try:
        return pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return _MISSING


def _on_disk(kind: str, roots: tuple[tuple[Path, str | None], ...], code_dir: Path, compute: Callable[[], T]) -> T:
    """``compute()``, or what it returned in an earlier process for the same roots and the same code."""
    snap = _snapshot(code_dir)
    expected = None
    if snap is not None:
        expected = _entry(kind, roots, code_dir, snap.digests)
        bundle = _bundle(snap)
        if expected.name in bundle.entries:
            return cast(T, bundle.entries[expected.name])
        if (found := _load(expected)) is not _MISSING:
            bundle.put(expected.name, found)
            return cast(T, found)
    # No snapshot, or nothing stored: the files as they are now. What is stored under a digest must be what those
    # very contents give, even if a file was edited after the build's snapshot was taken.
    now = {p: _content_digest(p, (st := p.stat()).st_mtime_ns, st.st_size) for p in code_dir.rglob("*.py")}
    path = _entry(kind, roots, code_dir, now)
    if (found := _load(path)) is not _MISSING:
        return cast(T, found)
    result = compute()
    with contextlib.suppress(OSError):  # a read-only cache only costs time
        atomic.write_bytes(path, pickle.dumps(result))
    if snap is not None and path == expected:  # not if a file was edited since the snapshot: the bundle is of it
        _bundle(snap).put(path.name, result)
    return result


# --------------------------------------------------------------------------- one file of entries per code/ state
#
# A warm build reads some ninety entries above, one file each, and unpickling the Path objects in them costs more
# than reading the files. The entries one build used are also written together, under the digest of the whole
# snapshot, with every path stored once: the next build of the same code reads one file. An entry is looked up
# in the bundle by its own file name, which already names everything it depends on, so the bundle can only be
# missing entries, never hold a wrong one; a missing or damaged bundle falls back to the entries' own files.

_BUNDLE_KEY = ("bundle",)


@dataclass
class _Bundle:
    path: Path
    entries: dict[str, object]
    dirty: bool = False

    def put(self, name: str, value: object) -> None:
        self.entries[name] = value
        self.dirty = True


def _bundle_path(snap: CodeSnapshot) -> Path:
    inputs = {"algorithm": _ALGORITHM, "code_dir": str(snap.code_dir),
              "files": sorted([str(p), d] for p, d in snap.digests.items())}
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]
    return CACHE / "deps" / "bundles" / f"{digest}.pickle"


def _bundle(snap: CodeSnapshot) -> _Bundle:
    found = snap.memo.get(_BUNDLE_KEY)
    if not isinstance(found, _Bundle):
        path = _bundle_path(snap)
        loaded = _load(path)
        found = _Bundle(path, dict(loaded) if isinstance(loaded, dict) else {})
        snap.memo[_BUNDLE_KEY] = found
    return found


def _interned(value: object, paths: dict[str, Path]) -> object:
    """``value`` with every equal Path replaced by one object (pickle then stores each path once)."""
    if isinstance(value, Path):
        return paths.setdefault(str(value), value)
    if isinstance(value, DefinitionDeps):
        return DefinitionDeps(cast(dict, _interned(value.digests, paths)), cast(dict, _interned(value.names, paths)),
                              cast(set, _interned(value.roots, paths)))
    if isinstance(value, dict):
        return {_interned(k, paths): _interned(v, paths) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(_interned(v, paths) for v in value)
    return value


def _write_bundle(snap: CodeSnapshot) -> None:
    found = snap.memo.get(_BUNDLE_KEY)
    if not isinstance(found, _Bundle) or not found.dirty:
        return
    paths: dict[str, Path] = {}
    entries = {name: _interned(value, paths) for name, value in sorted(found.entries.items())}
    with contextlib.suppress(OSError):  # a read-only cache only costs time
        atomic.write_bytes(found.path, pickle.dumps(entries))


def _definition_deps(roots: list[tuple[Path, str | None]], code_dir: Path = CODE) -> DefinitionDeps:
    """What a set of roots uses, definition by definition.

    A root is ``(file, name)`` (a top-level name of that file) or ``(file, None)`` (the whole file: every
    statement of it, as for a lab's source). Names are followed through ``from m import x``, ``import m``
    with ``m.x``, star imports and imports inside functions; modules outside ``code_dir`` are libraries
    and are not followed (their versions are part of every key).
    """
    code_dir = code_dir.resolve()
    used: dict[Path, set[str]] = {}
    whole: set[Path] = set()
    seen: set[tuple[Path, str | None]] = set()
    stack = [(p.resolve(), n) for p, n in roots]
    # Within one call, each module name is looked up and each file read (from the cache) once.
    _resolve = lru_cache(maxsize=None)(lambda name, where: _resolve_file(name, where))
    module_defs = lru_cache(maxsize=None)(_module_defs_now)

    def resolve_import(binding: Binding) -> None:
        module, attr = binding
        if attr is not None and (sub := _resolve(f"{module}.{attr}", code_dir)) is not None:
            stack.append((sub, None))  # ``from package import submodule``
            return
        target = _resolve(module, code_dir)
        if target is not None:
            stack.append((target, attr))

    def follow(mod: ModuleDefs, stmt: Statement) -> None:
        local = dict(stmt.imports)
        bare = set(stmt.bare)
        for name, attr in stmt.dotted:
            binding = local.get(name) or (None if name in mod.defs else mod.imports.get(name))
            if binding is not None and binding[1] is None:
                target = _resolve(binding[0], code_dir)
                if target is not None:
                    stack.append((target, attr))
                    continue
            bare.add(name)
        for name in bare | set(local):
            if name in local:
                resolve_import(local[name])
            else:
                stack.append((mod.path, name))
        for star in stmt.stars:
            if (target := _resolve(star, code_dir)) is not None:
                stack.append((target, None))

    while stack:
        path, name = stack.pop()
        if (path, name) in seen:
            continue
        seen.add((path, name))
        mod = module_defs(path)
        if path not in used:  # first visit: the module's top-level statements run on import
            used[path] = set()
            for effect in mod.effects:
                follow(mod, effect)
        if name is None:
            whole.add(path)
            for stmts in mod.defs.values():
                for stmt in stmts:
                    follow(mod, stmt)
            for star in mod.stars:
                if (target := _resolve(star, code_dir)) is not None:
                    stack.append((target, None))
        elif name in mod.defs:
            used[path].add(name)
            for stmt in mod.defs[name]:
                follow(mod, stmt)
        elif name in mod.imports:
            resolve_import(mod.imports[name])
        else:
            for star in mod.stars:
                if (target := _resolve(star, code_dir)) is not None:
                    stack.append((target, name))
            # otherwise a builtin, a library name or a typo: nothing in code/ to follow

    digests: dict[Path, str] = {}
    names: dict[Path, list[str]] = {}
    for path in sorted(used):
        mod = module_defs(path)
        chosen = sorted(mod.defs) if path in whole else sorted(used[path])
        blob = json.dumps(
            {"defs": {n: [s.dump for s in mod.defs[n]] for n in chosen}, "effects": [s.dump for s in mod.effects]},
            ensure_ascii=False,
        )
        digests[path] = hashlib.sha256(blob.encode()).hexdigest()
        names[path] = ["*"] if path in whole else chosen
    reached = {(p, n) for p, n in seen if n is not None}
    return DefinitionDeps(digests, names, reached)
