"""Figure markers ``<!-- figure: NAME -->`` must name a figure declared in code/figures/.

Declarations are read by ``llmsite.figures.registry.discover`` (AST only, no
import of the drawing code), the same reader the figure pipeline uses.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from llmsite.content.checks.text import line_at
from llmsite.figures.registry import MARKER
from llmsite.problems import Problem

if TYPE_CHECKING:
    from llmsite.content.checks import Document
    from llmsite.content.checks.context import Context, Figures

_MARKER = MARKER  # the same pattern the build replaces
_LOOSE = re.compile(r"<!--\s*figure\b", re.I)
_EXAMPLE = "<!-- figure: 名字 -->"


def discover(ctx: Context) -> Figures:
    from llmsite.content.checks.context import Figures, problem_from_located
    from llmsite.figures.registry import DeclarationError
    from llmsite.figures.registry import discover as registry_discover

    where = ctx.rel(ctx.code / "figures")
    from llmsite.figures.registry import discover_answers

    try:
        specs = registry_discover(ctx.code)
        answers = discover_answers(ctx.code)
    except DeclarationError as exc:
        return Figures({}, [problem_from_located(str(exc), where, ctx.root)], ok=False)
    except SyntaxError as exc:
        path = ctx.rel(ctx.root / exc.filename) if exc.filename else where
        return Figures(
            {}, [Problem(path, exc.lineno or 1, f"Python 语法错误：{exc.msg}", "先修正这个文件的语法")], ok=False
        )
    except (OSError, UnicodeDecodeError) as exc:
        return Figures({}, [Problem(where, 1, f"读不出图的声明：{exc}")], ok=False)
    return Figures(
        {name: spec.article for name, spec in specs.items()}, [], ok=True,
        interactive=frozenset(name for name, spec in specs.items() if spec.data_function),
        answers={name: spec.module.name for name, spec in answers.items()},
    )


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
