"""Accepted-but-tricky values in every plain-text field, built into a real site.

One strict build of a scratch copy whose article titles, descriptions, author name and bio,
a tag, and a stage title and summary hold the ACCEPTED payloads. Then:

- every ``.html`` output parses with no element or attribute that a payload could have
  injected (``<mask>``, ``<t>``, ``onmouseover``, ``onfocus``, ``autofocus``, ``data-x`` …);
- every ``.xml`` output is well-formed and holds the payload as text;
- every ``.json`` output parses, and the search index holds titles as escaped HTML (Material
  renders search results as HTML);
- in Chromium, no page sets ``window.__xss`` (also after hovering and focusing every element
  that shows a payload), and each article's heading shows its title exactly as written;
- the 「提问」 and 「纠错」 links (feedback.js) carry the hostile title and section heading, decoded,
  exactly as written, and build their DOM without parsing any of it.
"""

from __future__ import annotations

import contextlib
import html.parser
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, guard_timeouts
from tests.security.payloads import ACCEPTED

ARTICLE_SLUG = "transformer-attention"
SECOND_SLUG = "prompt-engineering"
# Names an injected element or attribute would have; none may appear in any page.
INJECTED_TAGS = {"mask", "t"}
INJECTED_ATTRS = {"onmouseover", "onfocus", "autofocus", "data-x", "data-y"}

TITLE = ACCEPTED["angle-words"]
DESCRIPTION = ACCEPTED["double-quote-breakout"]
SECOND_TITLE = ACCEPTED["ampersand-and-comparisons"]
SECOND_DESCRIPTION = ACCEPTED["single-quote-breakout"]
AUTHOR_NAME = ACCEPTED["markdown-syntax"][:60]
AUTHOR_BIO = ACCEPTED["json-breakout"]
STAGE_TITLE = ACCEPTED["jinja-syntax"]
STAGE_SUMMARY = ACCEPTED["double-quote-breakout"]
# A section heading in the article (Markdown text: no raw tags, which the checks would treat as HTML).
HEADING = ACCEPTED["json-breakout"] + " 1 < 2 && 3 > 2"
# An exercise (llmsite/exercises/) whose Markdown holds payloads; a tag-like "<mask>" is refused there with file:line
# (tests/exercises/test_render.py), so these are the ones that must build and stay text.
EXERCISE = (
    "\n```exercise\nid: payload-exercise\nkind: concept\nquestion: {q}\nexplanation: {e}\noptions:\n"
    "  - text: {a}\n    correct: true\n    why: {w}\n  - text: {b}\n    why: {h}\n```\n"
)


def _yaml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def _set_key(text: str, key: str, value: str) -> str:
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(f"{key}:"):
            lines[i] = f"{key}: {_yaml(value)}\n"
            return "".join(lines)
    raise AssertionError(f"no {key}: line")


@dataclass
class PayloadSite:
    root: Path
    site: Path
    output: str


