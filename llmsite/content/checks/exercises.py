"""Exercise blocks (```` ```exercise ````): well formed, and naming answers and figures that exist.

The block itself is checked by ``llmsite.exercises.parse``; the names it uses against the declarations
in ``code/figures/`` (read by the figure registry, AST only) and the figure markers of the same page.
What needs the computed answer (a choice answer among the options) is checked when the page is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmsite import exercises
from llmsite.figures.registry import MARKER

if TYPE_CHECKING:
    from llmsite.content.checks import Document
    from llmsite.content.checks.context import Context
    from llmsite.problems import Problem


def check(doc: Document, ctx: Context) -> list[Problem]:
    if "exercise" not in doc.body:
        return []
    parsed = exercises.parse(doc.body, doc.first_line, doc.path)
    out = list(parsed.problems)
    if not parsed.exercises:
        return out
    figures = ctx.figures
    out += ctx.figure_problems_once()
    if not figures.ok:
        return out  # declarations unreadable: every answer would look undeclared
    markers = {m.group("name") for m in MARKER.finditer(doc.code)}
    return out + exercises.check_references(
        parsed.exercises, doc.path, module=module_of(doc.slug), answers=figures.answers, markers=markers,
        interactive=set(figures.interactive),
    )


def module_of(slug: str) -> str:
    """The figure module of an article (its answers are declared there): ``transformer-attention`` ->
    ``transformer_attention.py``."""
    return f"{slug.replace('-', '_')}.py"
