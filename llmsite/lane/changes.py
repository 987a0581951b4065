"""Which articles a set of changed files touches: the lanes a pull request runs first.

A changed file is, in this order:

- shared by every page (``EVERYWHERE``: the build package, the templates, the site's scripts and styles, the route,
  authors and tags, the tools, the test harness): every article, and the whole suite says so;
- an input of some articles (``graph.Article.inputs``: the article, what it includes, its figures and answers, its
  labs, every file of ``code/`` those import, the data they read): those articles;
- a test file an article's lane runs (``select.tests_for``), or a helper such a file imports (followed through
  ``tests/``): those articles;
- anything else (another page of docs/, a test of the site's machinery, bench/, the workflows): no article; the
  whole suite, which every pull request runs after its lanes, checks it.

A file the graph cannot place although it belongs to the articles' inputs by its folder (a deleted article, a file
of ``code/`` or ``data/`` that no article is known to read) counts as shared: guessing no article would skip a lane
that was needed.

Three shared files are narrowed when the version before the change is known (``before``): a new article comes
with a line in ``data/route.yml`` and often a new author or tag. When the route's stages keep their titles and
summaries, the articles whose place changed (added, moved, new neighbours, other labs) are the ones touched; when
``data/authors.yml`` or ``data/tags.yml`` only gained entries, the articles that use a new one are.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from llmsite.content import frontmatter
from llmsite.lane import select
from llmsite.lane.graph import SiteGraph
from llmsite.lane.graph import load as load_graph
from llmsite.paths import ROOT

# Inputs of every page: (path or folder/, why).
EVERYWHERE = (
    ("llmsite/", "构建本身（llmsite/）"),
    ("overrides/", "每一页的模板（overrides/）"),
    ("docs/assets/", "每一页载入的脚本、样式或字体（docs/assets/）"),
    ("mkdocs.yml", "站点配置（mkdocs.yml）"),
    ("data/route.yml", "学习路线：每一页的导航（data/route.yml）"),
    ("data/authors.yml", "作者：每篇文章的文章头（data/authors.yml）"),
    ("data/tags.yml", "标签：每篇文章的标签（data/tags.yml）"),
    ("requirements.txt", "构建和测试用的库（requirements.txt）"),
    ("requirements-py313.txt", "构建和测试用的库（requirements-py313.txt）"),
    ("requirements.in", "构建和测试用的库（requirements.in）"),
    ("pyproject.toml", "包和测试的设置（pyproject.toml）"),
    ("tests/conftest.py", "所有测试共用的构建、服务器和浏览器（tests/conftest.py）"),
    ("tests/scheduling.py", "测试的调度（tests/scheduling.py）"),
    ("tests/without_mkdocs.py", "测试里 Zensical 站点的构建方式（tests/without_mkdocs.py）"),
    ("tests/browser/same_look.js", "axe 的颜色对比检查（tests/browser/same_look.js）"),
)
# Folders whose files are inputs of articles: a file here that no article is known to use counts as shared.
ARTICLE_INPUTS = ("docs/articles/", "code/", "labs/", "data/")


def own_tests(paths: Iterable[str], root: Path = ROOT) -> list[Path]:
    """The test file of each changed module of ``code/`` (``tests/code/test_<module>.py``), where there is one.

    A lane runs the tests of the modules its article includes; a module only imported by others (the figures' style
    ``figkit.py``, a model a lab trains) has tests no lane runs. When such a module changes, the lanes of the articles
    that use it run its own tests as well."""
    found = []
    for path in paths:
        pure = PurePosixPath(path)
        if pure.parent == PurePosixPath("code") and pure.suffix == ".py":
            test = root / "tests" / "code" / f"test_{pure.stem}.py"
            if test.is_file() and test not in found:
                found.append(test)
    return found


@dataclass
class Selection:
    """The answer for one set of changed files."""

    articles: dict[str, list[str]] = field(default_factory=dict)  # slug -> the changed files that touch it
    everything: list[tuple[str, str]] = field(default_factory=list)  # (changed file, why it touches every article)
    outside: list[str] = field(default_factory=list)  # changed files no article depends on

    @property
    def whole_suite(self) -> bool:
        return bool(self.everything)

    def slugs(self) -> list[str]:
        return list(self.articles)

    def explain(self) -> list[str]:
        """Lines saying what was selected and why."""
        lines = []
        for path, why in self.everything:
            lines.append(f"{path}：{why}，影响每一篇文章：运行全套测试")
        for slug, paths in self.articles.items():
            lines.append(f"{slug}：{'、'.join(paths)}")
        for path in self.outside:
            lines.append(f"{path}：不属于任何一篇文章，由全套测试检查")
        return lines


def _shared(path: str) -> str | None:
    for prefix, why in EVERYWHERE:
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
            return why
    return None


def _yaml(text: str | None) -> object:
    try:
        return yaml.safe_load(text) if text is not None else None
    except yaml.YAMLError:
        return None


def _route_places(text: str | None) -> tuple[list[tuple[str, str]], dict[str, tuple]] | None:
    """(the stages' titles and summaries, {slug: (stage, previous, next, labs)}) of a route file; None if unreadable."""
    data = _yaml(text)
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(stages, list) or not all(isinstance(st, dict) for st in stages):
        return None
    heads = [(str(st.get("title")), str(st.get("summary"))) for st in stages]
    order: list[tuple[int, str, tuple[str, ...]]] = []
    for i, st in enumerate(stages):
        for item in st.get("articles") or []:
            slug = str(item.get("slug")) if isinstance(item, dict) else str(item)
            labs = tuple(str(x) for x in (item.get("labs") or [])) if isinstance(item, dict) else ()
            order.append((i, slug, labs))
    places = {}
    for n, (i, slug, labs) in enumerate(order):
        before = order[n - 1][1] if n else None
        after = order[n + 1][1] if n + 1 < len(order) else None
        places[slug] = (i, before, after, labs)
    return heads, places


def _route_touches(before: str | None, after: str | None) -> set[str] | None:
    """The articles whose place in the route changed; None when the stages themselves changed (every page's
    navigation) or either version cannot be read."""
    old, new = _route_places(before), _route_places(after)
    if old is None or new is None or old[0] != new[0]:
        return None
    return {slug for slug in set(old[1]) | set(new[1]) if old[1].get(slug) != new[1].get(slug)}


def _added_keys(before: str | None, after: str | None) -> set[str] | None:
    """The entries a YAML mapping gained, when it lost or changed none; None otherwise."""
    old, new = _yaml(before), _yaml(after)
    if not isinstance(old, dict) or not isinstance(new, dict) or any(new.get(k) != v for k, v in old.items()):
        return None
    return {str(k) for k in set(new) - set(old)}


def _narrowed(path: str, graph: SiteGraph, before: Callable[[str], str | None]) -> set[str] | None:
    """The articles a change of a shared data file touches, when it can be told; None when it touches every one."""
    if path not in ("data/route.yml", "data/authors.yml", "data/tags.yml"):
        return None
    full = graph.root / path
    after = full.read_text(encoding="utf-8") if full.is_file() else None
    if path == "data/route.yml":
        touched = _route_touches(before(path), after)
        return None if touched is None else touched & set(graph.articles)
    added = _added_keys(before(path), after)
    if added is None:
        return None
    found = set()
    for slug, art in graph.articles.items():
        meta = frontmatter.split(art.source.read_text(encoding="utf-8")).meta
        used = {str(meta.get("author"))} if path == "data/authors.yml" else {str(t) for t in meta.get("tags") or []}
        if used & added:
            found.add(slug)
    return found


def _unplaced(path: str, full: Path) -> str:
    """Why a file of the articles' folders that no article is known to use counts as shared."""
    if path.startswith("docs/articles/") and path.endswith(".md"):
        return "文章被删除或改名：学习路线、列表和链接都会变"
    if not full.exists():
        return "被删除的文件：不知道哪篇文章曾经用到它"
    return "不知道哪篇文章用到它（没有文章引用、导入或声明读取它）"


def _test_imports(path: Path, root: Path) -> set[Path]:
    """The files of ``tests/`` a test file imports (``from . import claims``, ``from tests.x import y``)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    found: set[Path] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                parts = node.module.split(".") if node.module else []
            elif node.module and node.module.split(".")[0] == "tests":
                base, parts = root, node.module.split(".")
            else:
                continue
            names = [parts] + [[*parts, alias.name] for alias in node.names]
        elif isinstance(node, ast.Import):
            base = root
            names = [alias.name.split(".") for alias in node.names if alias.name.split(".")[0] == "tests"]
        else:
            continue
        for name in names:
            target = base.joinpath(*name)
            for candidate in (target.with_suffix(".py"), target / "__init__.py"):
                if candidate.is_file():
                    found.add(candidate.resolve())
    return found


def lane_files(graph: SiteGraph) -> dict[Path, set[str]]:
    """{test file, or a file of tests/ one imports: the articles whose lanes run it}."""
    out: dict[Path, set[str]] = {}
    for slug in graph.articles:
        stack = [chosen.path.resolve() for chosen in select.tests_for(graph, slug)]
        seen: set[Path] = set()
        while stack:
            path = stack.pop()
            if path in seen:
                continue
            seen.add(path)
            out.setdefault(path, set()).add(slug)
            stack.extend(_test_imports(path, graph.root) - seen)
    return out


def articles_for_changes(paths: Iterable[str], graph: SiteGraph | None = None,
                         before: Callable[[str], str | None] | None = None) -> Selection:
    """The articles whose lanes the changed ``paths`` (relative to the repository, as git prints them) call for.
    ``before(path)`` gives a file's text before the change (None if it did not exist), to narrow the route, authors
    and tags; without it a change of those touches every article."""
    graph = graph or load_graph()
    root = graph.root
    inputs: dict[Path, set[str]] = {}
    for slug, art in graph.articles.items():
        for path in art.inputs(root):
            inputs.setdefault(path.resolve(), set()).add(slug)
    tests: dict[Path, set[str]] | None = None
    selection = Selection()
    order = list(graph.articles)
    touched: dict[str, list[str]] = {}
    for raw in dict.fromkeys(paths):
        path = PurePosixPath(raw).as_posix()
        if why := _shared(path):
            narrowed = _narrowed(path, graph, before) if before is not None else None
            if narrowed is None:
                selection.everything.append((path, why))
            elif narrowed:
                for slug in narrowed:
                    touched.setdefault(slug, []).append(path)
            else:
                selection.outside.append(path)
            continue
        full = (root / path).resolve()
        slugs = inputs.get(full, set())
        if not slugs and path.startswith("tests/"):
            if tests is None:
                tests = lane_files(graph)
            slugs = tests.get(full, set())
        if slugs:
            for slug in slugs:
                touched.setdefault(slug, []).append(path)
        elif path == "docs/articles/index.md":
            selection.outside.append(path)  # the article list: a page of its own
        elif path.startswith(ARTICLE_INPUTS):
            selection.everything.append((path, _unplaced(path, full)))
        else:
            selection.outside.append(path)
    selection.articles = {slug: touched[slug] for slug in order if slug in touched}
    return selection


def changed_files(revisions: str, root: Path = ROOT) -> list[str]:
    """The files ``git diff --name-only <revisions>`` lists (renames as a deletion and an addition)."""
    proc = subprocess.run(["git", "diff", "--name-only", "--no-renames", revisions, "--"], cwd=root,
                          capture_output=True, text=True, encoding="utf-8", check=False)
    if proc.returncode != 0:
        raise ValueError(f"git diff {revisions} 失败：{proc.stderr.strip() or proc.stdout.strip()}")
    return [line for line in proc.stdout.splitlines() if line.strip()]



def base_of(revisions: str, root: Path = ROOT) -> str:
    """The revision a ``git diff <revisions>`` compares from: ``A`` of ``A..B``, the merge base of ``A...B``."""
    if "..." in revisions:
        left, right = revisions.split("...", 1)
        proc = subprocess.run(["git", "merge-base", left or "HEAD", right or "HEAD"], cwd=root, capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            raise ValueError(f"git merge-base {left} {right} 失败：{proc.stderr.strip()}")
        return proc.stdout.strip()
    return revisions.split("..", 1)[0] or "HEAD"


def file_at(revision: str, root: Path = ROOT) -> Callable[[str], str | None]:
    """``before(path)`` for ``articles_for_changes``: the file's text at ``revision`` (None if it had none)."""

    def text(path: str) -> str | None:
        proc = subprocess.run(["git", "show", f"{revision}:{path}"], cwd=root, capture_output=True, check=False)
        return proc.stdout.decode("utf-8") if proc.returncode == 0 else None

    return text
