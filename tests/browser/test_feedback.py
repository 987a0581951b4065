"""Asking and correcting from an article (docs/assets/javascripts/feedback.js).

- Each ``h2`` of an article has exactly one 「提问」 link to a new GitHub Discussion (Q&A) whose decoded
  title and body carry the article title, the section and the page URL; other pages have none.
- After instant navigation the links are there once, not twice.
- Selecting text shows 「纠错」: a link to a new issue with the correction template, quote, section and URL;
  clearing the selection hides it. Long quotes are cut.
- The issue template exists with the front matter GitHub reads.

Hostile titles and headings are tested on the payload site (tests/security/test_payload_site.py).
"""

from __future__ import annotations

import html
import os
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import ROOT, follow_instantly, split_front_matter, wait_for_path, watched_page

pytestmark = pytest.mark.browser

ATTENTION, DECODING = "transformer-attention", "decoding"

# Runs in the page: every h2 of the article with the 提问 links right after it.
ASK_REPORT = """() => [...document.querySelectorAll('article h2')].filter(h => h.id !== '__comments').map(h => {
  const links = [];
  for (let n = h.nextElementSibling; n && n.tagName !== 'H2'; n = n.nextElementSibling) {
    if (n.matches('.llm-ask')) links.push(...[...n.querySelectorAll('a')].map(a => ({
      href: a.href, text: a.textContent, target: a.target, rel: a.rel})));
  }
  return {id: h.id, links};
})"""

# Select the text of the first paragraph after the h2 with this id; return the selected text.
SELECT = """(id) => {
  const h = document.getElementById(id);
  let p = h.nextElementSibling;
  while (p && p.tagName !== 'P' || p.matches('.llm-ask')) p = p.nextElementSibling;
  const range = document.createRange();
  range.selectNodeContents(p);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
  return sel.toString();
}"""


def repo_url(content) -> str:
    return (os.environ.get("REPO_URL") or content.config["repo_url"]).rstrip("/")


def headings(built_site, slug: str) -> list[tuple[str, str]]:
    """(id, text) of every h2 in the built article, read from its HTML."""
    text = (built_site.dir / "articles" / slug / "index.html").read_text(encoding="utf-8")
    found = re.findall(r'<h2 id="([^"]+)">(.*?)<a class="headerlink"', text)
    return [(html.unescape(i), html.unescape(re.sub(r"<[^>]+>", "", t)).strip()) for i, t in found]


