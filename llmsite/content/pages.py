"""What the page templates may read about an article, the same for every builder.

- ``article_url``: where an article is published (directory URLs, as MkDocs and Zensical give them);
- ``template_values``: the article's values for the templates (plain strings, numbers, lists; escaped where they are
  HTML, because neither builder's templates autoescape), with links written relative to the page.
"""

from __future__ import annotations

from typing import Any

from markupsafe import escape

from llmsite.content import render
from llmsite.content.articles import ARTICLES_DIR, Article
from llmsite.features.files import relative_url


def article_url(article: Article) -> str:
    """An article's URL with directory URLs (``articles/<slug>/``), as both builders give it."""
    return f"{ARTICLES_DIR}/{article.slug}/"


def template_values(article: Article, page_url: str, following: Article | None = None) -> dict[str, Any]:
    """What the templates may read about an article: plain values, already escaped where they are HTML.
    ``page_url`` is the article's own directory URL; ``following`` is the next article of the route (the end of the
    article links to it)."""
    avatar = relative_url(article.author.avatar, page_url) if article.author.avatar else ""
    after = None
    if following is not None:
        after = {"url": relative_url(article_url(following), page_url), "title": str(escape(following.title))}
    return {
        "slug": article.slug,  # docs/articles/<slug>.md: checked to be [a-z0-9-]
        "title": str(escape(article.title)),
        "next": after,
        "description": str(escape(article.description)),
        "date": article.date.isoformat(),
        "author": str(escape(article.author.name)),
        "tags": [str(escape(tag)) for tag in article.tags],
        "comments": article.comments,
        "meta_html": render.meta_line(article, avatar_href=avatar),
    }
