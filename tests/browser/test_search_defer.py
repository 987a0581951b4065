"""The search index is downloaded when the reader first opens search, not on page load (search-defer.js).

Material's bundle requests ``search/search_index.json`` as soon as it starts; ``search-defer.js`` runs before it,
holds that one request and sends it when the search box is focused, the search toggle is opened (the phone's
search button), or a keyboard shortcut opens search. Each test counts the requests the browser really made."""

from __future__ import annotations

import pytest

from .test_site import ATTENTION, RESULT_LINKS, SEARCH

pytestmark = pytest.mark.browser

INDEX = "search/search_index.json"


def index_requests(page) -> list[str]:
    return [url for url in page.log.requests if url.split("?")[0].endswith(INDEX)]


def settle(page) -> None:
    """Page loaded, network quiet: anything requested on load has been requested."""
    page.wait_for_load_state("networkidle")


def search_for(page, query: str, slug: str) -> None:
    page.fill(SEARCH, query)
    page.press(SEARCH, "End")  # Material searches on keyup
    page.wait_for_function(
        """([sel, path]) => [...document.querySelectorAll(sel)].some(a => new URL(a.href).pathname.endsWith(path))""",
        arg=[RESULT_LINKS, f"/articles/{slug}/"],
    )


def test_an_article_loads_without_the_index_and_search_still_works(page, site_server):
    page.goto(site_server + f"articles/{ATTENTION}/")
    settle(page)
    assert index_requests(page) == [], "the index was downloaded before the reader opened search"
    assert page.evaluate("() => document.documentElement.dataset.llmSearchIndex") == "deferred"
    # XMLHttpRequest is Material's own again once the one request is held
    assert page.evaluate("() => XMLHttpRequest.prototype.send.toString().includes('[native code]')")
    assert page.evaluate("() => XMLHttpRequest.prototype.open.toString().includes('[native code]')")
    page.click(SEARCH)
    search_for(page, "注意力", ATTENTION)
    assert len(index_requests(page)) == 1


def test_the_phone_search_button_starts_the_download(page, site_server):
    page.set_viewport_size({"width": 375, "height": 812})
    page.goto(site_server)
    settle(page)
    assert index_requests(page) == []
    page.click('label.md-header__button[for="__search"]')
    page.wait_for_function("() => document.documentElement.dataset.llmSearchIndex === 'requested'")
    search_for(page, "温度", "decoding")
    assert len(index_requests(page)) == 1


def test_the_keyboard_shortcut_starts_the_download(page, site_server):
    page.goto(site_server + "articles/")
    settle(page)
    assert index_requests(page) == []
    page.keyboard.press("/")  # Material's shortcut: opens search and focuses the box
    page.wait_for_function("(sel) => document.activeElement && document.activeElement.matches(sel)", arg=SEARCH)
    page.keyboard.type("残差")
    page.wait_for_function(
        "([sel]) => [...document.querySelectorAll(sel)].some(a => a.href.includes('/articles/transformer-block/'))",
        arg=[RESULT_LINKS],
    )
    assert len(index_requests(page)) == 1


def test_a_shared_search_link_loads_the_index_at_once(page, site_server):
    page.goto(site_server + "?q=" + "多头")
    page.wait_for_function(
        "([sel, path]) => [...document.querySelectorAll(sel)].some(a => new URL(a.href).pathname.endsWith(path))",
        arg=[RESULT_LINKS, f"/articles/{ATTENTION}/"],
    )
    assert len(index_requests(page)) == 1


def test_the_index_is_downloaded_once_across_instant_navigation(page, site_server):
    page.goto(site_server)
    settle(page)
    page.click(SEARCH)
    search_for(page, "提示", "prompt-engineering")
    page.click(RESULT_LINKS)  # Material's instant navigation: the bundle and its worker stay
    page.wait_for_url("**/articles/prompt-engineering/**")
    page.click(SEARCH)
    search_for(page, "缓存", "decoding")
    assert len(index_requests(page)) == 1, index_requests(page)
