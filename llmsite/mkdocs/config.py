"""Typed options of the ``llmsite`` plugin (``plugins: - llmsite: {...}`` in mkdocs.yml)."""

from __future__ import annotations

from mkdocs.config import config_options as c
from mkdocs.config.base import Config


class SiteConfig(Config):
    articles_per_page = c.Type(int, default=20)  # the article list, paginated
    latest_on_home = c.Type(int, default=5)  # newest articles on the home page
    search_index_budget_kb = c.Type(int, default=0)  # gzip budget of the search index; 0: no budget
    figures = c.Type(bool, default=True)  # build-time figures; the benchmark turns them off to measure them
    content_security_policy = c.Type(bool, default=True)  # a CSP <meta> on every built page (not under serve)
    pdf = c.Type(bool, default=False)  # the route page links to downloads/llm-route.pdf (the deploy prints it)
