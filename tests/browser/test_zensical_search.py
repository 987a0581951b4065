"""Chinese search on the Zensical build (``python -m llmsite zensical``): Zensical's own search dialog, in Chromium.

The MkDocs build's search is checked in its index (``test_built_html.py``) and in the browser (``test_site.py``,
``test_search_defer.py``). Zensical writes its own ``search.json`` and searches it with its own dialog, so the
staged overrides leave out the Material search partial (``llmsite.zensical.stage.MATERIAL_ONLY``). Here a reader
opens the dialog, types a term, and a result leads to the article; nothing is requested from another host and no
console error occurs (``watched_page``).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import watched_page

pytestmark = pytest.mark.browser

# the terms test_built_html.py looks for in the MkDocs build's index, and the article they belong to
TERMS = [("transformer-attention", "注意力"), ("transformer-attention", "多头"), ("transformer-attention", "位置编码"),
         ("prompt-engineering", "提示")]


def _open_search(pg) -> None:
    """The header's search: a button on a wide screen, the magnifier icon on a phone."""
    button = pg.locator(".md-search__button")
    if button.is_visible():
        button.click()
    else:
        pg.locator("label.md-header__button[for='__search']").click()
    pg.locator("dialog[open]").wait_for()  # Zensical's dialog (in a shadow root: Playwright's locators look inside)


@pytest.mark.parametrize(("slug", "term"), TERMS)
def test_zensical_search_finds_a_chinese_term(browser, zensical_site, slug, term):
    with watched_page(browser, zensical_site, viewport={"width": 1280, "height": 900}) as pg:
        pg.goto(zensical_site.base_url + "articles/grpo/")
        _open_search(pg)
        pg.keyboard.type(term)
        found = pg.locator(f"dialog[open] a[href*='articles/{slug}/']").filter(has_text=term).first
        found.wait_for()
        assert term in found.inner_text()


def test_zensical_search_on_a_phone_leads_to_the_article(browser, zensical_site):
    with watched_page(browser, zensical_site, viewport={"width": 375, "height": 812}, color_scheme="dark") as pg:
        pg.goto(zensical_site.base_url)
        _open_search(pg)
        pg.keyboard.type("温度")
        pg.locator("dialog[open] a[href*='articles/decoding/']").first.click()
        pg.wait_for_url("**/articles/decoding/**")
        expect(pg.locator("article h1")).to_contain_text("解码")  # instant navigation swaps the content after the URL


def test_zensical_search_from_the_keyboard(browser, zensical_site):
    with watched_page(browser, zensical_site, viewport={"width": 1280, "height": 900}) as pg:
        pg.goto(zensical_site.base_url + "articles/grpo/")
        pg.locator(".md-search__button").focus()
        pg.keyboard.press("Enter")
        pg.locator("dialog[open]").wait_for()
        pg.keyboard.type("位置编码")
        pg.locator("dialog[open] a[href*='articles/']").first.wait_for()
        pg.keyboard.press("ArrowDown")
        pg.keyboard.press("Enter")
        pg.wait_for_url("**/articles/**?h=*")
        expect(pg.locator("article h1")).not_to_contain_text("GRPO")  # left the page the search was opened on
        expect(pg.locator("article")).to_contain_text("位置编码")
