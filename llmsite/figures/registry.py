"""Discover figure declarations by parsing ``code/figures/*.py`` (no import)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from llmsite.cache import remembered, source_digest
from llmsite.paths import CODE, rel

FIGURES_DIR = "figures"
DECORATOR = "figure"
# The one marker that embeds a figure in an article: alone on its line, not indented. The build (features/figures.py),
# the content checks and the benchmark all use this pattern.
MARKER = re.compile(r"^<!--[ \t]*figure:[ \t]*(?P<name>[\w-]+)[ \t]*-->[ \t]*$", re.M)
DEFAULT_TIMEOUT = 120.0  # seconds a figure may take to draw (both themes); @figure(..., timeout=...) changes it
DATA_DECORATOR = "figure_data"  # @figure_data("name", view="heatmap"): the data of the figure's interactive view
VIEWS = ("heatmap", "bars")  # the views docs/assets/javascripts/figures.js draws
ANSWER_DECORATOR = "exercise_answer"  # @exercise_answer("name"): an exercise's answer, computed like a figure
ANSWER_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# @article_values on one function of code/figures/<slug with _>.py: it returns {name: text}, the numbers the article
# states about a computation, and the article writes {{ value:name }} where each goes (in its prose, its tables and
# its figures' captions). The page then shows what this build computed: a number that the machine's kernels move
# (stage 3's trained models) is never written by hand. The one marker pattern: the build, the checks and the claims
# tests use it.
VALUES_DECORATOR = "article_values"
VALUE_MARKER = re.compile(r"\{\{[ \t]*value:[ \t]*(?P<name>[a-z0-9]+(?:-[a-z0-9]+)*)[ \t]*\}\}")
VALUE_LOOSE = re.compile(r"\{\{\s*value\b", re.I)  # what an author meant as a marker, well formed or not
_SOURCE = source_digest(__file__)  # this reader's own code: what it parsed with older code is not reused


@dataclass(frozen=True)
class FigureSpec:
    name: str
    module: Path  # the file that declares and draws it
    function: str
    article: str
    title: str
    caption: str
    data: tuple[str, ...]
    line: int
    timeout: float = DEFAULT_TIMEOUT
    data_function: str | None = None  # the @figure_data function of the same module (interactive view), if any
    view: str | None = None  # its view: one of VIEWS
    data_line: int = 0

    @property
    def where(self) -> str:
        return f"{rel(self.module)}:{self.line}"

    @property
    def data_where(self) -> str:
        return f"{rel(self.module)}:{self.data_line}"


@dataclass(frozen=True)
class AnswerSpec:
    """An ``@exercise_answer`` function: the article is the module's (``code/figures/<slug with _>.py``)."""

    name: str
    module: Path
    function: str
    line: int
    data: tuple[str, ...] = ()
    kind: str = "answer"  # "answer" (@exercise_answer: one value) or "values" (@article_values: {name: text})

    @property
    def label(self) -> str:
        """How messages name it: 「练习答案 x 」 or 「文中的数」."""
        return "文中的数" if self.kind == "values" else f"练习答案 {self.name} "

    @property
    def article(self) -> str:
        return self.module.stem.replace("_", "-")

    @property
    def where(self) -> str:
        return f"{rel(self.module)}:{self.line}"


class DeclarationError(ValueError):
    pass


def _literal(node: ast.expr, what: str, where: str) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError as exc:
        raise DeclarationError(f"{where}: @figure 的参数 {what} 必须是字面量（字符串或字符串元组）") from exc


def _decorator_name(dec: ast.expr) -> str:
    """The name of a decorator, written bare (``@x``, ``@m.x``) or called (``@x(...)``)."""
    target = dec.func if isinstance(dec, ast.Call) else dec
    return target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""


def _decorator_call(dec: ast.expr, decorator: str = DECORATOR) -> ast.Call | None:
    return dec if isinstance(dec, ast.Call) and _decorator_name(dec) == decorator else None


def _check_no_parameters(node: ast.FunctionDef, where: str, what: str) -> None:
    """The build calls the function with no arguments."""
    args = node.args
    if args.args or args.posonlyargs or args.kwonlyargs or args.vararg or args.kwarg:
        raise DeclarationError(f"{where}: {what} {node.name} 不能带参数（构建时直接调用 {node.name}()）")


