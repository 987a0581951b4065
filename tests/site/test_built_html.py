"""Checks on the built HTML (one strict build per session, see tests/conftest.py).

Expected values come from the sources (docs/, data/, code/, mkdocs.yml), never
from the built site itself.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
import xml.etree.ElementTree as ET
from functools import cache
from html import unescape
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from bs4 import BeautifulSoup

from llmsite.content import readtime

ROOT = Path(__file__).resolve().parents[2]
ARTICLE_SLUGS = sorted(p.stem for p in (ROOT / "docs" / "articles").glob("*.md") if p.name != "index.md")
REFERENCE = Path("/work/shared/reference/transformer-attention-seed.txt")
ATTENTION, PROMPT = "transformer-attention", "prompt-engineering"

# Reading speed promised on the about page: about 300 汉字 and 200 words or code tokens a minute.
HANZI_PER_MINUTE, WORDS_PER_MINUTE = 300, 200
READTIME = re.compile(r"(\d+)\s*分钟阅读")


# --------------------------------------------------------------------------- helpers


@cache
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@cache
def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(_read(path), "html.parser")


class Site:
    """The built site: pages by URL, links resolved the way a browser resolves them."""

    def __init__(self, built) -> None:
        self.dir: Path = built.dir
        self.base: str = built.base_url

    def file(self, url: str) -> Path:
        path = self.dir / unquote(url)
        return path / "index.html" if url == "" or url.endswith("/") else path

    def soup(self, url: str) -> BeautifulSoup:
        path = self.file(url)
        assert path.is_file(), f"no page for /{url} in the built site ({path} missing)"
        return _soup(path)

    def main(self, url: str):
        """The page's content (Material's ``article.md-content__inner``)."""
        main = self.soup(url).select_one("article.md-content__inner")
        assert main is not None, f"/{url}: no article.md-content__inner"
        return main

    def resolve(self, from_url: str, href: str) -> tuple[str | None, str]:
        """(site-relative URL or None for another site, unquoted fragment)."""
        absolute = urljoin(self.base + from_url, href)
        parts = urlsplit(absolute)
        no_frag = absolute.split("#", 1)[0]
        if not no_frag.startswith(self.base):
            return None, unquote(parts.fragment)
        return unquote(no_frag[len(self.base) :]), unquote(parts.fragment)

    def links(self, from_url: str, element) -> list[tuple[str | None, str, object]]:
        return [(*self.resolve(from_url, a["href"]), a) for a in element.find_all("a", href=True)]

    def html_files(self) -> list[Path]:
        return sorted(self.dir.rglob("*.html"))

    def url_of(self, path: Path) -> str:
        rel = path.relative_to(self.dir).as_posix()
        return rel.removesuffix("index.html")


# The same checks on the Zensical build (llmsite/zensical/), where they apply: a test that asks for ``mkdocs_site``
# instead of ``site`` checks something the Zensical build does not do yet (ARCHITECTURE.md lists them).
@pytest.fixture(scope="module", params=["mkdocs", "zensical"])
def site(request) -> Site:
    return Site(request.getfixturevalue("built_site" if request.param == "mkdocs" else "zensical_site"))


@pytest.fixture(scope="module")
def mkdocs_site(built_site) -> Site:
    return Site(built_site)


def text_of(element) -> str:
    return " ".join(element.get_text(" ").split())


def squash(text: str) -> str:
    return " ".join(text.split())


def _is_hanzi(ch: str) -> bool:
    return unicodedata.name(ch, "").startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH"))


_INCLUDE = re.compile(r"""^\s*-+8<-+\s+(["'])(?P<target>[^"']+)\1\s*$""")
_MARKER = re.compile(r"--8<--\s*\[(?P<kind>start|end):(?P<name>[\w-]+)\]")


def code_section(path: str, name: str | None) -> str:
    """The named section of a file in the repository, marker lines removed."""
    lines = _read(ROOT / path).splitlines()
    if name is None:
        return "\n".join(line for line in lines if not _MARKER.search(line))
    out, inside = [], False
    for line in lines:
        m = _MARKER.search(line)
        if m:
            if m["name"] == name:
                inside = m["kind"] == "start"
            continue
        if inside:
            out.append(line)
    assert out, f"{path} has no section [{name}]"
    return "\n".join(out)


def includes(body: str) -> list[tuple[str, str | None]]:
    found = []
    for line in body.splitlines():
        m = _INCLUDE.match(line)
        if m:
            path, _, section = m["target"].partition(":")
            found.append((path, section or None))
    return found


def expand_snippets(body: str) -> str:
    out = []
    for line in body.splitlines():
        m = _INCLUDE.match(line)
        if m:
            path, _, section = m["target"].partition(":")
            out.append(code_section(path, section or None))
        else:
            out.append(line)
    return "\n".join(out)


def independent_count(text: str) -> tuple[int, int]:
    """(汉字, words/code tokens) of Markdown as a reader sees it, counted without llmsite.

    Comments (figure markers), tags and link targets are not read; a word is a run
    of ASCII letters, digits and ``_``, possibly joined by ``.`` or ``'`` (``nn.Module``).
    """
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"<[^>]+>", " ", text)
    hanzi = sum(1 for ch in text if _is_hanzi(ch))
    latin = "".join(" " if _is_hanzi(ch) else ch for ch in text)
    words = 0
    for chunk in re.split(r"[^A-Za-z0-9_.']+", latin):
        # split at . or ' unless both neighbours are word characters
        pieces = re.split(r"(?<![A-Za-z0-9_])[.']|[.'](?![A-Za-z0-9_])", chunk)
        words += sum(1 for p in pieces if re.search(r"[A-Za-z0-9_]", p))
    return hanzi, words


def independent_minutes(text: str) -> int:
    hanzi, words = independent_count(text)
    return max(1, math.ceil(hanzi / HANZI_PER_MINUTE + words / WORDS_PER_MINUTE - 1e-9))


def tag_sections(site: Site) -> dict[str, tuple[str, list[str]]]:
    """Tags page: tag name -> (anchor id, article URLs listed under it)."""
    main = site.main("tags/")
    out: dict[str, tuple[str, list[str]]] = {}
    for h in main.find_all(["h2", "h3"]):
        chip = h.find(class_="md-tag")
        if chip is None or not h.get("id"):
            continue
        listed = []
        for sib in h.find_next_siblings():
            if sib.name in ("h2", "h3"):
                break
            listed += [u for u, _, _ in site.links("tags/", sib) if u and u.startswith("articles/")]
        out[text_of(chip)] = (h["id"], listed)
    return out


def check_tag_chips(site: Site, url: str, element, tags: list[str], where: str) -> None:
    sections = tag_sections(site)
    chips = element.select("a.md-tag")
    assert sorted(text_of(c) for c in chips) == sorted(tags), f"{where}: tag chips differ from the front matter"
    for chip in chips:
        target, fragment = site.resolve(url, chip["href"])
        name = text_of(chip)
        assert target == "tags/", f"{where}: chip {name} links to {chip['href']}, not to the tags page"
        assert name in sections, f"{where}: tag {name} has no section on the tags page"
        assert fragment == sections[name][0], (
            f"{where}: chip {name} links to #{fragment}, the tags page has it at #{sections[name][0]}"
        )
        assert site.soup("tags/").find(id=fragment) is not None, f"tags page has no id {fragment!r}"


def article_cards(site: Site, url: str) -> list[tuple[str, object]]:
    """(article slug, card element) for each article card on a listing page."""
    cards = []
    for card in site.main(url).select("article.llm-card"):
        targets = [u for u, _, _ in site.links(url, card) if u and re.fullmatch(r"articles/[a-z0-9-]+/", u)]
        assert targets, f"/{url}: a card without a link to an article: {text_of(card)[:80]}"
        cards.append((targets[0].split("/")[1], card))
    return cards


def check_card(site: Site, url: str, slug: str, card, content) -> None:
    art = content.articles[slug]
    where = f"/{url} card {slug}"
    text = text_of(card)
    title_links = [a for u, _, a in site.links(url, card) if u == art.url]
    assert any(text_of(a) == art.title for a in title_links), f"{where}: no title link {art.title!r}"
    assert art.description in text, f"{where}: summary missing"
    m = READTIME.search(text)
    assert m, f"{where}: no 「N 分钟阅读」"
    assert int(m.group(1)) == expected_minutes(art), f"{where}: reading time {m.group(1)}"
    assert art.author_name in text, f"{where}: author {art.author_name} missing"
    times = card.find_all("time")
    assert [t.get("datetime") for t in times] == [art.date.isoformat()], f"{where}: <time datetime> wrong"
    assert art.date.isoformat() in text, f"{where}: ISO date not shown"
    check_tag_chips(site, url, card, art.tags, where)


def expected_minutes(art) -> int:
    if art.meta.get("readtime"):
        return int(art.meta["readtime"])
    return readtime.minutes(expand_snippets(art.body))


# --------------------------------------------------------------------------- article pages


def test_every_article_source_is_found():
    assert ARTICLE_SLUGS, "no articles in docs/articles/"
    assert ATTENTION in ARTICLE_SLUGS and PROMPT in ARTICLE_SLUGS


@pytest.mark.parametrize("slug", ARTICLE_SLUGS)
def test_article_header(site, content, slug):
    art = content.articles[slug]
    main = site.main(art.url)
    header = main.find("header")
    assert header is not None, f"{art.url}: no article header"
    h1 = main.find_all("h1")
    assert len(h1) == 1 and h1[0] in header.find_all("h1"), f"{art.url}: exactly one h1, in the header"
    assert text_of(h1[0]).removesuffix("¶").strip() == art.title
    head_text = text_of(header)
    assert any(text_of(p) == art.description for p in header.find_all("p")), f"{art.url}: summary missing"
    meta_description = site.soup(art.url).find("meta", attrs={"name": "description"})
    assert meta_description is not None and meta_description["content"] == art.description
    m = READTIME.findall(head_text)
    assert len(m) == 1, f"{art.url}: expected one 「N 分钟阅读」 in the header, found {m}"
    assert art.author_name in head_text, f"{art.url}: author {art.author_name} missing"
    times = header.find_all("time")
    assert len(times) == 1 and times[0].get("datetime") == art.date.isoformat() == text_of(times[0])
    check_tag_chips(site, art.url, header, art.tags, f"{art.url} header")
    # the avatar, when the author has one, is a local file
    for img in header.find_all("img"):
        target, _ = site.resolve(art.url, img["src"])
        assert target is not None and site.file(target).is_file(), f"avatar {img['src']} missing"


@pytest.mark.parametrize("slug", ARTICLE_SLUGS)
def test_article_readtime(site, content, slug):
    art = content.articles[slug]
    shown = int(READTIME.search(text_of(site.main(art.url).find("header"))).group(1))
    expanded = expand_snippets(art.body)
    if art.meta.get("readtime"):
        assert shown == art.meta["readtime"], "front matter readtime is not what the page shows"
        return
    # the production function on the source, with the snippets expanded by this test
    assert shown == readtime.minutes(expanded), f"{slug}: page shows {shown}, readtime.minutes gives another value"
    # and an independent count of the same text
    hanzi, words = independent_count(expanded)
    counted = readtime.count(expanded)
    assert counted.hanzi == hanzi, f"{slug}: llmsite counts {counted.hanzi} 汉字, this test {hanzi}"
    assert counted.words == words, f"{slug}: llmsite counts {counted.words} words, this test {words}"
    assert shown == independent_minutes(expanded), f"{slug}: {hanzi} 汉字 + {words} words is not {shown} minutes"
    # the included code counts: the page would be shorter without it
    if includes(art.body):
        assert independent_count(expanded)[1] > independent_count(art.body)[1]


def _synthetic_reference() -> str:
    chars = "注意力机制把查询与键的相似度变成权重再对值加权求和模型因此能看到整段上下文"
    hanzi = "".join(chars[i % len(chars)] for i in range(1340))
    words = " ".join(["attention", "query", "key", "value", "softmax"] * 60)  # 300 words
    paragraphs = [hanzi[i : i + 134] for i in range(0, 1340, 134)]
    return "\n\n".join(p + " " + " ".join(words.split()[j * 30 : (j + 1) * 30]) for j, p in enumerate(paragraphs))


def test_readtime_calibration():
    """About 1,340 汉字 and 300 words read in 6 minutes (the owner's reference page)."""
    synthetic = _synthetic_reference()
    assert independent_count(synthetic) == (1340, 300)
    assert independent_minutes(synthetic) == 6
    assert readtime.minutes(synthetic) == 6
    if REFERENCE.is_file():
        text = REFERENCE.read_text(encoding="utf-8")
        assert independent_minutes(text) == 6, independent_count(text)
        assert readtime.minutes(text) == 6
        assert "6 分钟阅读" in text  # what the owner's page shows


# --------------------------------------------------------------------------- previous / next


def test_prev_next_follow_route(site, content):
    order = content.route_order
    assert sorted(order) == sorted(content.articles), "route.yml and docs/articles/ disagree"
    for i, slug in enumerate(order):
        url = f"articles/{slug}/"
        soup = site.soup(url)
        prev = order[i - 1] if i > 0 else None
        nxt = order[i + 1] if i + 1 < len(order) else None
        for rel, expected in (("prev", prev), ("next", nxt)):
            want = f"articles/{expected}/" if expected else None
            head = [site.resolve(url, link["href"])[0] for link in soup.find_all("link", rel=rel)]
            assert head == ([want] if want else []), f"{slug}: <link rel={rel}> is {head}, expected {want}"
            footer = [site.resolve(url, a["href"])[0] for a in soup.select(f"a.md-footer__link--{rel}")]
            assert footer == ([want] if want else []), f"{slug}: footer {rel} link is {footer}, expected {want}"
        end = site.main(url).select_one(".llm-article-end__next")
        assert end is not None, f"{slug}: no .llm-article-end__next"
        end_links = [u for u, _, _ in site.links(url, end)]
        if nxt:
            assert end_links == [f"articles/{nxt}/"], f"{slug}: 下一篇 is {end_links}, expected {nxt}"
            assert content.articles[nxt].title in text_of(end)
        else:
            # the last article links to no next article, only to how to contribute one
            assert end_links == ["about/"], f"{slug} is last in the route but links to {end_links}"
            assert [a["href"].split("#", 1)[1] for a in end.find_all("a")] == ["参与贡献"]
            assert site.soup("about/").find(id="参与贡献") is not None


@pytest.mark.parametrize("slug", ARTICLE_SLUGS)
def test_article_end_links(site, slug):
    url = f"articles/{slug}/"
    links = site.links(url, site.main(url))
    back = [u for u, _, a in links if text_of(a) == "← 返回文章列表"]
    assert back and all(u == "articles/" for u in back), f"{slug}: 「← 返回文章列表」 links to {back}"
    assert any(u == "route/" for u, _, _ in links), f"{slug}: no link to the route page"


# --------------------------------------------------------------------------- listings


def _list_pages(site: Site) -> list[str]:
    numbered = sorted(
        (int(p.parent.name), f"articles/page/{p.parent.name}/")
        for p in (site.dir / "articles" / "page").glob("*/index.html")
        if p.parent.name.isdigit()
    )
    return ["articles/", *(u for _, u in numbered)]


def test_article_list(site, content):
    pages = _list_pages(site)
    per_page = content.site_setting("articles_per_page", 20)
    assert len(pages) == max(1, math.ceil(len(content.articles) / per_page)), f"list pages: {pages}"
    assert [u for u in pages if u != "articles/"] == [f"articles/page/{n}/" for n in range(2, len(pages) + 1)]
    seen: list[str] = []
    for url in pages:
        cards = article_cards(site, url)
        assert len(cards) <= per_page, f"/{url}: {len(cards)} cards, more than {per_page}"
        for slug, card in cards:
            check_card(site, url, slug, card, content)
        seen += [slug for slug, _ in cards]
        if len(pages) > 1:  # the pager reaches every other page
            reached = {u for u, _, _ in site.links(url, site.main(url))}
            assert set(pages) - {url} <= reached, f"/{url}: pager does not link every page"
    assert sorted(seen) == sorted(content.articles), f"list holds {seen}, expected each article once"
    assert len(seen) == len(set(seen)), f"an article is listed twice: {seen}"
    dates = [content.articles[s].date for s in seen]
    assert dates == sorted(dates, reverse=True), "article list is not newest first"
    assert seen == [a.slug for a in content.newest()]


def test_home_page(site, content):
    latest = content.site_setting("latest_on_home", 5)
    cards = article_cards(site, "")
    expected = [a.slug for a in content.newest()][:latest]
    assert [slug for slug, _ in cards] == expected, "home page does not list the newest articles, newest first"
    for slug, card in cards:
        check_card(site, "", slug, card, content)
    targets = {u for u, _, _ in site.links("", site.main(""))}
    assert "route/" in targets, "home page has no link to the route page"
    assert "articles/" in targets, "home page has no link to the article list"


def test_route_page(site, content):
    main = site.main("route/")
    h2 = main.find_all("h2")
    titles = [text_of(h).removesuffix("¶").strip() for h in h2]
    assert titles == [t for t, _ in content.stages], f"route page stages {titles}"
    all_linked: list[str] = []
    for h, (title, slugs) in zip(h2, content.stages, strict=True):
        linked = []
        for sib in h.find_next_siblings():
            if sib.name == "h2":
                break
            for u, _, a in site.links("route/", sib):
                if u and re.fullmatch(r"articles/[a-z0-9-]+/", u):
                    slug = u.split("/")[1]
                    linked.append(slug)
                    item = a.find_parent("li") or a.parent
                    minutes = expected_minutes(content.articles[slug])
                    assert f"{minutes} 分钟阅读" in text_of(item), f"route: reading time of {slug} in {text_of(item)}"
                    assert text_of(a) == content.articles[slug].title
        assert linked == slugs, f"stage {title}: lists {linked}, route.yml has {slugs}"
        all_linked += linked
    assert sorted(all_linked) == sorted(content.articles) and len(all_linked) == len(set(all_linked))


def test_the_route_is_four_stages_with_stage_two_between(site, content):
    """Issue #27: stage 2 (from the small GPT to a modern model) sits between the Transformer basics and the rest;
    stage 3 (alignment, opened by the evaluation article) comes before using models (the route page and 下一篇
    follow data/route.yml: test_route_page, test_prev_next_follow_route)."""
    titles = [text_of(h).removesuffix("¶").strip() for h in site.main("route/").find_all("h2")]
    assert len(titles) == 4 and titles[1] == "第二阶段：从小 GPT 到现代大模型", titles
    assert titles[2:] == ["第三阶段：对齐：从会写诗到写好诗", "第四阶段：用好大模型"], titles
    assert content.stages[0][1][-1] == "decoding" and content.stages[1][1][:2] == ["bpe-tokenizer", "llama-block"]
    assert content.stages[2][1][0] == "evaluation"


def test_tags_page(site, content):
    sections = tag_sections(site)
    used: dict[str, list[str]] = {}
    for art in content.articles.values():
        for tag in art.tags:
            used.setdefault(tag, []).append(art.url)
    assert set(sections) == set(used), f"tags page lists {sorted(sections)}, articles use {sorted(used)}"
    for tag, urls in used.items():
        anchor, listed = sections[tag]
        assert sorted(listed) == sorted(urls), f"tag {tag}: lists {listed}, expected {urls}"
        assert anchor.startswith("tag:"), f"tag {tag}: anchor {anchor!r}"


def test_no_unrendered_markup(site):
    """Generated or written Markdown must not show up as raw text (e.g. ``[标签](../tags.md)``)."""
    raw_link = re.compile(r"\[[^\]\n]+\]\([^)\s]+\)")
    problems = []
    for path in site.html_files():
        url = site.url_of(path)
        soup = BeautifulSoup(_read(path), "html.parser")  # a private copy: code blocks are removed below
        main = soup.select_one("article.md-content__inner")
        if main is None:
            continue
        for el in main.find_all(["pre", "code"]):
            el.decompose()
        text = main.get_text(" ")
        problems += [f"/{url}: {m}" for m in raw_link.findall(text)]
        problems += [f"/{url}: marker {m}" for m in re.findall(r"<!--\s*site:[^>]*-->", _read(path))]
    assert not problems, "raw Markdown in the built pages:\n" + "\n".join(problems)


def test_figure_markers_replaced(site, content):
    """Each ``<!-- figure: name -->`` in an article becomes a figure with a light and a dark image."""
    problems = []
    for art in content.articles.values():
        markers = re.findall(r"<!--\s*figure:\s*([\w-]+)\s*-->", art.body)
        if not markers:
            continue
        html = _read(site.file(art.url))
        left = re.findall(r"<!--\s*figure:\s*([\w-]+)\s*-->", html)
        if left:
            problems.append(f"{art.url}: figure markers left as comments: {left}")
        figures = site.main(art.url).find_all("figure")
        if len(figures) < len(markers):
            problems.append(f"{art.url}: {len(markers)} figure markers, {len(figures)} <figure> elements")
        for fig in figures:
            srcs = [img.get("src", "") for img in fig.find_all("img")]
            if not any(s.endswith("#only-light") for s in srcs) or not any(s.endswith("#only-dark") for s in srcs):
                problems.append(f"{art.url}: figure without a light and a dark image: {srcs}")
            for src in srcs:
                target, _ = site.resolve(art.url, src)
                if target is None or not site.file(target).is_file():
                    problems.append(f"{art.url}: image {src} missing")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- search


def _search_index(site: Site) -> dict:
    """The search index as Material writes it (``search/search_index.json``); Zensical's ``search.json`` holds the
    same entries (location, title, text) under ``items``."""
    material = site.dir / "search" / "search_index.json"
    if material.is_file():
        return json.loads(_read(material))
    zensical = json.loads(_read(site.dir / "search.json"))
    return {"docs": zensical["items"], "config": zensical["config"]}


def _tokens(index: dict, text: str) -> list[str]:
    return [t for t in re.split(index["config"]["separator"], unescape(re.sub(r"<[^>]+>", " ", text))) if t]


def _searchable(tokens: list[str], term: str) -> bool:
    """The term is a token, or a run of consecutive tokens that spell it (jieba may split 位置编码)."""
    for i in range(len(tokens)):
        joined = ""
        for t in tokens[i:]:
            joined += t
            if joined == term:
                return True
            if not term.startswith(joined):
                break
    return False


@pytest.mark.parametrize(("slug", "terms"), [(ATTENTION, ["注意力", "多头", "位置编码"]), (PROMPT, ["提示"])])
def test_search_index_has_chinese_terms(mkdocs_site, content, slug, terms):  # Zensical: test_zensical_search.py
    site = mkdocs_site
    index = _search_index(site)
    entries = [d for d in index["docs"] if d["location"].split("#")[0] == f"articles/{slug}/"]
    assert entries, f"no search entries for articles/{slug}/"
    titles = [d["title"].replace("\u200b", "") for d in entries if "#" not in d["location"]]
    assert titles == [content.articles[slug].title], f"page entry titles {titles}"
    tokens = [t for d in entries for t in _tokens(index, d["title"]) + _tokens(index, d["text"])]
    plain = "".join(d["title"] + d["text"] for d in entries).replace("\u200b", "")
    for term in terms:
        assert term in plain, f"{term} not in the search entries of {slug}"
        assert _searchable(tokens, term), f"{term} is not a token (or run of tokens) in the index of {slug}"


def test_chinese_heading_anchors_are_readable(site, content):
    index = _search_index(site)
    anchors = 0
    for slug in content.articles:
        url = f"articles/{slug}/"
        for h in site.main(url).find_all(["h2", "h3", "h4"]):
            title = text_of(h).removesuffix("¶").strip()
            hid = h.get("id", "")
            hanzi = [ch for ch in title if _is_hanzi(ch)]
            if not hanzi:
                continue
            anchors += 1
            assert not re.fullmatch(r"_?\d+", hid), f"{url}: heading {title!r} has id {hid!r}"
            assert [ch for ch in hid if _is_hanzi(ch)] == hanzi, f"{url}: id {hid!r} for heading {title!r}"
        for d in index["docs"]:
            loc = d["location"]
            if loc.startswith(url + "#"):
                frag = unquote(loc.split("#", 1)[1])
                assert site.soup(url).find(id=frag) is not None, f"search location {loc} has no target"
                assert not re.fullmatch(r"_?\d+", frag), f"search location {loc}"
    assert anchors, "no Chinese headings found in the articles"


# --------------------------------------------------------------------------- assets and hosts


_ASSET_ATTRS = {"src", "srcset", "poster", "data"}


def _urls_in_srcset(value: str) -> list[str]:
    return [part.strip().split()[0] for part in value.split(",") if part.strip()]


def _is_third_party(site: Site, url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return False
    if not parts.scheme and not parts.netloc:
        return False  # relative
    return not url.startswith(site.base)


def test_no_third_party_assets(site):
    problems, missing = [], []
    for path in site.html_files():
        url = site.url_of(path)
        soup = _soup(path)
        refs: list[tuple[str, str]] = []
        for el in soup.find_all(True):
            for attr in _ASSET_ATTRS & set(el.attrs):
                values = _urls_in_srcset(el[attr]) if attr == "srcset" else [el[attr]]
                refs += [(f"<{el.name} {attr}>", v) for v in values]
            if el.name == "link" and el.get("href"):
                rels = {r.lower() for r in el.get("rel", [])}
                if "canonical" not in rels:
                    refs.append((f"<link rel={'/'.join(sorted(rels))}>", el["href"]))
            style = el.get("style", "")
            refs += [(f"<{el.name} style>", u) for u in re.findall(r"url\(\s*['\"]?([^'\")]+)", style)]
        for style in soup.find_all("style"):
            refs += [("<style>", u) for u in re.findall(r"url\(\s*['\"]?([^'\")]+)", style.get_text())]
            refs += [("<style> @import", u) for u in re.findall(r"@import\s+['\"]([^'\"]+)", style.get_text())]
        for kind, ref in refs:
            if _is_third_party(site, ref):
                problems.append(f"/{url}: {kind} {ref}")
            elif kind.startswith(("<script", "<img", "<link rel=stylesheet", "<link rel=icon")):
                target, _ = site.resolve(url, ref)
                if target is not None and not site.file(target.split("?")[0]).is_file():
                    missing.append(f"/{url}: {kind} {ref}")
    for css in site.dir.rglob("*.css"):
        text = _read(css)
        for ref in re.findall(r"url\(\s*['\"]?([^'\")]+)", text) + re.findall(r"@import\s+['\"]([^'\"]+)", text):
            if urlsplit(ref).scheme in ("http", "https") or ref.startswith("//"):
                problems.append(f"{css.relative_to(site.dir)}: {ref}")
    assert not problems, "third-party assets referenced:\n" + "\n".join(problems)
    assert not missing, "local assets referenced but not in the site:\n" + "\n".join(missing)


def test_local_fonts_exist(site):
    """Every @font-face in the site's CSS can be served from the site (at least its woff2)."""
    problems = []
    for css in site.dir.rglob("*.css"):
        for face in re.findall(r"@font-face\s*{([^}]*)}", _read(css)):
            urls = re.findall(r"url\(\s*['\"]?([^'\")]+)", face)
            local = [u for u in urls if not urlsplit(u).scheme and not u.startswith("//")]
            if local and not any((css.parent / u.split("?")[0].split("#")[0]).is_file() for u in local):
                problems.append(f"{css.relative_to(site.dir)}: no file for {local}")
    assert not problems, "\n".join(problems)


def test_no_google_fonts_anywhere(site):
    offenders = []
    suffixes = (".html", ".css", ".js", ".json", ".xml", ".txt", ".svg", ".map")
    for path in site.dir.rglob("*"):
        if path.is_file() and path.suffix in suffixes and re.search(r"fonts\.(googleapis|gstatic)", _read(path)):
            offenders.append(str(path.relative_to(site.dir)))
    assert not offenders, f"Google Fonts referenced in {offenders}"


# --------------------------------------------------------------------------- code and sitemap


def test_included_code_appears_in_page(site, content):
    checked = 0
    for art in content.articles.values():
        incs = includes(art.body)
        if not incs:
            continue
        main = site.main(art.url)
        page_text = squash(unescape(re.sub(r"<[^>]+>", "", str(main))))
        assert "--8<--" not in page_text, f"{art.url}: snippet markers visible"
        for path, section in incs:
            code = squash(code_section(path, section))
            assert code, f"{path}:{section} is empty"
            assert code in page_text, f"{art.url}: the code of {path}:{section} is not in the page"
            checked += 1
    attention_includes = includes(content.articles[ATTENTION].body)
    assert attention_includes, "the attention article includes no code from code/"
    assert all(p.startswith("code/") for p, _ in attention_includes)
    assert checked >= len(attention_includes)


def test_sitemap(site, content):
    path = site.dir / "sitemap.xml"
    assert path.is_file(), "no sitemap.xml"
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    locs = [el.text.strip() for el in ET.parse(path).getroot().findall("s:url/s:loc", ns)]
    assert locs, "sitemap.xml lists no URLs"
    assert all(loc.startswith(site.base) for loc in locs), f"sitemap URLs outside {site.base}: {locs}"
    for art in content.articles.values():
        assert site.base + art.url in locs, f"{art.url} not in sitemap.xml"
    assert site.base in locs


_PLAIN = re.compile(r"[^*`$|\[\]<>{}_\\]{1,6}$")  # prose before a marker, with no Markdown that the page would change


def test_each_computed_number_is_in_its_page(site: Site) -> None:
    """Every ``{{ value:name }}`` of an article reads, in the built page, as what the article's @article_values
    function computes on this machine (``answers.value_of``), after the words written before it; no marker
    is left in any page."""
    from llmsite.figures import answers, registry

    specs = registry.discover_values()
    assert specs, "no article declares @article_values: this test checks nothing"
    for slug, spec in specs.items():
        values = answers.value_of(spec)  # what the session's build cached, else computed here
        assert isinstance(values, dict)
        page = squash(text_of(site.main(f"articles/{slug}/")))
        source = _read(ROOT / "docs" / "articles" / f"{slug}.md")
        found = 0
        for number, line in enumerate(source.splitlines(), 1):
            for m in registry.VALUE_MARKER.finditer(line):
                found += 1
                before = _PLAIN.search(line[: m.start()].split("}}")[-1])
                expected = squash((before.group(0) if before else "") + values[m.group("name")])
                assert expected in page, f"docs/articles/{slug}.md:{number}: 「{expected}」 is not in the page"
        assert found, f"docs/articles/{slug}.md has no value marker, yet {spec.where} declares @article_values"
        shown = {m.group("name") for text in (source, _read(spec.module)) for m in registry.VALUE_MARKER.finditer(text)}
        unused = sorted(set(values) - shown)
        assert not unused, f"{spec.where} computes {unused}, which no sentence or caption of {slug} shows"
    left = [site.url_of(p) for p in site.html_files() if "{{ value:" in p.read_text(encoding="utf-8")]
    assert not left, f"value markers left in {left}"
