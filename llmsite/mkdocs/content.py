"""The articles' model in MkDocs: the route's stages in the sidebar, checks, previous / next, page values.

- ``nav_sections``: the notes section of the sidebar gets one collapsible section per stage of
  data/route.yml (with navigation.prune a page carries its own stage, not the whole site).
- ``load``: reads and checks every article once (front matter, authors, tags, route, snippets and
  the body checks of ``llmsite.content.checks``); a problem stops the build with ``file:line``
  messages, the same ones ``python -m llmsite check`` prints (under serve: the banner, ``banner.py``).
- ``link_neighbours``: previous / next follow the route, not the file order.
- ``page_values``: the article's values for the templates (``content/pages.py``, shared with Zensical), and the
  page's title and description as HTML-escaped text (``Markup``): MkDocs templates do not autoescape
  and Material prints both raw (header, sidebar, footer, ``<meta name="description">``, search).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup, escape
from mkdocs.exceptions import PluginError

from llmsite.content.articles import ARTICLES_DIR, Site, load_site
from llmsite.content.catalog import ROUTE_PAGE, load_route, route_section
from llmsite.content.memo import ArticleMemo
from llmsite.content.pages import template_values
from llmsite.problems import ContentError


def nav_sections(config: Any, root: Path) -> None:
    route, _ = load_route(root / "data" / "route.yml", root=root)  # problems are reported by load() with the rest
    section = route_section(config["nav"] or [])
    if section is None:
        raise PluginError(f"mkdocs.yml 的 nav 中找不到 {ROUTE_PAGE}，无法插入学习路线的各个阶段")
    groups: list[list[Any]] = [[] for _ in route.stages]
    for entry in route.entries:
        groups[entry.stage].append(f"{ARTICLES_DIR}/{entry.slug}.md")
        groups[entry.stage].extend(entry.labs)
    # stage titles come from data/route.yml: escaped like any contributor text
    section.extend({escape(stage.title): items} for stage, items in zip(route.stages, groups, strict=True))


def load(root: Path, serving: bool, memo: ArticleMemo | None = None) -> Site:
    """The site model; its problems stop ``mkdocs build`` (under serve they are shown in the pages instead).

    ``memo`` (kept across rebuilds by a long-running process) reuses unchanged articles' results.
    """
    site = load_site(root=root, memo=memo)
    if site.problems and not serving:
        raise PluginError(str(ContentError(site.problems)))
    return site


def link_neighbours(site: Site, nav: Any) -> None:
    pages = {page.file.src_uri: page for page in nav.pages}
    for article in site.articles.values():
        page = pages.get(article.src_uri)
        if page is None:
            continue
        prev = site.articles.get(article.prev or "")
        nxt = site.articles.get(article.next or "")
        page.previous_page = pages.get(prev.src_uri) if prev else None
        page.next_page = pages.get(nxt.src_uri) if nxt else None


def page_values(site: Site, page: Any) -> None:
    article = site.by_uri(page.file.src_uri)
    if article is not None:
        page.meta["article"] = template_values(article, page.url, site.articles.get(article.next or ""))
        page.meta["readtime"] = article.readtime
        page.meta["title"] = article.title
        page.meta["description"] = article.description
    for key in ("title", "description"):
        value = page.meta.get(key)
        if isinstance(value, str) and not isinstance(value, Markup):
            page.meta[key] = escape(value)  # page.title reads meta["title"]