def _decorated(tree: ast.Module, path: Path, decorator: str) -> Iterator[tuple[ast.FunctionDef, ast.Call, str]]:
    """Each top-level function of a module decorated with ``@decorator(...)``: (function, the call, "file:line")."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                call = _decorator_call(dec, decorator)
                if call is not None:
                    yield node, call, f"{rel(path)}:{node.lineno}"


def _data_declarations(tree: ast.Module, path: Path) -> dict[str, tuple[str, str, int]]:
    """``{figure name: (function, view, line)}`` for the ``@figure_data`` functions of one module."""
    found: dict[str, tuple[str, str, int]] = {}
    for node, call, where in _decorated(tree, path, DATA_DECORATOR):
        if len(call.args) != 1:
            raise DeclarationError(f"{where}: @figure_data 需要恰好一个位置参数：它所属的图的名字")
        name = str(_literal(call.args[0], "name", where))
        kw = {k.arg: _literal(k.value, str(k.arg), where) for k in call.keywords if k.arg}
        unknown = sorted(set(kw) - {"view"})
        if unknown:
            raise DeclarationError(f"{where}: @figure_data 不认识参数 {'、'.join(unknown)}（只有 view）")
        view = kw.get("view")
        if view not in VIEWS:
            raise DeclarationError(
                f"{where}: @figure_data 的 view 应是 {' 或 '.join(repr(v) for v in VIEWS)}，现在是 {view!r}"
            )
        if name in found:
            raise DeclarationError(f"{where}: 图 {name} 的 @figure_data 已在第 {found[name][2]} 行声明过")
        found[name] = (node.name, str(view), node.lineno)
    return found


def parse_module(path: Path) -> list[FigureSpec]:
    """The figures declared in ``path`` (remembered while its text is unchanged: a preview asks on every save)."""
    return list(_parse_text(path, path.read_text(encoding="utf-8")))


@lru_cache(maxsize=256)
def _parse_text(path: Path, text: str) -> tuple[FigureSpec, ...]:
    # Also kept on disk for the next process: a warm build parses no syntax tree (an error is never stored).
    return remembered("registry", ("figures", _SOURCE, str(path), text), lambda: tuple(_parse(path, text)))


def _parse(path: Path, text: str) -> list[FigureSpec]:
    tree = ast.parse(text, filename=str(path))
    specs = _figure_declarations(tree, path)
    data = _data_declarations(tree, path)
    names = {spec.name for spec in specs}
    for name, (function, _, line) in data.items():
        if name not in names:
            raise DeclarationError(
                f"{rel(path)}:{line}: @figure_data(\"{name}\") 的函数 {function} 找不到同名的图："
                "它要和 @figure 声明在同一个文件里，名字一字不差"
            )
    return [
        replace(spec, data_function=data[spec.name][0], view=data[spec.name][1], data_line=data[spec.name][2])
        if spec.name in data else spec
        for spec in specs
    ]


def _figure_declarations(tree: ast.Module, path: Path) -> list[FigureSpec]:
    specs = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            call = _decorator_call(dec)
            if call is None:
                continue
            where = f"{rel(path)}:{node.lineno}"
            if len(call.args) != 1:
                raise DeclarationError(f"{where}: @figure 需要恰好一个位置参数：图的名字")
            kw = {k.arg: _literal(k.value, str(k.arg), where) for k in call.keywords if k.arg}
            missing = [k for k in ("article", "title", "caption") if not kw.get(k)]
            if missing:
                raise DeclarationError(f"{where}: @figure 缺少参数 {'、'.join(missing)}")
            data = kw.get("data", ())
            if isinstance(data, str):
                data = (data,)
            timeout = kw.get("timeout", DEFAULT_TIMEOUT)
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
                raise DeclarationError(f"{where}: @figure 的 timeout 应是正数（秒），例如 timeout=300")
            specs.append(
                FigureSpec(
                    name=str(_literal(call.args[0], "name", where)),
                    module=path,
                    function=node.name,
                    article=str(kw["article"]),
                    title=str(kw["title"]),
                    caption=str(kw["caption"]),
                    data=tuple(str(d) for d in data),
                    line=node.lineno,
                    timeout=float(timeout),
                )
            )
    return specs


def parse_answers(path: Path) -> list[AnswerSpec]:
    """The exercise answers declared in ``path`` (remembered while its text is unchanged)."""
    return list(_parse_answers_text(path, path.read_text(encoding="utf-8")))


@lru_cache(maxsize=256)
def _parse_answers_text(path: Path, text: str) -> tuple[AnswerSpec, ...]:
    return remembered("registry", ("answers", _SOURCE, str(path), text), lambda: _parse_answers(path, text))


def _parse_answers(path: Path, text: str) -> tuple[AnswerSpec, ...]:
    tree = ast.parse(text, filename=str(path))
    found: list[AnswerSpec] = []
    for node, call, where in _decorated(tree, path, ANSWER_DECORATOR):
        if len(call.args) != 1:
            raise DeclarationError(f"{where}: @exercise_answer 需要恰好一个位置参数：答案的名字")
        name = _literal(call.args[0], "name", where)
        if not isinstance(name, str) or not ANSWER_NAME.match(name):
            raise DeclarationError(
                f"{where}: 答案的名字 {name!r} 不合法：只用小写字母、数字和连字符，例如 \"causal-row3\""
            )
        kw = {k.arg: _literal(k.value, str(k.arg), where) for k in call.keywords if k.arg}
        unknown = sorted(set(kw) - {"data"})
        if unknown:
            raise DeclarationError(f"{where}: @exercise_answer 不认识参数 {'、'.join(unknown)}（只有 data）")
        data = kw.get("data", ())
        if isinstance(data, str):
            data = (data,)
        if not isinstance(data, (tuple, list)) or not all(isinstance(d, str) for d in data):
            raise DeclarationError(f"{where}: @exercise_answer 的 data 应是字符串元组，例如 data=(\"data/x.csv\",)")
        _check_no_parameters(node, where, "答案函数")
        found.append(AnswerSpec(name, path, node.name, node.lineno, tuple(data)))
    return tuple(found)


def values_name(article: str) -> str:
    """The name an article's @article_values function is planned and cached under."""
    return f"values-{article}"


