"""Figure markers ``<!-- figure: NAME -->`` must name a figure declared in code/figures/.

The declarations come from ``Context.figures`` (read in ``declarations.py``, AST only, no
import of the drawing code, by the same reader the figure pipeline uses).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from llmsite.content.checks.text import line_at
from llmsite.figures.registry import MARKER
from llmsite.problems import Problem

if TYPE_CHECKING:
    from llmsite.content.checks import Document
    from llmsite.content.checks.context import Context

_MARKER = MARKER  # the same pattern the build replaces
_LOOSE = re.compile(r"<!--\s*figure\b", re.I)
_EXAMPLE = "<!-- figure: 名字 -->"


def check(doc: Document, ctx: Context) -> list[Problem]:
    out: list[Problem] = []
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
