"""MkDocs hook: the articles' model.

- on_config: builds the sidebar of the notes section from data/route.yml,
  one collapsible section per stage (with navigation.prune a page carries its
  own stage, not the whole site).
- on_files: reads and validates every article once (front matter schema,
  authors, tags, route, snippets, and the body checks of sitelib/checks/:
  HTML, images, links and anchors, figure markers, Chinese typography); any
  problem stops the build with ``file:line`` messages, the same ones that
  ``scripts/check_content.py`` prints.
- on_nav: previous / next follow the route, not the file order.
- on_page_markdown: attaches the article model to the page for templates and
  makes the page's title and description HTML-escaped text (``Markup``): MkDocs
  templates do not autoescape and Material prints both raw (header, sidebar,
  footer, ``<meta name="description">``, tag listings, the search index).
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

from sitelib import state
from sitelib.articles import ARTICLES_DIR, load_site
from sitelib.catalog import load_route
from sitelib.problems import ContentError

ROUTE_PAGE = "route.md"


def _route_section(nav: list[Any]) -> list[Any] | None:
    """The nav list that holds the route page (the notes section)."""
    for item in nav:
        if isinstance(item, dict):
            for value in item.values():
                if isinstance(value, list):
                    if ROUTE_PAGE in [v if isinstance(v, str) else next(iter(v.values()), None)
                                      for v in value if isinstance(v, (str, dict))]:
                        return value
                    found = _route_section(value)
                    if found is not None:
                        return found
    return None


def on_config(config: Any) -> Any:
    route, _ = load_route()  # problems are reported from on_files with the rest
    section = _route_section(config["nav"] or [])
    if section is None:
        raise PluginError("mkdocs.yml 的 nav 中找不到 route.md，无法插入学习路线的各个阶段")
    groups: list[list[Any]] = [[] for _ in route.stages]
    for entry in route.entries:
        groups[entry.stage].append(f"{ARTICLES_DIR}/{entry.slug}.md")
        groups[entry.stage].extend(entry.labs)
    # stage titles come from data/route.yml: escaped like any contributor text
    section.extend({escape(stage.title): items} for stage, items in zip(route.stages, groups, strict=True))
    return config


@event_priority(100)  # before other hooks and plugins read the files
def on_files(files: Any, config: Any) -> Any:
    site = load_site()
    if site.problems:
        raise PluginError(str(ContentError(site.problems)))
    state.set_site(site)
    return files


def on_nav(nav: Any, config: Any, files: Any) -> Any:
    site = state.site()
    pages = {page.file.src_uri: page for page in nav.pages}
    for article in site.articles.values():
        page = pages.get(article.src_uri)
        if page is None:
            continue
        prev = site.articles.get(article.prev or "")
        nxt = site.articles.get(article.next or "")
        page.previous_page = pages.get(prev.src_uri) if prev else None
        page.next_page = pages.get(nxt.src_uri) if nxt else None
    return nav


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    article = state.site().by_uri(page.file.src_uri)
    if article is not None:
        page.meta["article"] = article
        page.meta["readtime"] = article.readtime
        page.meta["title"] = article.title
        page.meta["description"] = article.description
    for key in ("title", "description"):
        value = page.meta.get(key)
        if isinstance(value, str) and not isinstance(value, Markup):
            page.meta[key] = escape(value)  # page.title reads meta["title"]
    return markdown
