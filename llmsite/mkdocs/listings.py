"""Generated listings: markers in pages replaced with Markdown built from the articles' front matter.

- ``<!-- site:latest -->``         newest articles (home page)
- ``<!-- site:route-overview -->`` the stages of the learning route (home page)
- ``<!-- site:article-list -->``   the article list, newest first, paginated
- ``<!-- site:route -->``          the full learning route

Pages 2..n of the article list are added as generated files (``articles/page/<n>.md``), never
written into docs/.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

from llmsite.content import render
from llmsite.content.articles import Site

MARKER = re.compile(r"^<!--\s*site:(?P<name>[\w-]+)(?:\s+(?P<arg>\d+))?\s*-->\s*$", re.M)


class Listings:
    def __init__(self, site: Site, per_page: int, latest: int) -> None:
        self.site, self.per_page, self.latest = site, per_page, latest

    def add_pages(self, files: Any, config: Any) -> None:
        for n in range(2, render.pages_count(self.site, self.per_page) + 1):
            content = (
                f"---\ntitle: 文章列表（第 {n} 页）\nsearch:\n  exclude: true\n---\n\n"
                f"<!-- site:article-list {n} -->\n"
            )
            files.append(File.generated(config, render.page_uri(n), content=content))

    def expand(self, markdown: str, uri: str) -> str:
        if "<!--" not in markdown:
            return markdown
        site = self.site

        def replace(match: re.Match[str]) -> str:
            name, arg = match.group("name"), match.group("arg")
            if name == "latest":
                return render.latest(site, self.latest, uri)
            if name == "route-overview":
                return render.route_overview(site, uri)
            if name == "article-list":
                return render.article_list(site, int(arg or 1), self.per_page, uri)
            if name == "route":
                return render.route_page(site, uri)
            raise PluginError(f"{uri}: 未知的生成标记 site:{name}（可用：latest、route-overview、article-list、route）")

        return MARKER.sub(replace, markdown)
