"""llmsite/stylesheets.py: every published page links one stylesheet, the bundle of the sheets it used to link.

That the bundle styles every element exactly as the separate sheets did is checked in a browser:
tests/browser/test_one_stylesheet.py."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from llmsite import stylesheets
from llmsite.stylesheets import BUNDLE, Bundle, StylesheetError
from tests.conftest import DOCS

HEAD = ('<html><head>\n    <link rel="stylesheet" href="{p}assets/stylesheets/main.1.min.css">\n'
        '    <link rel="stylesheet" href="{p}assets/vendor/katex/katex.min.css">\n'
        '    <link rel="stylesheet" href="{p}assets/stylesheets/extra.css">\n  <title>t</title></head>'
        '<body><link rel="stylesheet" href="{p}assets/stylesheets/extra.css"></body></html>')
SHEETS = ("assets/stylesheets/main.1.min.css", "assets/vendor/katex/katex.min.css", "assets/stylesheets/extra.css")


@pytest.mark.parametrize(("prefix", "url"), [("", ""), ("../../", "articles/a/"), ("/sub/", "404.html"),
                                             ("../", "tags/")])
def test_the_links_in_head_become_one(prefix: str, url: str) -> None:
    bundle = Bundle("/sub/")
    out = bundle.link(HEAD.format(p=prefix), url, "page.md")
    head, body = out.split("</head>")
    assert re.findall(r'<link rel="stylesheet" href="([^"]*)">', head) == [f"{prefix}{BUNDLE}"]
    assert body == HEAD.format(p=prefix).split("</head>")[1], "a link outside <head> is left alone"
    assert "<title>t</title>" in head
    assert bundle.sheets == SHEETS


def test_a_page_with_other_stylesheets_stops_the_build_naming_it() -> None:
    bundle = Bundle()
    bundle.link(HEAD.format(p=""), "", "index.md")
    other = HEAD.format(p="../").replace("katex/katex.min.css", "katex/other.css")
    with pytest.raises(StylesheetError, match=r"^tags/index\.md：.*不同") as err:
        bundle.link(other, "tags/", "tags/index.md")
    assert "assets/vendor/katex/other.css" in str(err.value)
    with pytest.raises(StylesheetError, match="不是本站的文件"):
        Bundle().link(HEAD.format(p="https://cdn.example/"), "", "index.md")


def test_relative_urls_are_rebased_and_nothing_else_changes() -> None:
    css = ('@font-face{src:url(fonts/A.woff2) format("woff2"),url("fonts/B.woff") format("woff")}'
           "a{background:url('../img/x.png')}b{background:url(\"data:image/svg+xml;charset=utf-8,<svg d='m1 2'/>\")}"
           "c{background:url(/abs.png)}d{background:url(https://example.org/x.png)}e{mask:url(#m)}")
    out = stylesheets.rebase_urls(css, "assets/vendor/katex")
    assert "url(../vendor/katex/fonts/A.woff2)" in out and 'url("../vendor/katex/fonts/B.woff")' in out
    assert "url('../vendor/img/x.png')" in out
    rest = out.replace("../vendor/katex/fonts/", "fonts/").replace("../vendor/img/", "../img/")
    assert rest == css, "only the relative references changed"
    assert stylesheets.rebase_urls(css, "assets/stylesheets") == css, "a sheet beside the bundle keeps its urls"


def test_sheets_follow_each_other_in_order_with_one_charset() -> None:
    out = stylesheets.concatenate({"assets/stylesheets/a.css": '@charset "UTF-8";a{x:1}',
                                   "assets/vendor/k/b.css": '\ufeff@charset "UTF-8";b{src:url(f.woff2)}',
                                   "assets/stylesheets/c.css": "c{x:3}"})
    assert out == '@charset "UTF-8";a{x:1}\nb{src:url(../vendor/k/f.woff2)}\nc{x:3}\n'
    with pytest.raises(StylesheetError, match=r"^assets/stylesheets/c\.css：含有 @import"):
        stylesheets.concatenate({"assets/stylesheets/a.css": "a{}", "assets/stylesheets/c.css": '@import "d.css";'})


def test_every_published_page_links_the_bundle_and_nothing_it_holds(built_site) -> None:
    pages = sorted(built_site.dir.rglob("*.html"))
    assert len(pages) > 20
    for path in pages:  # lab pages too: lab.css is in the bundle (instant navigation adds no sheet)
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        hrefs = [link["href"] for link in soup.find_all("link", rel="stylesheet")]
        rel = path.relative_to(built_site.dir).as_posix()
        assert len(hrefs) == 1 and hrefs[0].endswith(BUNDLE), (rel, hrefs)
    assert sum(p.relative_to(built_site.dir).as_posix().startswith("labs/") for p in pages) >= 5


def separate_sheets(site_dir) -> list[str]:
    """The sheets the bundle is made of, in the pages' former order: Material's two, then mkdocs.yml's extra_css."""
    import yaml

    config = yaml.load((DOCS.parent / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    material = sorted(p.name for p in (site_dir / "assets/stylesheets").glob("*.min.css"))
    assert [m.split(".")[0] for m in material] == ["main", "palette"], material
    return [f"assets/stylesheets/{m}" for m in material] + config["extra_css"]


def test_the_bundle_holds_each_sheet_as_published_in_the_themes_order(built_site) -> None:
    order = separate_sheets(built_site.dir)
    bundle = (built_site.dir / BUNDLE).read_text(encoding="utf-8")
    at = 0
    for sheet in order:
        text = (built_site.dir / sheet).read_text(encoding="utf-8")
        text = stylesheets.rebase_urls(text, sheet.rsplit("/", 1)[0])
        found = bundle.find(text.removeprefix('@charset "UTF-8";'), at)
        assert found >= at, f"{sheet} is not in {BUNDLE} after the sheets before it"
        at = found + 1
    assert "../vendor/katex/fonts/KaTeX_Main-Regular.woff2" in bundle
    for ref in re.findall(r"url\(\s*['\"]?([^'\")]+)", bundle):
        if not ref.startswith(("data:", "#")):
            assert (built_site.dir / "assets/stylesheets" / ref).resolve().is_file(), ref
