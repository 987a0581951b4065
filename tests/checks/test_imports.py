"""The build package keeps the shape ARCHITECTURE.md draws: no import circles, no upward imports.

Every import counts, wherever it is written: at the top of a module, inside a function (an import put there to
dodge a circle is still one) and under ``if TYPE_CHECKING:`` (a reader follows it just the same). The graph is read
from the syntax trees, nothing is imported. ``from a.b import c`` is an edge to ``a.b.c`` when that is a module,
else to ``a.b``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "llmsite"

ARCHITECTURE = ROOT / "ARCHITECTURE.md"
SECTION = "## 分层"
FLOOR_LINE = re.compile(r"^(?P<number>\d+)\. (?P<names>.*`.*)$")


def floors(text: str) -> tuple[tuple[str, ...], ...]:
    """The floors ARCHITECTURE.md lists in 「分层」, top first: ``1. `mkdocs/`、`cli/` ……``, one line a floor, by the
    first name under llmsite/ (``"__init__"``: llmsite/__init__.py itself). A module imports its own floor or lower
    ones, never a higher one."""
    if SECTION not in text:
        return ()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    out = []
    for line in section.splitlines():
        if m := FLOOR_LINE.match(line):
            assert int(m.group("number")) == len(out) + 1, line
            names = re.findall(r"`([^`]+)`", m.group("names"))
            out.append(tuple("__init__" if n == "llmsite/__init__.py" else n.removesuffix("/").removesuffix(".py")
                             for n in names))
    return tuple(out)


FLOORS = floors(ARCHITECTURE.read_text(encoding="utf-8"))

# Known exception, to be removed once it is gone: the content checks' modules name ``Document`` (defined in
# llmsite/content/checks/__init__.py, which runs them) for their type hints only. Moving ``Document`` into a module
# of its own (checks/document.py) would end it. An entry here that is no longer needed fails the test below.
TYPE_ONLY_FROM_OWN_PACKAGE = frozenset({"llmsite.content.checks"})


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    type_only: bool  # written under ``if TYPE_CHECKING:``


def modules(package: Path) -> dict[str, Path]:
    """{dotted name: file} of every module of ``package`` (a package is named by its ``__init__.py``)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.Import | ast.ImportFrom, name: str, is_package: bool, known: dict[str, Path]) -> list[str]:
    def owner(dotted: str) -> str | None:  # the longest known module that ``dotted`` names or lies in
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    if isinstance(node, ast.Import):
        found = [owner(alias.name) for alias in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the package that holds this module
            parts = name.split(".") if is_package else name.split(".")[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        found = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else owner(base) for alias in node.names]
    return sorted({f for f in found if f is not None and f != name})


def import_graph(package: Path) -> list[Edge]:
    """Every import of one module of ``package`` by another, with its line."""
    known = modules(package)
    edges: list[Edge] = []
    for name, path in known.items():
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, type_only: bool, name: str = name, is_package: bool = is_package) -> None:
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _imported(node, name, is_package, known):
                    edges.append(Edge(name, target, node.lineno, type_only))
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for child in node.body:
                    visit(child, True)
                for child in node.orelse:
                    visit(child, type_only)
                return
            for child in ast.iter_child_nodes(node):
                visit(child, type_only)

        visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return edges


def _excepted(edge: Edge, exceptions: frozenset[str]) -> bool:
    return edge.type_only and edge.target in exceptions and edge.source.startswith(edge.target + ".")


def cycles(edges: list[Edge], exceptions: frozenset[str] = frozenset()) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a longer circle (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.target, set())
        if not _excepted(edge, exceptions):
            graph.setdefault(edge.source, set()).add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def floor_of(module: str, listed: tuple[tuple[str, ...], ...] = FLOORS) -> int | None:
    """1 for the top floor; None when the module's part is on no floor."""
    parts = module.split(".")
    part = parts[1] if len(parts) > 1 else "__init__"
    return next((i for i, names in enumerate(listed, 1) if part in names), None)


def upward(edges: list[Edge], listed: tuple[tuple[str, ...], ...] = FLOORS) -> list[str]:
    out = []
    for e in edges:
        a, b = floor_of(e.source, listed), floor_of(e.target, listed)
        if a is not None and b is not None and b < a:
            out.append(f"{e.source}（第 {a} 层）第 {e.line} 行导入了上一层的 {e.target}（第 {b} 层）")
    return out


# ------------------------------------------------------------------------------------------------ the package


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return import_graph(PACKAGE)


def test_no_module_of_llmsite_imports_one_that_imports_it_back(edges: list[Edge]) -> None:
    assert cycles(edges, TYPE_ONLY_FROM_OWN_PACKAGE) == []


def test_the_known_exception_is_still_needed_and_only_for_type_hints(edges: list[Edge]) -> None:
    for package in TYPE_ONLY_FROM_OWN_PACKAGE:
        inward = [e for e in edges if e.target == package and e.source.startswith(package + ".")]
        assert inward, f"{package} 的模块不再从包本身导入：把它从 TYPE_ONLY_FROM_OWN_PACKAGE 删掉"
        assert all(e.type_only for e in inward), [e for e in inward if not e.type_only]


