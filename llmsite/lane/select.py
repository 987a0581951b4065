"""Which test files an article's lane runs, and why.

The lane runs the kinds of checks listed in ``KINDS``, each in the test files the whole suite runs them in (no
second copy of any check). Which of those files concern an article is read from the files and the article's graph
(``graph.py``), never from a list of articles:

- ``module``: ``tests/code/test_<m>.py`` (or ``test_<m>_<more>.py``) for each module ``code/<m>.py`` the article
  includes or that trains one of its playground models; a file named after no module belongs to the modules it
  imports, when the article includes all of them;
- ``names``: the file's string literals name the article (its page, its file, its figures, answers or labs:
  ``SiteGraph.owners``), as every claims test names ``docs/articles/<slug>.md``;
- ``every``: the file checks every page of the site (axe, CSP); the lane narrows it to the article's pages
  (``tests/conftest.py``: ``--article`` and ``lane_pages``);
- ``labs``: the file checks every lab; the article's lane runs it when the route gives the article labs.

Inside a chosen file, ``tests/conftest.py`` leaves out the tests that name only other articles (a parameter such
as a lab's name, or a string literal in the test's body).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from llmsite.cache.deps import direct_imports
from llmsite.lane.graph import Article, SiteGraph
from llmsite.paths import rel


@dataclass(frozen=True)
class Kind:
    what: str  # said in the lane's listing
    patterns: tuple[str, ...]  # test files, relative to the repository
    rule: str  # "module", "names", "every" or "labs"


KINDS = (
    Kind("配套代码的测试", ("tests/code/test_*.py",), "module"),
    Kind("文中数字的论断", ("tests/figures/test_*_claims.py",), "names"),
    Kind("每个数字都有论断或写明的豁免", ("tests/figures/test_claims_coverage.py",), "every"),
    Kind("可操作的图的数据", ("tests/figures/test_*_interactive.py",), "names"),
    Kind("练习答案的重新计算", ("tests/exercises/test_*answers.py",), "names"),
    Kind("每个练习答案都有独立的重新计算", ("tests/exercises/test_answers.py",), "every"),
    Kind("练习的组成", ("tests/exercises/test_every_code_article.py",), "every"),
    Kind("页面：axe（浅色、深色，375 px、1280 px）", ("tests/browser/test_accessibility.py",), "every"),
    Kind("页面：练习", ("tests/browser/test_exercises.py",), "names"),
    Kind("页面：每道练习的对错", ("tests/browser/test_every_exercise.py",), "every"),
    Kind("页面：可操作的图", ("tests/browser/test_*interactive*.py",), "names"),
    Kind("页面：每张可操作的图都能动", ("tests/browser/test_every_explorable_figure.py",), "every"),
    Kind("页面：模型演示", ("tests/browser/test_*playground*.py", "tests/playground/test_*.py"), "names"),
    Kind("页面：内容安全策略（CSP）", ("tests/security/test_csp.py",), "every"),
    Kind("动手实验：页面、下载、在空文件夹里运行",
         ("tests/labs/test_real_labs.py", "tests/labs/test_lab_browser.py", "tests/labs/test_lab_pages.py"), "labs"),
)


@dataclass(frozen=True)
class Chosen:
    path: Path
    why: str


@lru_cache(maxsize=512)
def _strings(path: Path, mtime_ns: int) -> tuple[str, ...]:
    """Every string literal of a Python file (the constant parts of f-strings included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return tuple(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def strings(path: Path) -> tuple[str, ...]:
    return _strings(path, path.stat().st_mtime_ns)


def module_of(test: Path, code: Path) -> Path | None:
    """The module of ``code/`` a ``tests/code/test_<m>[_more].py`` file is named after (the longest such name)."""
    rest = test.stem.removeprefix("test_")
    names = sorted((p.stem for p in code.glob("*.py")), key=len, reverse=True)
    for name in names:
        if rest == name or rest.startswith(name + "_"):
            return (code / f"{name}.py").resolve()
    return None


def _files(root: Path, kind: Kind) -> Iterator[Path]:
    seen: set[Path] = set()
    for pattern in kind.patterns:
        for path in sorted(root.glob(pattern)):
            if path not in seen:
                seen.add(path)
                yield path


def _why_module(test: Path, art: Article, graph: SiteGraph) -> str | None:
    code = (graph.root / "code").resolve()
    included = set(art.included_modules)
    owner = module_of(test, code)
    if owner is not None:
        if owner in included:
            where = f"{rel(art.source, graph.root)}:{art.include_lines[owner]}"
            return f"测试 {rel(owner, graph.root)}（文章引用它，{where}）"
        if owner in art.model_modules:
            return f"测试 {rel(owner, graph.root)}（它训练文章的模型演示 {'、'.join(art.model_modules[owner])}）"
        return None
    imported = frozenset(p.resolve() for p in direct_imports(test, code))
    if imported and imported <= included:
        names = "、".join(sorted(rel(p, graph.root) for p in imported))
        return f"只测文章引用的模块：{names}"
    return None


def tests_for(graph: SiteGraph, slug: str) -> list[Chosen]:
    """The test files of the article's lane, each with the reason it was chosen, in ``KINDS`` order."""
    art = graph.articles[slug]
    chosen: dict[Path, Chosen] = {}
    for kind in KINDS:
        for path in _files(graph.root, kind):
            why: str | None = None
            if kind.rule == "module":
                why = _why_module(path, art, graph)
            elif kind.rule == "names":
                if slug in graph.owners(strings(path)):
                    why = "文件里写到了这篇文章（页面、文件、图、答案或实验的名字）"
            elif kind.rule == "every":
                why = "这个文件检查全站的每一页（或每一篇），车道里只留下这篇文章的"
            elif kind.rule == "labs":
                if art.labs:
                    why = f"文章的实验：{'、'.join(art.labs)}"
            else:  # pragma: no cover - KINDS is fixed above
                raise ValueError(kind.rule)
            if why is not None and path not in chosen:
                chosen[path] = Chosen(path, f"{kind.what}：{why}")
    return list(chosen.values())


# --------------------------------------------------------------------------- inside a chosen file: which tests


def _texts(value: object) -> list[str]:
    """The strings a value holds: itself (a path as its text), or the strings of a tuple, list, set or dict."""
    if isinstance(value, (str, Path)):
        return [str(value)]
    if isinstance(value, (tuple, list, set, frozenset)):
        return [str(v) for v in value if isinstance(v, (str, Path))]
    if isinstance(value, dict):
        return [str(v) for pair in value.items() for v in pair if isinstance(v, (str, Path))]
    return []


def param_strings(params: Mapping[str, object]) -> list[str]:
    """The strings of a test's parameters (``item.callspec.params``)."""
    return [text for value in params.values() for text in _texts(value)]


def body_strings(function: Callable[..., object]) -> list[str]:
    """The string literals in a test function's body and the module-level strings its body names (``LAB`` in
    ``executed_labs[LAB]``). Its decorators are left out: ``parametrize("name", LABS)`` names every lab, the test's
    own parameter names one."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return []
    tree = ast.parse(source)
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs:
        return []
    module_globals = getattr(function, "__globals__", {})
    found: list[str] = []
    for statement in defs[0].body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append(node.value)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in module_globals:
                found += _texts(module_globals[node.id])
    return found


def keeps(graph: SiteGraph, lane: set[str], params: Mapping[str, object],
          function: Callable[..., object] | None) -> bool:
    """Whether a test of a chosen file belongs to the lane of the articles ``lane``: a test whose parameters name
    articles belongs to those; otherwise a test whose body names articles belongs to those; a test that names none
    checks what the whole file is about and stays."""
    named = graph.owners(param_strings(params))
    if not named and function is not None:
        named = graph.owners(body_strings(function))
    return not named or bool(named & lane)
