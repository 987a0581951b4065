"""An exercise as the page shows it: Markdown with ``md_in_html`` blocks, put in place of its fenced block.

The question, the options and the explanation stay Markdown, so they go through Python-Markdown with the
page's own extensions (math as everywhere else on the site). Everything this module writes itself is
escaped for where it goes: the exercise id and kind in attributes, the checker's data as JSON in an
attribute, the hint as HTML text. The contributor's Markdown was refused by ``model`` if it held anything
that HTML would parse (a tag, a comment), so Python-Markdown escapes the rest (``1 < 2 && 3``).

Without JavaScript a reader sees the question, the options, and a ``<details>`` with the answer and the
explanation; the form stays ``hidden``. ``docs/assets/javascripts/exercises.js`` shows the form, checks an
attempt against ``data-llm-check`` and opens the ``<details>``.

Numbers are formatted here, deterministically: an integer as written (thousands separated from 10,000),
a float with as many decimals as the tolerance needs (0.001 -> 3), so the shown answer is always accepted.
"""

from __future__ import annotations

import html
import json
import math
from decimal import Decimal

from llmsite.exercises.model import KIND_NAMES, PLACEHOLDER, Block, Exercise, blocks
from llmsite.problems import Problem

Value = int | float | str
LETTERS = "ABCDEFGH"


def decimals(tolerance: float) -> int:
    """Decimals that show a value to within its tolerance: 0.001 -> 3, 0.005 -> 3, 0.05 -> 2, 1 -> 0."""
    if tolerance >= 1:
        return 0
    return max(0, math.ceil(-math.log10(tolerance) - 1e-9))


def plain_decimal(x: float) -> str:
    """``x`` written out without an exponent: 1e-05 -> "0.00001"."""
    text = format(Decimal(repr(x)).normalize(), "f")
    return text


def format_value(value: Value, tolerance: float | None) -> str:
    """The answer as the page shows it."""
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    text = f"{value:.{decimals(tolerance or 0.0) if tolerance else 6}f}"
    if text.lstrip("-").strip("0.") == "":  # "-0.000" -> "0.000"
        text = text.lstrip("-")
    return text


# Examples of how to write a number, beside the input. The hint must never give the answer away: the first example
# that the answer does not match is shown.
INTEGER_EXAMPLES = (1024, 2048)
FRACTION_EXAMPLES = ((0.6, "0.6", "3/5"), (0.375, "0.375", "3/8"))


def number_hint(ex: Exercise, value: int | float) -> str:
    """What the input accepts, said beside it (plain text)."""
    tolerance = ex.tolerance or 0.0
    if isinstance(value, int) and tolerance == 0:
        example = next(n for n in INTEGER_EXAMPLES if n != value)
        what = f"填一个整数（可以带千位分隔符，例如 {example:,}）"
        rule = "要完全一致才算" + ("猜中" if ex.kind == "predict" else "对")
        return f"{what}，{rule}。"
    _, decimal, fraction = next(e for e in FRACTION_EXAMPLES if abs(e[0] - value) > max(tolerance, 1e-9))
    what = f"填小数或分数，例如 {decimal} 或 {fraction}"
    rule = f"和答案相差不超过 {plain_decimal(tolerance)} 算" + ("猜中" if ex.kind == "predict" else "对")
    return f"{what}；{rule}。"


def check_value(ex: Exercise, value: Value | None, path: str) -> list[Problem]:
    """What is wrong with the computed value for this exercise (empty when it fits)."""
    if ex.kind == "concept":
        return []
    where = ex.line_of("answer")
    if value is None:
        return [Problem(path, where, f"练习 {ex.id} 的答案 {ex.answer} 没有算出来", "看构建日志里这个答案函数的错误")]
    if ex.numeric:
        if isinstance(value, str):
            return [Problem(path, where, f"练习 {ex.id} 要一个数，答案函数 {ex.answer} 却返回了文字 {value!r}",
                            "让函数返回 int 或 float；要按选项判断就改成 kind: choice 并写 options")]
        if isinstance(value, float) and not ex.tolerance:
            return [Problem(path, ex.line_of("tolerance"),
                            f"练习 {ex.id} 的答案是小数（{value!r}），要写正的 tolerance",
                            "例如 tolerance: 0.001：读者的答案和计算结果相差不超过它就算对")]
        return []
    texts = [o.text for o in ex.options]
    if not isinstance(value, str) or texts.count(value) != 1:
        return [Problem(
            path, where, f"练习 {ex.id} 的答案函数 {ex.answer} 返回了 {value!r}，不是选项之一",
            "答案函数要返回正确选项的文字，和 options 里的一项一字不差；现在的选项："
            + "、".join(repr(t) for t in texts),
        )]
    return []


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def _answer_index(ex: Exercise, value: Value | None) -> int:
    if ex.kind == "concept":
        return next(i for i, o in enumerate(ex.options) if o.correct)
    return [o.text for o in ex.options].index(str(value))


