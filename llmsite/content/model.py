"""One article as the site knows it once read (``Article``), below both ``articles.py``, which makes it, and
``memo.py``, which remembers it between calls."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from llmsite.content.catalog import Author

ARTICLES_DIR = "articles"


@dataclass
class Article:
    slug: str
    src_uri: str  # relative to docs/, e.g. "articles/transformer-attention.md"
    title: str
    description: str
    author: Author
    date: dt.date
    tags: list[str]
    readtime: int
    comments: bool = True
    labs: list[str] = field(default_factory=list)
    stage: int = 0
    position: int = 0  # index in the route order
    prev: str | None = None
    next: str | None = None

    @property
    def url(self) -> str:
        """Site-relative URL with directory URLs (``articles/<slug>/``)."""
        return f"{ARTICLES_DIR}/{self.slug}/"
