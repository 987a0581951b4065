"""MkDocs hook: generated listings.

Pages hold markers that this hook replaces with Markdown built from the
articles' front matter (never hand-maintained):

- ``<!-- site:latest -->``        newest articles (home page)
- ``<!-- site:route-overview -->`` the stages of the learning route (home page)
- ``<!-- site:article-list -->``  the article list, newest first, paginated
- ``<!-- site:route -->``         the full learning route

Pages 2..n of the article list are added as generated files
(``articles/page/<n>.md``), never written into docs/.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

from sitelib import render, state

_MARKER = re.compile(r"^<!--\s*site:(?P<name>[\w-]+)(?:\s+(?P<arg>\d+))?\s*-->\s*$", re.M)


def _settings(config: Any) -> dict[str, int]:
    extra = (config.get("extra") or {}).get("site") or {}
    return {
        "per_page": int(extra.get("articles_per_page", 20)),
        "latest": int(extra.get("latest_on_home", 5)),
    }


def on_files(files: Any, config: Any) -> Any:
    site = state.site()
    total = render.pages_count(site, _settings(config)["per_page"])
    for n in range(2, total + 1):
        content = (
            f"---\ntitle: 文章列表（第 {n} 页）\nsearch:\n  exclude: true\n---\n\n"
            f"<!-- site:article-list {n} -->\n"
        )
        files.append(File.generated(config, render.page_uri(n), content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if "<!--" not in markdown:
        return markdown
    site, settings, uri = state.site(), _settings(config), page.file.src_uri

    def replace(match: re.Match[str]) -> str:
        name, arg = match.group("name"), match.group("arg")
        if name == "latest":
            return render.latest(site, settings["latest"], uri)
        if name == "route-overview":
            return render.route_overview(site, uri)
        if name == "article-list":
            return render.article_list(site, int(arg or 1), settings["per_page"], uri)
        if name == "route":
            return render.route_page(site, uri)
        raise PluginError(
            f"{page.file.src_uri}: 未知的生成标记 site:{name}（可用：latest、route-overview、article-list、route）"
        )

    return _MARKER.sub(replace, markdown)