def render(ex: Exercise, number: int, value: Value | None) -> str:
    """The Markdown (with HTML blocks) that replaces the exercise's fenced block; ``value`` is the computed answer
    (None for a concept question), already accepted by ``check_value``."""
    base = f"ex-{ex.id}"
    verb = "猜中" if ex.kind == "predict" else "答对"
    if ex.numeric:
        assert isinstance(value, (int, float)) and not isinstance(value, bool)
        display = format_value(value, ex.tolerance)
        check = {"kind": "number", "answer": value, "tolerance": ex.tolerance or 0, "display": display}
        hint = number_hint(ex, value)
        label = "你的猜测" if ex.kind == "predict" else "你的答案"
        form = (
            f'<label for="{base}-input">{label}</label>\n'
            f'<input type="text" id="{base}-input" autocomplete="off" spellcheck="false" '
            f'aria-describedby="{base}-hint">\n'
        )
        solution = f"**答案：{display}**"
    else:
        index = _answer_index(ex, value)
        display = LETTERS[index]
        check = {"kind": "choice", "answer": index, "display": display}
        hint = "先选出你的猜测，再提交。" if ex.kind == "predict" else "选一项，再按「检查」。"
        form = ""
        solution = f"**答案：{display}. {ex.options[index].text}**"
        value = ex.options[index].text
    check["verb"] = verb
    button = "提交猜测" if ex.kind == "predict" else "检查"
    data = json.dumps(check, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    parts = [
        f'<div class="llm-ex llm-ex--{ex.kind}" id="{_attr(base)}" data-llm-exercise="{_attr(ex.id)}" '
        f'data-llm-check="{_attr(data)}" markdown="1">',
        f'<p class="llm-ex__label">练习 {number} · {KIND_NAMES[ex.kind]}</p>',
        f'<div class="llm-ex__question" id="{_attr(base)}-q" markdown="1">',
        "",
        ex.question,
        "",
        "</div>",
    ]
    if ex.options:
        parts.append('<ol class="llm-ex__options" markdown="1">')
        parts += [f'<li markdown="span">{LETTERS[i]}. {o.text}</li>' for i, o in enumerate(ex.options)]
        parts.append("</ol>")
    parts += [
        f'<form class="llm-ex__form" hidden aria-labelledby="{_attr(base)}-q">',
        form + f'<button type="submit">{button}</button>',
        f'<p class="llm-ex__hint" id="{_attr(base)}-hint">{html.escape(hint)}</p>',
        "</form>",
        '<p class="llm-ex__result" role="status" aria-live="polite"></p>',
        '<details class="llm-ex__answer info" markdown="1">',
        "<summary>答案与解析</summary>",
        "",
        solution,
        "",
    ]
    if ex.figure:
        parts += [f"[去图里看看](#fig-{ex.figure}){{ .llm-ex__figure }}", ""]
    if ex.explanation:
        parts += [ex.explanation.replace(PLACEHOLDER, str(value if isinstance(value, str) else display)), ""]
    if ex.kind == "concept":
        for i, option in enumerate(ex.options):
            state = "正确" if option.correct else "不对"
            parts += [
                f'<div class="llm-ex__why{" is-correct" if option.correct else ""}" markdown="1">',
                "",
                f"**{LETTERS[i]}. {option.text}**（{state}）",
                "",
                option.why,
                "",
                "</div>",
            ]
    parts += ["</details>", "</div>"]
    return "\n\n" + "\n".join(parts) + "\n\n"


def replace_blocks(markdown: str, rendered: list[str]) -> str:
    """``markdown`` with its exercise blocks, in order, replaced by ``rendered`` (one string per block)."""
    found: list[Block] = blocks(markdown)[0]
    if len(found) != len(rendered):
        raise ValueError(f"{len(found)} exercise blocks in the page, {len(rendered)} rendered")
    lines = markdown.split("\n")
    for block, text in reversed(list(zip(found, rendered, strict=True))):
        lines[block.start : block.end + 1] = [text]
    return "\n".join(lines)
