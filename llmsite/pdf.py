"""The learning route as one PDF, printed by headless Chromium from the built site.

    python -m llmsite pdf [--site site] [--out site/downloads/llm-route.pdf]

Why Chromium's print-to-PDF (through Playwright, which the tests already drive): the PDF is made from the very
pages readers see (Material's stylesheets, the build-time KaTeX HTML, the light palette's SVG figures, Pygments'
code), with Chinese fonts embedded by the browser and PDF bookmarks from the headings. mkdocs-print-site-plugin
would be a second MkDocs plugin that rebuilds every page into one, and WeasyPrint renders neither Material's CSS
nor KaTeX's the way a browser does.

The book: a cover, a table of contents with page numbers (two passes: Chromium writes one bookmark per article
heading, pypdf reads on which page each landed, and the contents are printed again with those numbers), then
every article in route order, each under its stage, with its online address under the title. Ids are prefixed
with the article's slug (two articles both have 「小结」), links between articles of the route become links
inside the PDF, other site links become online addresses. Scripts do not run: figures stay static.
"""

from __future__ import annotations

import html
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

from llmsite import atomic, chromium, stylesheets
from llmsite.content.catalog import load_route

ARTICLE = re.compile(r'<article class="md-content__inner md-typeset">(?P<body>.*?)</article>', re.S)
_ID = re.compile(r'\bid="([^"]+)"')
_HREF = re.compile(r'\b(href|src)="([^"]*)"')
_DROP = (
    re.compile(r'<a href="[^"]*" title="[^"]*" class="md-content__button md-icon".*?</a>', re.S),  # edit button
    re.compile(r'<a class="headerlink"[^>]*>.*?</a>', re.S),
    re.compile(r'<nav class="llm-article-end".*?</nav>', re.S),
    re.compile(r'<div class="llm-read"[^>]*hidden>.*?</div>', re.S),
)
MAX_BYTES = 25 * 1024 * 1024
PRINT_CSS = Path(__file__).with_name("templates") / "book.css"


class PdfError(RuntimeError):
    pass


@dataclass(frozen=True)
class Chapter:
    slug: str
    title: str
    stage: str
    url: str  # online address
    body: str  # the article's HTML, ready for the book


def _rewrite(body: str, slug: str, base: str, site_url: str, book: set[str]) -> str:
    body = _ID.sub(lambda m: f'id="{slug}--{m.group(1)}"', body)

    def link(m: re.Match[str]) -> str:
        attr, value = m.group(1), html.unescape(m.group(2))
        if value.startswith("#"):
            return f'{attr}="#{slug}--{html.escape(value[1:])}"'
        if re.match(r"^[a-z][a-z0-9+.-]*:", value):  # http:, https:, data:, mailto:
            return m.group(0)
        absolute = urljoin(base, value)
        if attr == "href":
            for other in book:
                if absolute.split("#")[0] == urljoin(site_url, f"articles/{other}/"):
                    anchor = absolute.split("#", 1)[1] if "#" in absolute else ""
                    return f'href="#{other}--{html.escape(anchor)}"' if anchor else f'href="#{other}"'
            return f'href="{html.escape(absolute)}"'
        return f'{attr}="{html.escape(value)}"'  # images stay relative to the page (resolved by <base>)

    return _HREF.sub(link, body)


def chapters(site: Path, site_url: str) -> list[Chapter]:
    route, problems = load_route()
    if problems:
        raise PdfError("\n".join(str(p) for p in problems))
    slugs = [e.slug for e in route.entries]
    out = []
    for entry in route.entries:
        page = site / "articles" / entry.slug / "index.html"
        if not page.is_file():
            raise PdfError(f"{page} 不存在：先构建网站（make build）")
        text = page.read_text(encoding="utf-8")
        found = ARTICLE.search(text)
        if not found:
            raise PdfError(f"{page}: 找不到文章正文 <article class=\"md-content__inner md-typeset\">")
        body = found.group("body")
        for pattern in _DROP:
            body = pattern.sub("", body)
        title = re.search(r"<h1[^>]*>(.*?)</h1>", body, re.S)
        plain = html.unescape(re.sub(r"<[^>]+>", "", title.group(1))).strip() if title else entry.slug
        url = urljoin(site_url, f"articles/{entry.slug}/")
        body = _rewrite(body, entry.slug, url, site_url, set(slugs))
        out.append(Chapter(entry.slug, plain, route.stages[entry.stage].title, url, body))
    return out


