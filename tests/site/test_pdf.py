"""The route as one PDF (``python -m llmsite pdf``, llmsite/pdf.py), printed by Chromium from the run's build.

Read back with pypdf: every article of the route in route order, each starting on the page its bookmark and the
table of contents name, with its online address; Chinese and KaTeX fonts embedded; within the size limit.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from llmsite import pdf
from llmsite.content import render
from llmsite.content.catalog import load_route
from tests.conftest import BuiltSite

pytestmark = pytest.mark.browser
SITE_URL = "https://example.org/llm/"


@pytest.fixture(scope="module")
def printed(built_site: BuiltSite, browser, tmp_path_factory) -> tuple[Path, dict[str, int]]:
    out = tmp_path_factory.mktemp("pdf") / "route.pdf"
    return out, pdf.build(built_site.dir, out, SITE_URL, browser)


def _titles(built_site: BuiltSite) -> list[tuple[str, str]]:
    route, _ = load_route()
    out = []
    for entry in route.entries:
        page = (built_site.dir / "articles" / entry.slug / "index.html").read_text(encoding="utf-8")
        h1 = re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S)
        assert h1, entry.slug
        out.append((entry.slug, re.sub(r"<[^>]+>", "", h1.group(1)).strip()))
    return out


def test_every_article_in_route_order_on_the_page_the_contents_give(printed, built_site: BuiltSite) -> None:
    path, pages = printed
    reader = PdfReader(str(path))
    titles = _titles(built_site)
    assert list(pages) == [slug for slug, _ in titles]
    assert list(pages.values()) == sorted(pages.values()) and len(set(pages.values())) == len(pages)
    # the bookmarks: one per article, pointing at the page where its text starts
    marks = {}

    def walk(entries):
        for e in entries:
            if isinstance(e, list):
                walk(e)
            else:
                marks.setdefault(re.sub(r"\s+", "", str(e.title)), reader.get_destination_page_number(e) + 1)
    walk(reader.outline)
    contents = reader.pages[1].extract_text()
    for slug, title in titles:
        assert marks[re.sub(r"\s+", "", title)] == pages[slug], title  # a wrapped title loses its space
        first_page = reader.pages[pages[slug] - 1].extract_text()
        assert f"{SITE_URL}articles/{slug}/" in first_page.replace("\n", ""), slug
        # the contents' line for the article ends with its page number
        words = re.sub(r"\s+", "", title)
        assert re.search(re.escape(words) + str(pages[slug]), re.sub(r"\s+", "", contents)), (title, contents)


def test_fonts_are_embedded_and_the_file_is_small(printed) -> None:
    path, _ = printed
    assert path.stat().st_size <= pdf.MAX_BYTES
    reader = PdfReader(str(path))
    fonts = {}
    for page in reader.pages:
        for font in ((page.get("/Resources") or {}).get("/Font") or {}).values():
            font = font.get_object()
            if font.get("/Subtype") == "/Type3":
                continue  # glyphs drawn by the PDF's own content streams: nothing to embed
            descendants = font.get("/DescendantFonts")
            descriptor = (descendants[0].get_object() if descendants else font).get("/FontDescriptor")
            if descriptor is not None:
                d = descriptor.get_object()
                fonts[str(font.get("/BaseFont"))] = any(k in d for k in ("/FontFile", "/FontFile2", "/FontFile3"))
    assert fonts and all(fonts.values()), fonts
    assert any("KaTeX" in name for name in fonts), "formulas are typeset with KaTeX's fonts"
    # a CJK face: the site's font stack falls back to the machine's Chinese font (the README names one)
    text = reader.pages[3].extract_text()
    assert re.search(r"[\u4e00-\u9fff]{8}", text), text[:200]


def _comparable(data: bytes) -> bytes:
    """A printed PDF's bytes without what Chromium stamps on each print: the creation and modification times, and
    the numbers of the tagged structure's elements (taken from its DOM node ids, which count every node the browser
    has made so far). Those numbers are renumbered in order of first appearance, not dropped, so which table cell
    names which header is still compared."""
    data = re.sub(rb"/(CreationDate|ModDate) \(D:[^)]*\)", rb"/\1 ()", data)
    numbers: dict[bytes, bytes] = {}
    return re.sub(rb"\(node\d+\)", lambda m: numbers.setdefault(m.group(0), b"(node%d)" % len(numbers)), data)


def test_a_second_clean_build_prints_the_same_book(printed, clean_build, browser, tmp_path: Path) -> None:
    """The book depends on the commit only: the run's second build (ProperDocs, from empty caches, every figure
    redrawn) prints to the same bytes, but for the print time and Chromium's node numbers (``_comparable``).

    Whole files, not the text pypdf extracts (which was 19 s of CPU a book, and blind to figures, fonts and
    layout). A failure shows the first differing byte and its neighbours."""
    path, pages = printed
    again = tmp_path / "again.pdf"
    pages_again = pdf.build(clean_build.dir, again, SITE_URL, browser)
    assert pages_again == pages
    first, second = _comparable(path.read_bytes()), _comparable(again.read_bytes())
    if first != second:
        at = next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))
        pytest.fail(f"the two builds print different books ({len(first)} and {len(second)} bytes), first difference "
                    f"at byte {at}: {first[max(0, at - 80):at + 40]!r}", pytrace=False)


def test_only_the_print_stamps_are_set_aside() -> None:
    """``_comparable`` forgets the print time and renumbers node ids; any other difference, a node id that points
    elsewhere included, still shows."""
    a = b"<</CreationDate (D:20261204045633+00'00')\n/ModDate (D:20261204045633+00'00')>> /ID (node17) /Headers [(node17)]"
    b = b"<</CreationDate (D:20261205000000+00'00')\n/ModDate (D:20261205000000+00'00')>> /ID (node42) /Headers [(node42)]"
    assert _comparable(a) == _comparable(b)
    assert _comparable(a) != _comparable(b.replace(b"[(node42)]", b"[(node43)]"))  # the header is another element
    assert _comparable(a) != _comparable(b.replace(b"/ID", b"/Id"))


def test_the_route_page_links_the_pdf_only_when_one_is_published() -> None:
    assert render.route_pdf("route.md", False) == ""
    link = render.route_pdf("route.md", True)
    assert 'href="../downloads/llm-route.pdf"' in link and "download" in link
    assert render.PDF_URL == "downloads/llm-route.pdf"


def test_a_title_that_wraps_where_it_has_a_space_is_still_found(tmp_path: Path) -> None:
    """Chromium builds the outline from the laid-out heading and drops the space where a title wraps: r13 on a machine
    with one CJK font and no Latin one got '…与 KV缓存' for '…与 KV 缓存' and the book failed to build."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(3):
        writer.add_blank_page(width=200, height=200)
    writer.add_outline_item(title="第一阶段", page_number=0)
    writer.add_outline_item(title="解码：贪心、温度、top-k、top-p 与 KV缓存", page_number=1)
    writer.add_outline_item(title="现代的块：RMSNorm、SwiGLU、RoPE与\nGQA", page_number=2)
    path = tmp_path / "outline.pdf"
    with path.open("wb") as f:
        writer.write(f)
    items = [pdf.Chapter("decoding", "解码：贪心、温度、top-k、top-p 与 KV 缓存", "s", "u", ""),
             pdf.Chapter("llama-block", "现代的块：RMSNorm、SwiGLU、RoPE 与 GQA", "s", "u", "")]
    assert pdf._chapter_pages(path, items) == {"decoding": 2, "llama-block": 3}
    with pytest.raises(pdf.PdfError, match="llama-block"):
        pdf._chapter_pages(path, [items[0], pdf.Chapter("llama-block", "现代的块：RMSNorm 与 GQA", "s", "u", "")])
