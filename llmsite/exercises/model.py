"""Exercise blocks in an article: found, parsed and checked, every problem with the file line it is about.

A block is a fenced code block whose opening line is exactly ```` ```exercise ```` and whose closing line is
exactly ```` ``` ````, both at the start of the line; between them, a YAML mapping (the keys are listed in
``KEYS``; CONTRIBUTING.md explains them). ``parse`` reads every block of a body and reports what is wrong
with the block itself; ``check_references`` reports what is wrong with the names it uses (an answer that
the article's module does not declare, a figure that is not on the page or cannot be explored); the
checks that need the computed value (a choice answer among the options, a number for a number question)
are in ``render.check_value``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from llmsite.problems import Problem

KINDS = ("number", "choice", "predict", "concept")
KIND_NAMES = {"number": "计算题", "choice": "选择题", "predict": "先猜再看", "concept": "概念题"}
COMMON = ("id", "kind", "question", "explanation")
KEYS = {
    "number": (*COMMON, "answer", "tolerance"),
    "choice": (*COMMON, "options", "answer"),
    "predict": (*COMMON, "figure", "options", "answer", "tolerance"),
    "concept": (*COMMON, "options"),
}
ALL_KEYS = tuple(dict.fromkeys(k for keys in KEYS.values() for k in keys))
OPTION_KEYS = ("text", "why", "correct")  # a concept option
OPEN = "```exercise"
CLOSE = "```"
ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")  # answer and figure names
PLACEHOLDER = "{answer}"  # in an explanation: the computed answer, as the page shows it
MIN_OPTIONS, MAX_OPTIONS = 2, 8
MAX_QUESTION, MAX_OPTION = 1500, 200
MAX_TOLERANCE = 1e12

_ANY_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
# "<" then a letter, "/", "!" or "?": Python-Markdown's HTML handling would take it for a tag (even inside
# $...$ or `...`, because the block is HTML before it is Markdown), so it is refused everywhere.
_TAG = re.compile(r"<\s*[A-Za-z/!?]")
_SCHEME = re.compile(r"(?:javascript|vbscript|data|livescript)[\s\x00-\x1f]*:", re.I)
_HEADING = re.compile(r"^[ ]{0,3}#{1,6}(?:[ \t]|$)")
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})")
# control characters (a tab too: "java\tscript:" is a javascript: URL to a browser), bidi and zero-width ones
_INVISIBLE = re.compile("[\x00-\x09\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Option:
    text: str
    line: int
    why: str = ""
    correct: bool = False


@dataclass(frozen=True)
class Exercise:
    id: str
    kind: str
    question: str
    explanation: str
    line: int  # the opening fence
    lines: dict[str, int] = field(default_factory=dict)  # key -> file line
    answer: str | None = None  # the @exercise_answer name (none for concept)
    tolerance: float | None = None
    figure: str | None = None
    options: tuple[Option, ...] = ()

    def line_of(self, key: str) -> int:
        return self.lines.get(key, self.line)

    @property
    def numeric(self) -> bool:
        """Checked against a number (number, or predict without options)."""
        return self.kind == "number" or (self.kind == "predict" and not self.options)


@dataclass(frozen=True)
class Block:
    """Where one exercise block is: lines ``start`` (the opening fence) to ``end`` (the closing one), 0-based."""

    start: int
    end: int
    text: str  # the YAML between the fences


@dataclass
class Parsed:
    exercises: list[Exercise] = field(default_factory=list)  # the well-formed ones
    problems: list[Problem] = field(default_factory=list)
    by_block: list[Exercise | None] = field(default_factory=list)  # one per block, in order (None: malformed)


def blocks(body: str) -> tuple[list[Block], list[tuple[int, str]]]:
    """The exercise blocks of ``body`` and ``(line index, message)`` for fences that look like one but are not.

    Other fenced code blocks are skipped whole, so an example of an exercise shown in a ````` ````markdown `````
    block is not one."""
    lines = body.split("\n")
    found: list[Block] = []
    loose: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _ANY_FENCE.match(line)
        if m is None:
            i += 1
            continue
        if line.rstrip() == OPEN:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == CLOSE), None)
            if end is None:
                loose.append((i, "练习块没有结束：在它最后单独一行、顶格写 ```"))
                return found, loose
            found.append(Block(i, end, "\n".join(lines[i + 1 : end])))
            i = end + 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        if info.split()[:1] == ["exercise"] or (info.startswith("{") and "exercise" in info):
            loose.append((i, "练习块的开头格式不对，这个练习不会显示：开头单独一行、顶格写 ```exercise"))
        j = i + 1
        while j < len(lines):
            s = lines[j].strip()
            if s and set(s) == {fence[0]} and len(s) >= len(fence):
                break
            j += 1
        i = j + 1
    return found, loose


def _join(what: str, rest: str) -> str:
    """「question 里……」but「第 2 个选项里……」: a space only after a Latin word."""
    return f"{what} {rest}" if what[-1:].isascii() else f"{what}{rest}"


def _block_scalar_lines(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.style in ("|", ">")


class _Reader:
    """Reads one block's YAML into an Exercise, collecting problems."""

    def __init__(self, path: str, first_line: int, block: Block) -> None:
        self.path = path
        self.fence_line = first_line + block.start
        self.base = self.fence_line + 1  # file line of the block's first YAML line
        self.block = block
        self.problems: list[Problem] = []

    def problem(self, line: int, message: str, fix: str = "") -> None:
        self.problems.append(Problem(self.path, line, message, fix))

    def line(self, node: yaml.Node) -> int:
        return self.base + node.start_mark.line

    def text_line(self, node: yaml.Node, offset: int) -> int:
        """The file line of character ``offset`` of a scalar's value (exact for ``|`` blocks)."""
        if _block_scalar_lines(node):
            return self.line(node) + 1 + str(node.value).count("\n", 0, offset)
        return self.line(node)

    def read(self) -> Exercise | None:
        try:
            loader = _Loader(self.block.text)
            try:
                node = loader.get_single_node()
                data = loader.construct_document(node) if node is not None else None
            finally:
                loader.dispose()
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line = self.base + mark.line if mark is not None else self.fence_line
            self.problem(line, f"练习块不是合法的 YAML：{getattr(exc, 'problem', None) or exc}",
                         "检查缩进、冒号后的空格；多行的文字写成 `question: |`，下一行起缩进两格")
            return None
        if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
            self.problem(self.fence_line, "练习块里应是「键: 值」的映射（id、kind、question……）",
                         "照 CONTRIBUTING.md「练习」一节的例子写")
            return None
        nodes: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in nodes:
                self.problem(self.line(key_node), f"键 {key} 写了两次", "删去其中一个")
            nodes[key] = (key_node, value_node)
        return self._exercise(data, nodes)

    def _exercise(self, data: dict, nodes: dict[str, tuple[yaml.Node, yaml.Node]]) -> Exercise | None:
        lines = {key: self.line(k) for key, (k, _) in nodes.items()}
        kind = data.get("kind")
        if "kind" not in data:
            self.problem(self.fence_line, "练习缺少 kind", f"写 kind: 和其中一种：{'、'.join(KINDS)}")
        elif kind not in KINDS:
            self.problem(lines["kind"], f"未知的练习类型 kind: {kind}", f"可用：{'、'.join(KINDS)}")
        allowed = KEYS.get(kind, ALL_KEYS) if isinstance(kind, str) else ALL_KEYS
        for key in data:
            if key in allowed:
                continue
            if key in ALL_KEYS:
                self.problem(lines[str(key)], f"kind: {kind} 的练习不用 {key}",
                             f"删去 {key}；这种练习可用的键：{'、'.join(allowed)}")
            else:
                self.problem(lines.get(str(key), self.fence_line), f"练习里有未知的键 {key}",
                             f"可用的键：{'、'.join(allowed)}")
        ex_id = data.get("id")
        if "id" not in data:
            self.problem(self.fence_line, "练习缺少 id",
                         "写 id: 名字（小写字母、数字和连字符，页面内唯一），例如 id: causal-row3")
        elif not isinstance(ex_id, str) or not ID.match(ex_id) or len(ex_id) > 64:
            self.problem(lines["id"], f"练习的 id 不合法：{ex_id!r}",
                         "只用小写字母、数字和连字符，例如 id: causal-row3")
        question = self._markdown(data, nodes, "question", required=True, placeholder=False)
        needs_explanation = kind != "concept"
        explanation = self._markdown(data, nodes, "explanation", required=needs_explanation,
                                     placeholder=kind != "concept")
        answer = self._name(data, lines, "answer", required=kind in ("number", "choice", "predict"))
        figure = self._name(data, lines, "figure", required=kind == "predict")
        options = self._options(data, nodes, kind)
        tolerance = self._tolerance(data, lines)
        if kind == "predict" and options and "tolerance" in data:
            self.problem(lines["tolerance"], "有 options 的 predict 题不用 tolerance",
                         "选项题按选项判断；要按数判断就删去 options")
        if self.problems or not isinstance(kind, str) or kind not in KINDS:
            return None
        return Exercise(
            id=str(ex_id), kind=kind, question=question, explanation=explanation, line=self.fence_line,
            lines=lines, answer=answer, tolerance=tolerance, figure=figure, options=tuple(options),
        )

    # ------------------------------------------------------------------ values

    def _markdown(self, data: dict, nodes: dict, key: str, *, required: bool, placeholder: bool) -> str:
        if key not in data or data[key] in (None, ""):
            if required:
                self.problem(self.fence_line if key not in nodes else self.line(nodes[key][0]), f"练习缺少 {key}",
                             f"写 {key}: |，下一行起缩进两格写内容（Markdown，可以有公式 $x$）")
            return ""
        value_node = nodes[key][1]
        value = data[key]
        if not isinstance(value, str):
            self.problem(self.line(value_node), f"{key} 应是文字（Markdown），现在是 {type(value).__name__}",
                         "给值加上引号，或写成 key: | 的多行文字")
            return ""
        self.check_text(value, key, value_node, placeholder=placeholder)
        return value.strip("\n")

    def check_text(self, value: str, what: str, node: yaml.Node, *, placeholder: bool, one_line: bool = False) -> None:
        """Markdown written by a contributor: no HTML, no hidden characters, no headings or code blocks."""
        limit = MAX_OPTION if one_line else MAX_QUESTION
        checks = (
            (_TAG, _join(what, "里不能写 HTML 标签或注释（< 后面紧跟字母、/、! 或 ?）"),
             "这里只写 Markdown；要写小于号，在 < 后面加空格，公式里写 \\lt"),
            (_SCHEME, _join(what, "里有 javascript:、data: 之类会执行或嵌入内容的网址写法"),
             "删去它；链接只用 http(s) 或站内相对地址"),
            (_INVISIBLE, _join(what, "里有控制字符或不可见字符"), "删去这些字符（常见于从网页复制的文字），重新输入"),
        )
        for pattern, message, fix in checks:
            if m := pattern.search(value):
                self.problem(self.text_line(node, m.start()), message, fix)
        offset, fenced = 0, False
        for line in value.split("\n"):
            if _HEADING.match(line):
                self.problem(self.text_line(node, offset), _join(what, "里不能写标题（# 开头的行）"),
                             "练习的标题由网站生成；把它写成普通的一句话")
            elif _FENCE_LINE.match(line) and not fenced:
                fenced = True  # reported once, at the opening line
                self.problem(self.text_line(node, offset), _join(what, "里不能写代码块（``` 或 ~~~）"),
                             "用行内代码 `x`")
            offset += len(line) + 1
        if PLACEHOLDER in value and not placeholder:
            self.problem(self.text_line(node, value.index(PLACEHOLDER)), _join(what, f"里不能用 {PLACEHOLDER}"),
                         f"{PLACEHOLDER} 只能写在有计算答案的练习的 explanation 里（读者作答之后才看到）")
        if one_line and "\n" in value.strip():
            self.problem(self.line(node), _join(what, "应是一行文字"), "选项写得短一些；解释写进 why 或 explanation")
        if len(value) > limit:
            self.problem(self.line(node), _join(what, f"太长：{len(value)} 个字符，最多 {limit} 个"), "写得简短一些")

    def _name(self, data: dict, lines: dict[str, int], key: str, *, required: bool) -> str | None:
        if key not in data:
            if required:
                hint = ("一个 @exercise_answer 函数的名字（写在 code/figures/ 里这篇文章的模块中）" if key == "answer"
                        else "这一页上一张可以操作的图（有 @figure_data）的名字")
                self.problem(self.fence_line, f"练习缺少 {key}", f"写 {key}: 名字，名字是{hint}")
            return None
        value = data[key]
        if not isinstance(value, str) or not NAME.match(value):
            self.problem(lines[key], f"{key} 应是一个名字（小写字母、数字和连字符），现在是 {value!r}",
                         f"例如 {key}: causal-row3")
            return None
        return value

    def _tolerance(self, data: dict, lines: dict[str, int]) -> float | None:
        if "tolerance" not in data:
            return None
        value = data["tolerance"]
        bad = isinstance(value, bool) or not isinstance(value, (int, float))
        if bad or not math.isfinite(value) or value < 0 or value > MAX_TOLERANCE:
            self.problem(lines["tolerance"], f"tolerance 应是不小于 0 的数（允许的绝对误差），现在是 {value!r}",
                         "例如 tolerance: 0.001（不加引号）；整数答案要求一字不差时写 0 或不写")
            return None
        return float(value)

    def _options(self, data: dict, nodes: dict, kind: Any) -> list[Option]:
        if "options" not in data:
            if kind in ("choice", "concept"):
                self.problem(self.fence_line, "练习缺少 options", "写 options:，下面每行一个 - 选项")
            return []
        key_node, value_node = nodes["options"]
        items = data["options"]
        if not isinstance(items, list) or not isinstance(value_node, yaml.SequenceNode):
            self.problem(self.line(key_node), "options 应是列表", "下面每行写一个 - 选项")
            return []
        if not MIN_OPTIONS <= len(items) <= MAX_OPTIONS:
            self.problem(self.line(key_node), f"options 应有 {MIN_OPTIONS} 到 {MAX_OPTIONS} 项，现在有 {len(items)} 项",
                         "每行写一个 - 选项")
        out: list[Option] = []
        for i, (item, node) in enumerate(zip(items, value_node.value, strict=True)):
            label = f"第 {i + 1} 个选项"
            if kind == "concept":
                option = self._concept_option(item, node, label)
            elif isinstance(item, str) and item.strip():
                self.check_text(item, label, node, placeholder=False, one_line=True)
                option = Option(item.strip(), self.line(node))
            else:
                self.problem(self.line(node), f"{label}应是一行文字（Markdown）",
                             "给选项加上引号；概念题（kind: concept）的选项才写成 text / why")
                continue
            if option is not None:
                if any(o.text == option.text for o in out):
                    self.problem(option.line, f"{label}和前面的选项重复：{option.text}", "每个选项都要不同")
                out.append(option)
        if kind == "concept" and out and len(out) == len(items):
            correct = [o for o in out if o.correct]
            if len(correct) != 1:
                self.problem(self.line(key_node), f"概念题应恰好有一个选项写 correct: true，现在有 {len(correct)} 个",
                             "在正确的那个选项下加 correct: true")
        return out

    def _concept_option(self, item: Any, node: yaml.Node, label: str) -> Option | None:
        if not isinstance(item, dict) or not isinstance(node, yaml.MappingNode):
            self.problem(self.line(node), f"概念题的{label}应写成 text、why（和 correct: true）",
                         "例如：- text: 选项\n      why: 为什么对或不对")
            return None
        sub = {str(k.value): (k, v) for k, v in node.value}
        ok = True
        for key in item:
            if key not in OPTION_KEYS:
                self.problem(self.line(sub[str(key)][0]) if str(key) in sub else self.line(node),
                             f"{label}里有未知的键 {key}", f"可用的键：{'、'.join(OPTION_KEYS)}")
                ok = False
        for key in ("text", "why"):
            value = item.get(key)
            if not isinstance(value, str) or not value.strip():
                self.problem(self.line(sub[key][0]) if key in sub else self.line(node),
                             f"{label}缺少 {key}" if key not in item else f"{label}的 {key} 应是文字",
                             "每个选项都要写 text（选项）和 why（为什么对或不对），读者作答后都能看到")
                ok = False
            else:
                self.check_text(value, f"{label}的 {key}", sub[key][1], placeholder=False, one_line=key == "text")
        correct = item.get("correct", False)
        if not isinstance(correct, bool):
            self.problem(self.line(sub["correct"][0]), f"{label}的 correct 应是 true 或 false",
                         "只有正确的那个选项写 correct: true（不加引号）")
            ok = False
        if not ok:
            return None
        return Option(str(item["text"]).strip(), self.line(node), str(item["why"]).strip("\n"), bool(correct))


