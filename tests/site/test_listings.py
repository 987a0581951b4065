"""The listings' raw HTML blocks skip Markdown during the build (llmsite.mkdocs.listings): same page, clear errors."""

from __future__ import annotations

import markdown
import pytest
from llmsite.problems import BuildStop

from llmsite.content.articles import load_site
from llmsite.features.listings import Listings

PAGES = {
    "index.md": "# 首页\n\n<!-- site:latest -->\n\n## 路线\n\n<!-- site:route-overview -->\n",
    "articles/index.md": "# 文章\n\n<!-- site:article-list -->\n",
    "route.md": "# 学习路线\n\n<!-- site:route -->\n",
}


@pytest.fixture(scope="module")
def listings() -> Listings:
    return Listings(load_site(), per_page=2, latest=3)


def _html(text: str) -> str:
    return markdown.Markdown(extensions=["md_in_html", "attr_list", "toc"]).convert(text)


@pytest.mark.parametrize("uri", sorted(PAGES))
def test_deferred_blocks_give_the_page_markdown_would(listings: Listings, uri: str) -> None:
    source = PAGES[uri]
    whole = listings.expand(source, uri)
    deferred = listings.expand(source, uri, defer=True)
    assert ("llm-card" in whole or "llm-route" in whole) and "llmsite:raw 0" in deferred
    assert "llm-card" not in deferred and "llm-route" not in deferred  # the bulk skips Markdown
    assert listings.fill(_html(deferred), uri) == _html(whole)


def test_a_lost_or_repeated_placeholder_stops_the_build_naming_the_page(listings: Listings) -> None:
    deferred = listings.expand(PAGES["route.md"], "route.md", defer=True)
    with pytest.raises(BuildStop, match=r"route\.md: .*llmsite:raw 0.* 0 次"):
        listings.fill(_html(deferred).replace("<!-- llmsite:raw 0 -->", ""), "route.md")
    deferred = listings.expand(PAGES["route.md"], "route.md", defer=True)
    doubled = _html(deferred).replace("<!-- llmsite:raw 0 -->", "<!-- llmsite:raw 0 --><!-- llmsite:raw 0 -->")
    with pytest.raises(BuildStop, match=r"route\.md: .* 2 次"):
        listings.fill(doubled, "route.md")
