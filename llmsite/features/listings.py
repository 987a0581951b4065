"""Generated listings: markers in pages replaced with Markdown built from the articles' front matter.

- ``<!-- site:latest -->``         newest articles (home page)
- ``<!-- site:route-overview -->`` the stages of the learning route (home page)
- ``<!-- site:article-list -->``   the article list, newest first, paginated
- ``<!-- site:route -->``          the full learning route
- ``<!-- site:route-pdf -->``      the link to the route's PDF (only when the plugin option ``pdf`` is on)

Pages 2..n of the article list are added as generated files (``articles/page/<n>.md``), never
written into docs/.

During the build the listings' raw HTML blocks (the cards, the route's lists) do not go through
Markdown: ``expand(..., defer=True)`` leaves a placeholder comment for each, which Python-Markdown
passes through, and ``fill`` (after Markdown, ``llmsite.extension``) puts the HTML back. With 1,000 articles this
saves parsing about 250 tags per listing page (1 s a build); the page is the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from llmsite.content import render
from llmsite.content.articles import Site
from llmsite.features.files import Generated
from llmsite.problems import BuildStop

MARKER = re.compile(r"^<!--\s*site:(?P<name>[\w-]+)(?:\s+(?P<arg>\d+))?\s*-->\s*$", re.M)
_PLACEHOLDER = "<!-- llmsite:raw {n} -->"


class Listings:
    def __init__(self, site: Site, per_page: int, latest: int, pdf: bool = False) -> None:
        self.site, self.per_page, self.latest, self.pdf = site, per_page, latest, pdf
        self._deferred: dict[str, dict[str, str]] = {}  # page -> placeholder -> its raw HTML block

    def plan(self) -> list[Generated]:
        """Pages 2..n of the article list."""
        files: list[Generated] = []
        for n in range(2, render.pages_count(self.site, self.per_page) + 1):
            content = (
                f"---\ntitle: 文章列表（第 {n} 页）\nsearch:\n  exclude: true\n---\n\n"
                f"<!-- site:article-list {n} -->\n"
            )
            files.append(Generated(render.page_uri(n), content=content))
        return files

    def expand(self, markdown: str, uri: str, *, defer: bool = False) -> str:
        """The page's Markdown with its markers replaced; with ``defer`` the raw HTML blocks wait for ``fill``."""
        if "<!--" not in markdown:
            return markdown
        site = self.site
        blocks: dict[str, str] = {}

        def deferred(block: str) -> str:
            placeholder = _PLACEHOLDER.format(n=len(blocks))
            blocks[placeholder] = block
            return placeholder

        raw = deferred if defer else render.itself
        if defer:
            self._deferred[uri] = blocks

        def replace(match: re.Match[str]) -> str:
            name, arg = match.group("name"), match.group("arg")
            if name == "latest":
                return render.latest(site, self.latest, uri, raw)
            if name == "route-overview":
                return render.route_overview(site, uri)
            if name == "article-list":
                return render.article_list(site, int(arg or 1), self.per_page, uri, raw)
            if name == "route":
                return render.route_page(site, uri, raw)
            if name == "route-pdf":
                return render.route_pdf(uri, self.pdf)
            raise BuildStop(f"{uri}: 未知的生成标记 site:{name}"
                              "（可用：latest、route-overview、article-list、route、route-pdf）")

        return MARKER.sub(replace, markdown)

    def fill(self, html: str, uri: str, rebase: Callable[[str], str] | None = None) -> str:
        """The page's HTML with the raw blocks that ``expand(..., defer=True)`` left out put back (each passed
        through ``rebase`` first when given: the Zensical adapter makes their links relative to the source)."""
        blocks = self._deferred.pop(uri, None)
        if not blocks:
            return html
        for placeholder, block in blocks.items():
            if (found := html.count(placeholder)) != 1:
                raise BuildStop(f"{uri}: 生成的列表没有原样出现在页面里（占位 {placeholder} 出现 {found} 次）")
            html = html.replace(placeholder, rebase(block) if rebase is not None else block)
        return html
