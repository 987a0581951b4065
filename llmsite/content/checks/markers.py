"""Figure markers ``<!-- figure: NAME -->`` must name a figure declared in code/figures/; value markers
``{{ value:name }}`` must be well formed, in an article whose figure module has an @article_values function (the
names it returns are known only when it runs: the build stops on an unknown one, naming the line).

The declarations come from ``Context.figures`` (read in ``declarations.py``, AST only, no
import of the drawing code, by the same reader the figure pipeline uses).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from llmsite.content.checks.text import line_at
from llmsite.figures.registry import MARKER, VALUE_LOOSE, VALUE_MARKER
from llmsite.problems import Problem

if TYPE_CHECKING:
    from llmsite.content.checks import Document
    from llmsite.content.checks.context import Context

_MARKER = MARKER  # the same pattern the build replaces
_LOOSE = re.compile(r"<!--\s*figure\b", re.I)
_EXAMPLE = "<!-- figure: 名字 -->"


def value_problems(doc: Document, ctx: Context) -> list[Problem]:
    text = doc.code  # the prose only: the build replaces a marker in a code block too (no article shows one)
    found = list(VALUE_MARKER.finditer(text))
    starts = {m.start() for m in found}
    out = [Problem(doc.path, line_at(text, m.start(), doc.first_line), "算出的数的标记格式不对，页面上会原样显示它",
                   "写成 {{ value:名字 }}（名字只用小写字母、数字和连字符，例如 {{ value:sft-loss }}）")
           for m in VALUE_LOOSE.finditer(text) if m.start() not in starts]
    figures = ctx.figures
    if found and figures.ok and doc.slug not in figures.values:
        module = f"code/figures/{doc.slug.replace('-', '_')}.py"
        out.append(Problem(doc.path, line_at(text, found[0].start(), doc.first_line),
                           f"{found[0].group(0)} 要一个计算出的数，可 {module} 里没有 @article_values 函数",
                           f"在 {module} 里写一个带 @article_values 的函数，返回 {{名字: 文中显示的文字}}"))
    return out


def check(doc: Document, ctx: Context) -> list[Problem]:
    out: list[Problem] = value_problems(doc, ctx)
    text = doc.code  # figure markers are HTML comments: only code is masked here
    found = list(_MARKER.finditer(text))
    starts = {m.start() for m in found}
    for m in _LOOSE.finditer(text):
        if m.start() not in starts:
            out.append(
                Problem(
                    doc.path,
                    line_at(text, m.start(), doc.first_line),
                    "图标记的格式不对，这张图不会显示",
                    f"单独占一行、顶格写成 {_EXAMPLE}（名字只用字母、数字和连字符）",
                )
            )
    if not found:
        return out
    figures = ctx.figures
    out += ctx.figure_problems_once()
    if not figures.ok:
        return out  # declarations unreadable: every name would look undeclared
    for m in found:
        name = m.group("name")
        if name not in figures.declared:
            known = "、".join(sorted(figures.declared)) or "（还没有）"
            out.append(
                Problem(
                    doc.path,
                    line_at(text, m.start(), doc.first_line),
                    f"未声明的图 {name}",
                    f'在 code/figures/ 下的某个 .py 文件中用 @figure("{name}", article="{doc.slug}", title=..., '
                    f"caption=...) 声明它，或改用已声明的图：{known}",
                )
            )
    return out