def book(site: Path, site_url: str, items: list[Chapter], pages: dict[str, int] | None, stylesheets: list[str]) -> str:
    """The book's HTML (``<base>`` is the first article's folder, so the pages' relative image paths resolve)."""
    toc, body, stage = [], [], None
    for c in items:
        if c.stage != stage:
            stage = c.stage
            toc.append(f'<li class="book-toc__stage">{html.escape(stage)}</li>')
            body.append(f'<h1 class="book-stage">{html.escape(stage)}</h1>')
        number = str(pages[c.slug]) if pages and c.slug in pages else "—"
        toc.append(f'<li><a href="#{c.slug}">{html.escape(c.title)}</a>'
                   f'<span class="book-toc__page">{number}</span></li>')
        # the chapter's first heading keeps its id (the contents link to it); the URL is printed under it
        chapter = re.sub(r"(<h1[^>]*>)", rf'<span id="{c.slug}"></span>\1', c.body, count=1)
        chapter = re.sub(r"(</h1>)", rf'\1<p class="book-url">在线阅读：{html.escape(c.url)}</p>', chapter, count=1)
        body.append(f'<section class="book-chapter" data-slug="{html.escape(c.slug)}">{chapter}</section>')
    links = "\n".join(f'<link rel="stylesheet" href="{html.escape(h)}">' for h in stylesheets)
    base = (site / "articles" / items[0].slug).resolve().as_uri() + "/"
    return f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8"><base href="{html.escape(base)}">
<title>大模型学习交流平台 · 学习路线</title>
{links}
<style>{PRINT_CSS.read_text(encoding="utf-8")}</style></head>
<body data-md-color-scheme="default" data-md-color-primary="indigo" data-md-color-accent="indigo">
<section class="book-cover"><h1 class="book-title">大模型学习交流平台 · 学习路线</h1>
<p>从注意力机制到把大模型用好：路线上的每一篇文章，按阅读顺序。</p>
<p class="book-url">在线阅读：{html.escape(site_url)}</p></section>
<nav class="book-toc"><h2 class="book-toc__title">目录</h2><ol>{"".join(toc)}</ol></nav>
<div class="md-typeset">{"".join(body)}</div>
</body></html>"""


def _stylesheets(site: Path, first: str) -> list[str]:
    text = (site / "articles" / first / "index.html").read_text(encoding="utf-8")
    return [h for h in stylesheets.LINK.findall(text) if not h.startswith(("http:", "https:"))]


def _print(page, document: Path, out: Path) -> None:
    page.goto(document.as_uri(), wait_until="load")
    page.evaluate("() => document.fonts.ready")
    footer = ('<div style="width:100%;font-size:8px;color:#555;text-align:center;">'
              '<span class="pageNumber"></span></div>')
    page.pdf(path=str(out), format="A4", print_background=True, outline=True, tagged=True,
             display_header_footer=True, header_template="<span></span>", footer_template=footer,
             margin={"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"})


def _squash(title: str) -> str:
    return re.sub(r"\s+", "", title)


def _chapter_pages(pdf: Path, items: list[Chapter]) -> dict[str, int]:
    from pypdf import PdfReader

    reader = PdfReader(str(pdf))
    found: dict[str, int] = {}
    # Chromium builds the outline from the laid-out heading: a space where the title wraps is dropped
    # ("KV 缓存" became "KV缓存" with one font set), so titles are compared without whitespace
    titles = {_squash(c.title): c.slug for c in items}

    def walk(entries: list) -> None:
        for entry in entries:
            if isinstance(entry, list):
                walk(entry)
                continue
            slug = titles.get(_squash(str(entry.title)))
            if slug and slug not in found:
                found[slug] = reader.get_destination_page_number(entry) + 1
    walk(reader.outline)
    missing = [c.slug for c in items if c.slug not in found]
    if missing:
        raise PdfError(f"PDF 的书签里找不到这些文章的标题：{', '.join(missing)}")
    return found


def build(site: Path, out: Path, site_url: str, browser=None) -> dict[str, int]:
    """Print the route's book from the built ``site`` into ``out`` (atomically); {slug: first page}. ``browser``: a
    Playwright Chromium already running in this thread (the tests' one); otherwise one is started and stopped."""
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            own = pw.chromium.launch(executable_path=chromium.executable(), args=chromium.ARGS)
            try:
                return build(site, out, site_url, own)
            finally:
                own.close()
    items = chapters(site, site_url)
    sheets = _stylesheets(site, items[0].slug)
    context = browser.new_context(java_script_enabled=False, color_scheme="light")
    try:
        with tempfile.TemporaryDirectory(prefix="llm-pdf-") as tmp:
            page = context.new_page()
            document, draft = Path(tmp) / "book.html", Path(tmp) / "book.pdf"
            pages: dict[str, int] | None = None
            for _ in range(3):  # numbers in the contents can move the chapters only once (the contents' length)
                document.write_text(book(site, site_url, items, pages, sheets), encoding="utf-8")
                _print(page, document, draft)
                found = _chapter_pages(draft, items)
                if found == pages:
                    break
                pages = found
            else:
                raise PdfError("目录的页码没有稳定下来")
            data = draft.read_bytes()
    finally:
        context.close()
    if len(data) > MAX_BYTES:
        raise PdfError(f"PDF 有 {len(data) / 1048576:.1f} MB，超过 {MAX_BYTES / 1048576:.0f} MB 的上限")
    atomic.write_bytes(out, data)
    return pages
