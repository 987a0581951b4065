"""Checks of an article's Markdown body, one module per concern.

Each module has ``check(doc, ctx) -> list[Problem]``; ``check_document`` runs
them all. ``llmsite.content.articles.load_site`` calls it for every article, so
``python -m llmsite check``, the MkDocs build and CI report the same problems.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from llmsite.content.checks import exercises, html, images, links, typography
from llmsite.content.checks import markers as figures
from llmsite.content.checks.context import Context
from llmsite.content.checks.text import mask_code, mask_comments, mask_math, mask_urls
from llmsite.problems import Problem

__all__ = ["CHECKS", "Context", "Document", "check_document"]


@dataclass
class Document:
    """One article body and its masked views (computed once, shared by the checks)."""

    path: str  # as shown in messages, relative to the repository root
    file: Path
    body: str  # the Markdown after the front matter
    first_line: int  # file line of the body's first line

    @property
    def slug(self) -> str:
        return self.file.stem

    @cached_property
    def code(self) -> str:
        """Code blocks and inline code masked."""
        return mask_code(self.body)

    @cached_property
    def markup(self) -> str:
        """Code and HTML comments masked: what the HTML and link checks read."""
        return mask_comments(self.code)

    @cached_property
    def markup_nomath(self) -> str:
        return mask_math(self.markup)

    @cached_property
    def prose(self) -> str:
        """Only the prose left: code, comments, math and URLs masked."""
        return mask_urls(self.markup_nomath)


Check = Callable[[Document, Context], list[Problem]]
CHECKS: tuple[Check, ...] = (html.check, images.check, links.check, figures.check, exercises.check,
                             typography.check)


def check_document(doc: Document, ctx: Context) -> list[Problem]:
    out: list[Problem] = []
    for check in CHECKS:
        out += check(doc, ctx)
    return out