def query(href: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(href)
    params = {k: v[0] for k, v in parse_qs(parts.query, strict_parsing=True).items()}
    return f"{parts.scheme}://{parts.netloc}{parts.path}", params


def wait_mounted(page) -> None:
    page.wait_for_selector("article .llm-ask a", state="attached")


def check_ask_links(page, built_site, content, slug: str) -> None:
    wait_mounted(page)
    title = content.articles[slug].title
    page_url = built_site.base_url + f"articles/{slug}/"
    expected = headings(built_site, slug)
    report = page.evaluate(ASK_REPORT)
    assert len(expected) >= 3 and [r["id"] for r in report] == [i for i, _ in expected]
    for (hid, text), item in zip(expected, report, strict=True):
        assert len(item["links"]) == 1, f"{slug} #{hid}: {len(item['links'])} 提问 links"
        link = item["links"][0]
        assert link["text"] == f"提问：{text}", link["text"]
        assert link["target"] == "_blank" and "noopener" in link["rel"].split()
        base, params = query(link["href"])
        assert base == repo_url(content) + "/discussions/new"
        assert params["category"] == "q-a"
        assert title in params["title"] and text in params["title"]
        for value in (title, text, page_url + "#" + hid):
            assert value in params["body"], (value, params["body"])
    assert page.locator("article .llm-ask").count() == len(expected)


def test_every_section_has_one_ask_link(page, site_server, built_site, content):
    page.goto(site_server + f"articles/{ATTENTION}/")
    check_ask_links(page, built_site, content, ATTENTION)


def test_without_javascript_the_empty_slots_take_no_room(browser, site_server, built_site):
    """The build writes an empty 「提问」 slot after every h2 and a hidden 「纠错」 slot (feedback.js fills them, so
    that nothing is inserted into <article>, issue 29). A reader without JavaScript sees neither: no box at all."""
    with watched_page(browser, built_site, java_script_enabled=False) as page:
        page.goto(site_server + f"articles/{ATTENTION}/")
        boxes = page.evaluate("""() => [...document.querySelectorAll('article .llm-ask, article .llm-fix')]
          .map(e => ({cls: e.className, empty: e.childNodes.length === 0, boxes: e.getClientRects().length}))""")
    assert len(boxes) == len(headings(built_site, ATTENTION)) + 1, boxes
    assert all(b["empty"] and b["boxes"] == 0 for b in boxes), boxes


@pytest.mark.parametrize("path", ["", "articles/", "route/", "tags/", "about/"])
def test_other_pages_have_no_feedback_links(page, site_server, path):
    page.goto(site_server + path)
    page.wait_for_load_state("load")
    page.wait_for_timeout(100)
    assert page.locator(".llm-ask, .llm-fix").count() == 0


def test_links_once_after_instant_navigation(page, site_server, built_site, content):
    page.goto(site_server + f"articles/{ATTENTION}/")
    wait_mounted(page)
    page.evaluate("() => { window.__noReload = true; }")
    # to the next article on the route, to the list, then to another article: all by instant navigation
    follow_instantly(page, page.locator("article a[rel=next]"))
    wait_mounted(page)
    page.locator("article a.llm-back").click()
    page.wait_for_url("**/articles/")
    page.locator(f"article a.llm-card__title[href*='{DECODING}']").click()
    wait_for_path(page, f"/articles/{DECODING}/")
    check_ask_links(page, built_site, content, DECODING)
    assert page.evaluate("() => window.__noReload === true"), "instant navigation fell back to a reload"
    assert page.locator(".llm-fix").count() == 1


def fix_link(page):
    return page.locator("article .llm-fix a")


def test_selection_offers_a_prefilled_correction(page, site_server, built_site, content):
    page.goto(site_server + f"articles/{ATTENTION}/")
    wait_mounted(page)
    assert not fix_link(page).is_visible()
    # before any selection it is already a real link (an <a> without href is no link: Lighthouse's SEO audit
    # "crawlable-anchors" failed on it), to the same template with the article's title
    base, params = query(fix_link(page).get_attribute("href"))
    assert base == repo_url(content) + "/issues/new" and params["template"] == "correction.md"
    assert params["title"] == f"[纠错] {content.articles[ATTENTION].title}"
    hid, text = headings(built_site, ATTENTION)[1]
    quote = page.evaluate(SELECT, hid).strip()
    assert quote
    fix = fix_link(page)
    fix.wait_for(state="visible")
    assert fix.text_content() == "纠错"
    assert fix.get_attribute("target") == "_blank" and fix.get_attribute("rel") == "noopener"
    base, params = query(fix.get_attribute("href"))
    assert base == repo_url(content) + "/issues/new"
    assert params["template"] == "correction.md"
    title = content.articles[ATTENTION].title
    assert params["title"] == f"[纠错] {title}：{text}"
    body = params["body"]
    assert "> " + quote.splitlines()[0] in body
    assert built_site.base_url + f"articles/{ATTENTION}/#{hid}" in body and f"小节：{text}" in body
    # reachable by keyboard: focusing it keeps the selection and the button
    fix.focus()
    assert page.evaluate("() => document.activeElement.textContent") == "纠错"
    assert fix.is_visible()
    # cleared selection: gone
    page.evaluate("() => window.getSelection().removeAllRanges()")
    fix.wait_for(state="hidden")


def test_long_quotes_are_cut_and_outside_selections_ignored(page, site_server, built_site, content):
    page.goto(site_server + f"articles/{ATTENTION}/")
    wait_mounted(page)
    page.evaluate("""() => {
      const r = document.createRange();
      r.selectNodeContents(document.querySelector('article'));
      r.setStartAfter(document.querySelector('.llm-article-header'));
      const s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
    }""")
    fix = fix_link(page)
    fix.wait_for(state="visible")
    href = fix.get_attribute("href")
    _, params = query(href)
    quoted = params["body"].split("## 原文\n\n", 1)[1].split("\n\n页面：", 1)[0]
    assert quoted.endswith("……")
    assert len(quoted.replace("\n> ", "\n").removeprefix("> ")) <= 300 + 2
    assert len(href) < 8000, len(href)
    # a selection outside the article (the site header) hides it
    page.evaluate("""() => {
      const r = document.createRange(); r.selectNodeContents(document.querySelector('.md-header__topic'));
      const s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
    }""")
    fix.wait_for(state="hidden")


def test_feedback_works_on_a_phone(browser, site_server, built_site, content):
    context = browser.new_context(viewport={"width": 375, "height": 740}, locale="zh-CN", color_scheme="dark",
                                  is_mobile=True, has_touch=True)
    try:
        pg = context.new_page()
        pg.goto(site_server + f"articles/{ATTENTION}/")
        wait_mounted(pg)
        link = pg.locator("article .llm-ask a").first
        box = link.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 375
        assert pg.evaluate("() => document.documentElement.scrollWidth") <= 375
        hid, _ = headings(built_site, ATTENTION)[0]
        pg.evaluate(SELECT, hid)
        fix = pg.locator("article .llm-fix a")
        fix.wait_for(state="visible")
        box = fix.bounding_box()
        assert box and box["x"] + box["width"] <= 375 and box["y"] + box["height"] <= 740
    finally:
        context.close()


def test_correction_issue_template():
    path = ROOT / ".github" / "ISSUE_TEMPLATE" / "correction.md"
    meta, body = split_front_matter(path.read_text(encoding="utf-8"))
    assert {"name", "about", "title", "labels"} <= set(meta)
    assert all(isinstance(meta[k], str) and meta[k].strip() for k in ("name", "about", "title"))
    assert isinstance(meta["labels"], list) and meta["labels"]
    assert re.search(r"[\u4e00-\u9fff]", meta["name"] + meta["about"] + body)
    assert "原文" in body and "应该怎么改" in body