@pytest.fixture(scope="module")
def payload_site(tmp_path_factory: pytest.TempPathFactory, built_site) -> PayloadSite:
    """A strict build of a copy of the repository with payloads in every plain-text field.

    Depends on ``built_site`` so the figure and lab caches are warm: the copy has the same
    code, so its figures and labs come from the cache.
    """
    root = tmp_path_factory.mktemp("payload") / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.ipynb")
    for folder in ("docs", "data", "code", "labs", "llmsite", "scripts", "overrides"):
        shutil.copytree(ROOT / folder, root / folder, ignore=ignore)
    shutil.copy2(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    if (ROOT / "node_modules").exists():
        (root / "node_modules").symlink_to(ROOT / "node_modules")
    cache = Path(os.environ.get("LLM_SITE_CACHE", ROOT / ".cache"))
    if cache.is_dir():
        shutil.copytree(cache, root / ".cache", symlinks=True)

    art = root / "docs" / "articles" / f"{ARTICLE_SLUG}.md"
    text = _set_key(art.read_text(encoding="utf-8"), "title", TITLE)
    text = _set_key(text, "description", DESCRIPTION)
    exercise = EXERCISE.format(q=_yaml(DESCRIPTION), e=_yaml(ACCEPTED["markdown-syntax"]), a=_yaml(SECOND_DESCRIPTION),
                               w=_yaml(AUTHOR_BIO), b=_yaml(STAGE_TITLE), h=_yaml(HEADING))
    art.write_text(text.rstrip("\n") + f"\n\n## {HEADING}\n\n这一节的标题来自安全测试。\n" + exercise, encoding="utf-8")
    second = root / "docs" / "articles" / f"{SECOND_SLUG}.md"
    text = _set_key(second.read_text(encoding="utf-8"), "title", SECOND_TITLE)
    second.write_text(_set_key(text, "description", SECOND_DESCRIPTION), encoding="utf-8")
    authors = root / "data" / "authors.yml"
    text = authors.read_text(encoding="utf-8")
    text = text.replace("  name: guohua\n", f"  name: {_yaml(AUTHOR_NAME)}\n")
    text = text.replace("  bio: ", f"  bio: {_yaml(AUTHOR_BIO)}\n  # bio was: ", 1)
    authors.write_text(text, encoding="utf-8")
    route = root / "data" / "route.yml"
    text = route.read_text(encoding="utf-8")
    first_stage = next(line for line in text.splitlines() if line.startswith("  - title: "))
    first_summary = next(line for line in text.splitlines() if line.startswith("    summary: "))
    text = text.replace(first_stage, f"  - title: {_yaml(STAGE_TITLE)}", 1)
    text = text.replace(first_summary, f"    summary: {_yaml(STAGE_SUMMARY)}", 1)
    route.write_text(text, encoding="utf-8")

    site = root / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LLM_SITE_CACHE": str(root / ".cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root, env=env, capture_output=True, text=True, encoding="utf-8", timeout=900, check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the payload site did not build:\n{output}"
    return PayloadSite(root, site, output)


@pytest.fixture(scope="module")
def payload_zensical(payload_site: PayloadSite) -> PayloadSite:
    """The same payload copy built with Zensical (``python -m llmsite zensical``; its caches are the copy's, warm)."""
    site = payload_site.root / "site-zensical"
    env = {**os.environ, "LLM_SITE_CACHE": str(payload_site.root / ".cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "llmsite", "zensical", "--out", str(site)],
        cwd=payload_site.root, env=env, capture_output=True, text=True, encoding="utf-8", timeout=900, check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the payload site did not build with Zensical:\n{output}"
    return PayloadSite(payload_site.root, site, output)


@pytest.fixture(params=["mkdocs", "zensical"])
def any_payload_site(request) -> PayloadSite:
    """The payload copy as MkDocs builds it and as Zensical builds it (llmsite/zensical/)."""
    return request.getfixturevalue("payload_site" if request.param == "mkdocs" else "payload_zensical")


class _Collector(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self.title_text = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs.update(name for name, _ in attrs)
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_text += data


def _assert_no_markup(texts: list[str]) -> None:
    """Each text (rendered as HTML by a search) holds no element or attribute a payload could have injected."""
    for t in texts:
        parser = _Collector()
        parser.feed(t)
        assert not parser.tags & INJECTED_TAGS and not parser.attrs & INJECTED_ATTRS, t


def _outputs(site: Path, suffix: str) -> list[Path]:
    return sorted(p for p in site.rglob(f"*{suffix}") if p.is_file())


@pytest.mark.slow
def test_no_payload_becomes_markup_in_any_html_page(any_payload_site: PayloadSite) -> None:
    payload_site = any_payload_site
    pages = _outputs(payload_site.site, ".html")
    assert len(pages) >= 8
    landed = 0
    for path in pages:
        text = path.read_text(encoding="utf-8")
        parser = _Collector()
        parser.feed(text)
        rel = path.relative_to(payload_site.site)
        assert not parser.tags & INJECTED_TAGS, f"{rel}: injected element {parser.tags & INJECTED_TAGS}"
        assert not parser.attrs & INJECTED_ATTRS, f"{rel}: injected attribute {parser.attrs & INJECTED_ATTRS}"
        landed += text.count("XSS")
    assert landed > 20, "the payloads did not reach the pages at all: the test would prove nothing"


@pytest.mark.slow
def test_the_title_element_shows_the_title_as_written(any_payload_site: PayloadSite) -> None:
    payload_site = any_payload_site
    parser = _Collector()
    parser.feed((payload_site.site / "articles" / ARTICLE_SLUG / "index.html").read_text(encoding="utf-8"))
    assert parser.title_text.startswith(TITLE + " - "), parser.title_text


class _Meta(html.parser.HTMLParser):
    """The content of each <meta name=...> / <meta property=...> of a page, as a browser or a crawler reads it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.content: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            found = dict(attrs)
            key = found.get("name") or found.get("property")
            if key and found.get("content") is not None:
                self.content.setdefault(key, []).append(found["content"] or "")


@pytest.mark.slow
def test_the_description_meta_tags_hold_the_description_as_written(any_payload_site: PayloadSite) -> None:
    # one level of escaping: a second one would show "&amp;" or "&quot;" in a share card
    parser = _Meta()
    parser.feed((any_payload_site.site / "articles" / ARTICLE_SLUG / "index.html").read_text(encoding="utf-8"))
    assert parser.content.get("og:description") == [DESCRIPTION], parser.content.get("og:description")
    assert parser.content.get("description") == [DESCRIPTION], parser.content.get("description")
    assert parser.content.get("og:title") == [TITLE], parser.content.get("og:title")


@pytest.mark.slow
def test_xml_outputs_are_well_formed_and_hold_the_text(any_payload_site: PayloadSite) -> None:
    payload_site = any_payload_site
    feed = payload_site.site / "feed.xml"
    root = ET.parse(feed).getroot()
    ns = {"a": "http://www.w3.org/2005/Atom"}
    titles = [e.text for e in root.findall("a:entry/a:title", ns)]
    summaries = [e.text for e in root.findall("a:entry/a:summary", ns)]
    names = [e.text for e in root.findall("a:entry/a:author/a:name", ns)]
    assert TITLE in titles and SECOND_TITLE in titles
    assert DESCRIPTION in summaries and SECOND_DESCRIPTION in summaries
    assert AUTHOR_NAME in names
    for path in _outputs(payload_site.site, ".xml"):
        ET.parse(path)  # raises on malformed XML


@pytest.mark.slow
def test_json_outputs_parse_and_search_titles_are_escaped_html(payload_site: PayloadSite) -> None:
    for path in _outputs(payload_site.site, ".json"):
        json.loads(path.read_text(encoding="utf-8"))
    index = json.loads((payload_site.site / "search" / "search_index.json").read_text(encoding="utf-8"))
    titles = [doc.get("title", "") for doc in index["docs"]]
    assert any("&lt;mask&gt;" in t for t in titles), "the article's title is missing from the search index"
    _assert_no_markup(titles)


@contextlib.contextmanager
def _served(payload_site: PayloadSite, browser):
    """(base URL, browser context): the payload site on its own local server; requests elsewhere are refused."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(payload_site.site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
    context.route("**/*", lambda route: route.abort() if not route.request.url.startswith(base)
                  else route.continue_())
    try:
        yield base, context
    finally:
        context.close()
        httpd.shutdown()
        httpd.server_close()


# Fire the events an injected handler would wait for, on every element showing a payload.
_POKE = """() => {
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.includes("XSS"));
    const attr = [...el.attributes].some(a => a.value.includes("XSS"));
    if (!own && !attr) continue;
    for (const type of ["mouseover", "mouseenter", "focus", "focusin"]) el.dispatchEvent(new Event(type));
  }
}"""


@pytest.mark.slow
def test_zensical_search_titles_hold_no_markup(payload_zensical: PayloadSite) -> None:
    index = json.loads((payload_zensical.site / "search.json").read_text(encoding="utf-8"))
    titles = [item.get("title", "") for item in index["items"]]
    assert any("mask" in t for t in titles), "the article's title is missing from Zensical's search index"
    _assert_no_markup(titles)


@pytest.mark.slow
@pytest.mark.browser
def test_no_payload_runs_in_the_zensical_site(payload_zensical: PayloadSite, browser) -> None:
    """Every page of the Zensical build in Chromium, payloads poked; the title as written; its search dialog (in a
    shadow root) shows the hostile title as text."""
    with _served(payload_zensical, browser) as (base, context):
        pg = context.new_page()
        guard_timeouts(pg)
        for rel in [p.relative_to(payload_zensical.site).as_posix() for p in _outputs(payload_zensical.site,
                                                                                         "index.html")]:
            pg.goto(base + rel.removesuffix("index.html"))
            pg.evaluate(_POKE)
            assert pg.evaluate("window.__xss") is None, rel
            assert pg.evaluate("document.querySelectorAll('mask, t').length") == 0, rel
        pg.goto(base + f"articles/{ARTICLE_SLUG}/")
        assert pg.locator("article h1").first.inner_text().strip() == TITLE
        assert pg.title().startswith(TITLE)
        pg.locator(".md-search__button").click()
        pg.locator("dialog[open]").wait_for()
        pg.keyboard.type("mask")
        found = pg.locator(f"dialog[open] a[href*='articles/{ARTICLE_SLUG}/']").first
        found.wait_for()
        assert pg.locator("dialog[open] mask").count() == 0 and pg.evaluate("window.__xss") is None


@pytest.mark.slow
@pytest.mark.browser
def test_no_payload_runs_in_the_browser(payload_site: PayloadSite, browser) -> None:
    with _served(payload_site, browser) as (base, context):
        pg = context.new_page()
        guard_timeouts(pg)
        pages = [p.relative_to(payload_site.site).as_posix() for p in _outputs(payload_site.site, "index.html")]
        for rel in pages:
            url = base + rel.removesuffix("index.html")
            pg.goto(url)
            # hover and focus whatever shows a payload, so injected handlers would fire
            pg.evaluate(_POKE)
            assert pg.evaluate("window.__xss") is None, f"a payload ran on {url}"
            assert pg.evaluate("document.querySelectorAll('mask, t').length") == 0, url
        pg.goto(base + f"articles/{ARTICLE_SLUG}/")
        assert pg.locator("article h1").first.inner_text().strip() == TITLE
        assert pg.title().startswith(TITLE)
        # the exercise with payloads, answered: its options and reasons are text, its check runs no payload
        pg.locator("#ex-payload-exercise label").first.click()
        pg.locator("#ex-payload-exercise button").click()
        assert pg.locator("#ex-payload-exercise .llm-ex__result").inner_text().startswith("答对了")
        assert pg.locator("#ex-payload-exercise label").first.inner_text().strip() == "A. " + SECOND_DESCRIPTION
        assert pg.evaluate("window.__xss") is None
        # search renders results as HTML: the escaped title must show as text there too
        pg.goto(base + "?q=mask")
        pg.wait_for_selector(".md-search-result__item", state="attached")
        assert pg.evaluate("window.__xss") is None
        assert pg.evaluate("document.querySelectorAll('.md-search-result mask').length") == 0


_ASK = """(id) => {
  const h = document.getElementById(id);
  const a = h.nextElementSibling.querySelector('a');
  const p = h.nextElementSibling.nextElementSibling;
  const r = document.createRange(); r.selectNodeContents(p);
  const s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
  return {ask: a.href, text: a.textContent, spans: h.nextElementSibling.querySelectorAll('*').length};
}"""


@pytest.mark.slow
@pytest.mark.browser
def test_feedback_links_carry_hostile_text_exactly(payload_site: PayloadSite, browser) -> None:
    from urllib.parse import parse_qs, urlsplit

    errors: list[str] = []
    with _served(payload_site, browser) as (base, context):
        pg = context.new_page()
        pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        pg.on("pageerror", lambda err: errors.append(str(err)))
        guard_timeouts(pg)
        pg.goto(base + f"articles/{ARTICLE_SLUG}/")
        pg.wait_for_selector("article .llm-ask a", state="attached")
        hid = pg.evaluate("(t) => [...document.querySelectorAll('article h2')]"
                          ".find(h => h.firstChild && h.firstChild.textContent === t).id", HEADING)
        got = pg.evaluate(_ASK, hid)
        assert got["text"] == f"提问：{HEADING}" and got["spans"] == 2  # the link and its hidden span, nothing parsed
        ask = {k: v[0] for k, v in parse_qs(urlsplit(got["ask"]).query, strict_parsing=True).items()}
        assert ask["title"] == f"{TITLE}：{HEADING}"
        page_url = base + f"articles/{ARTICLE_SLUG}/#{hid}"
        assert ask["body"].startswith(f"文章：{TITLE}\n小节：{HEADING}\n页面：{page_url}\n"), ask["body"]
        fix = pg.locator("article .llm-fix a")
        fix.wait_for(state="visible")
        issue = {k: v[0] for k, v in parse_qs(urlsplit(fix.get_attribute("href")).query, strict_parsing=True).items()}
        assert issue["title"] == f"[纠错] {TITLE}：{HEADING}"
        assert f"页面：{page_url}\n小节：{HEADING}\n" in issue["body"]
        assert pg.evaluate("window.__xss") is None
        assert pg.evaluate("document.querySelectorAll('mask, t').length") == 0
        assert errors == []