def parse(body: str, first_line: int, path: str) -> Parsed:
    """Every exercise block of an article ``body`` whose first line is file line ``first_line``."""
    found, loose = blocks(body)
    out = Parsed()
    for index, message in loose:
        out.problems.append(Problem(path, first_line + index, message,
                                    "练习块单独成段：```exercise 一行、YAML、``` 一行，都不缩进"))
    seen: dict[str, int] = {}
    for block in found:
        reader = _Reader(path, first_line, block)
        exercise = reader.read()
        out.problems += reader.problems
        if exercise is not None and exercise.id in seen:
            out.problems.append(Problem(path, exercise.line_of("id"),
                                        f"练习 id {exercise.id} 在第 {seen[exercise.id]} 行用过了",
                                        "同一页里每个练习的 id 都要不同"))
            exercise = None
        out.by_block.append(exercise)
        if exercise is not None:
            seen[exercise.id] = exercise.line_of("id")
            out.exercises.append(exercise)
    return out


def check_references(
    exercises: list[Exercise], path: str, *, module: str, answers: dict[str, str], markers: set[str],
    interactive: set[str],
) -> list[Problem]:
    """Names an exercise uses: its answer is declared in ``module`` (``answers``: answer name -> the module that
    declares it), its figure is on the page (``markers``) and has an interactive view (``interactive``)."""
    out: list[Problem] = []
    mine = sorted(name for name, where in answers.items() if where == module)
    for ex in exercises:
        if ex.answer is not None and answers.get(ex.answer) != module:
            elsewhere = f"（它声明在 {answers[ex.answer]}，不是这篇文章的模块）" if ex.answer in answers else ""
            out.append(Problem(
                path, ex.line_of("answer"), f"练习 {ex.id} 的答案 {ex.answer} 没有声明{elsewhere}",
                f"在 {module} 里用 @exercise_answer(\"{ex.answer}\") 声明一个不带参数的函数；"
                f"这个模块已有的答案：{'、'.join(mine) or '（还没有）'}",
            ))
        if ex.figure is not None:
            if ex.figure not in markers:
                out.append(Problem(
                    path, ex.line_of("figure"), f"练习 {ex.id} 引用的图 {ex.figure} 不在这一页上",
                    "figure: 要写这一页里 <!-- figure: 名字 --> 放着的图；这一页有："
                    + ("、".join(sorted(markers)) or "（没有图）"),
                ))
            elif ex.figure not in interactive:
                out.append(Problem(
                    path, ex.line_of("figure"), f"练习 {ex.id} 引用的图 {ex.figure} 不能操作（没有 @figure_data）",
                    "先猜再看的题要指向一张读者能动手操作的图：给它加 @figure_data，或换一张图",
                ))
    return out