def parse_values(path: Path) -> AnswerSpec | None:
    """The @article_values function of ``path``, if it has one (remembered while its text is unchanged)."""
    return _parse_values_text(path, path.read_text(encoding="utf-8"))


@lru_cache(maxsize=256)
def _parse_values_text(path: Path, text: str) -> AnswerSpec | None:
    return remembered("registry", ("values", _SOURCE, str(path), text), lambda: _parse_values(path, text))


def _parse_values(path: Path, text: str) -> AnswerSpec | None:
    tree = ast.parse(text, filename=str(path))
    found: AnswerSpec | None = None
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if _decorator_name(dec) != VALUES_DECORATOR:
                continue
            where = f"{rel(path)}:{node.lineno}"
            if isinstance(dec, ast.Call) and (dec.args or dec.keywords):
                raise DeclarationError(f"{where}: @article_values 不带参数（直接写 @article_values）")
            _check_no_parameters(node, where, "函数")
            if found is not None:
                raise DeclarationError(f"{where}: 一个文件只能有一个 @article_values 函数，"
                                       f"第 {found.line} 行的 {found.function} 已经是了：把两边的数合到一个字典里")
            article = path.stem.replace("_", "-")
            found = AnswerSpec(values_name(article), path, node.name, node.lineno, (), "values")
    return found


def discover_values(code_dir: Path = CODE) -> dict[str, AnswerSpec]:
    """Every article's @article_values function, by article slug."""
    found: dict[str, AnswerSpec] = {}
    for path in sorted((code_dir / FIGURES_DIR).glob("*.py")):
        spec = parse_values(path)
        if spec is not None:
            found[spec.article] = spec
    return found


def discover_computed(code_dir: Path = CODE) -> dict[str, AnswerSpec]:
    """Everything the figure step computes besides figures, by planned name: the exercise answers and each article's
    @article_values function (``values-<article>``)."""
    found = discover_answers(code_dir)
    found.update({spec.name: spec for spec in discover_values(code_dir).values()})
    return found


def discover_answers(code_dir: Path = CODE) -> dict[str, AnswerSpec]:
    """Every declared exercise answer by name; duplicate names are an error."""
    found: dict[str, AnswerSpec] = {}
    for path in sorted((code_dir / FIGURES_DIR).glob("*.py")):
        for spec in parse_answers(path):
            if spec.name in found:
                raise DeclarationError(f"{spec.where}: 答案 {spec.name} 已在 {found[spec.name].where} 声明过")
            found[spec.name] = spec
    return found


def discover(code_dir: Path = CODE) -> dict[str, FigureSpec]:
    """Every declared figure by name; duplicate names are an error."""
    found: dict[str, FigureSpec] = {}
    for path in sorted((code_dir / FIGURES_DIR).glob("*.py")):
        for spec in parse_module(path):
            if spec.name in found:
                raise DeclarationError(f"{spec.where}: 图 {spec.name} 已在 {found[spec.name].where} 声明过")
            found[spec.name] = spec
    return found