def test_every_part_of_llmsite_is_on_one_floor_of_architecture_md() -> None:
    assert len(FLOORS) >= 3, f"ARCHITECTURE.md 的「分层」里应有编号的层：{FLOORS}"
    listed = [name for names in FLOORS for name in names]
    assert len(listed) == len(set(listed)), f"有的部分写在了两层里：{listed}"
    unplaced = sorted({m for m in modules(PACKAGE) if floor_of(m) is None})
    assert unplaced == [], f"在 ARCHITECTURE.md 的「分层」里给这些模块所在的部分定一层：{unplaced}"
    parts = {m.split(".")[1] if "." in m else "__init__" for m in modules(PACKAGE)}
    assert sorted(set(listed) - parts) == [], "「分层」里写了 llmsite/ 里没有的部分"


def test_no_module_of_llmsite_imports_a_higher_floor(edges: list[Edge]) -> None:
    assert upward(edges) == []


# The builder-independent parts (ARCHITECTURE.md: "不导入 MkDocs"); the plugin options' schema is one of them
# (options.py), so the Zensical adapter takes nothing from the MkDocs one.
NO_BUILDER = ("features", "content", "figures", "exercises", "labs", "playground", "artifacts", "extension", "cache",
              "csp", "lane", "options")


def _external_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    found |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    return found


def test_the_builder_independent_parts_import_no_builder() -> None:
    for name, path in modules(PACKAGE).items():
        if name.split(".")[1:2] and name.split(".")[1] in NO_BUILDER:
            builders = _external_imports(path) & {"mkdocs", "material", "properdocs", "zensical"}
            assert not builders, f"{path.relative_to(ROOT)} 导入了 {sorted(builders)}"


def test_the_two_adapters_stand_side_by_side(edges: list[Edge]) -> None:
    across = [e for e in edges if e.source.startswith("llmsite.mkdocs") and e.target.startswith("llmsite.zensical")]
    assert across == [], "MkDocs 的适配层不导入 Zensical 的"
    taken = {e.target for e in edges
             if e.source.startswith("llmsite.zensical") and e.target.startswith("llmsite.mkdocs")}
    assert taken == set(), f"Zensical 的适配层不导入 MkDocs 的，现在拿了 {sorted(taken)}"


def test_the_zensical_build_reaches_no_mkdocs(edges: list[Edge]) -> None:
    """Material and MkDocs 1.x reach their end: the Zensical adapter and every module of llmsite it reaches (function
    level imports included) import none of MkDocs, Material or ProperDocs, so it builds without them installed."""
    found = modules(PACKAGE)
    reached = {name for name in found if name.startswith("llmsite.zensical")}
    todo = list(reached)
    while todo:
        source = todo.pop()
        for edge in edges:
            if edge.source == source and edge.target not in reached:
                reached.add(edge.target)
                todo.append(edge.target)
    assert "llmsite.extension" in reached and "llmsite.features.figures" in reached, "the walk follows the imports"
    for name in sorted(reached):
        builders = _external_imports(found[name]) & {"mkdocs", "material", "properdocs"}
        assert not builders, f"{found[name].relative_to(ROOT)}（Zensical 构建用到）导入了 {sorted(builders)}"


# ------------------------------------------------------------------------------------------------ the reader itself


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path / "pkg"


def test_a_circle_through_a_function_level_or_type_only_import_is_found(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from pkg import b\n",
        "b.py": "def f():\n    from pkg.a import x\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import Y\n",
        "d.py": "import pkg.c\n",
        "e.py": "from . import a\n",
    })
    edges = import_graph(package)
    assert cycles(edges) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]
    assert [e.type_only for e in edges if e.source == "pkg.c"] == [True]
    assert [(e.source, e.target) for e in edges if e.source == "pkg.e"] == [("pkg.e", "pkg.a")]


def test_the_exception_covers_only_a_type_only_import_of_the_own_package(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "__init__.py": "from pkg import part, runtime\n",
        "part.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import Thing\n",
        "runtime.py": "from pkg import Thing\n",
    })
    edges = import_graph(package)
    assert cycles(edges) == [["pkg", "pkg.part", "pkg.runtime"]]
    assert cycles(edges, frozenset({"pkg"})) == [["pkg", "pkg.runtime"]]


def test_floors_are_read_from_the_section_and_an_upward_import_is_named(tmp_path: Path) -> None:
    text = "# x\n\n## 分层\n\n1. `top/`、`__main__.py`\n2. `low.py`、`llmsite/__init__.py`\n\n## 别的\n\n1. `no/`\n"
    listed = floors(text)
    assert listed == (("top", "__main__"), ("low", "__init__"))
    package = _package(tmp_path, {
        "__init__.py": "",
        "low.py": "def f():\n    from pkg.top import x\n",
        "top/__init__.py": "from pkg import low\n",
    })
    found = upward(import_graph(package), listed)
    assert len(found) == 1 and "pkg.low（第 2 层）第 2 行" in found[0] and "pkg.top（第 1 层）" in found[0]
    assert floors("# 没有分层\n") == ()
