"""llmsite/presettle.py: what the build does so that Material's bundle finds nothing page-wide to change on load.

The browser side (nothing page-wide changes once <body> exists, and the page ends as Material would leave it) is
tests/browser/test_site.py::test_nothing_page_wide_changes_once_the_body_is_parsed."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from llmsite import presettle

HIGHLIGHTED = ('<div class="highlight"><pre><span></span><code><span id="__span-0-1"><a id="__codelineno-0-1" '
               'name="__codelineno-0-1" href="#__codelineno-0-1"></a>x = 1\n</span></code></pre></div>')


@pytest.fixture(scope="module")
def parsed_pages(built_site) -> dict[str, BeautifulSoup]:
    """Every page of the session's build, parsed once for the tests that walk the whole site (about 3 s a pass)."""
    return {str(p.relative_to(built_site.dir)): BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser")
            for p in sorted(built_site.dir.rglob("*.html"))}


def test_line_anchored_code_blocks_get_materials_class_and_nothing_else_does() -> None:
    plain = '<pre><code>x = 1\n</code></pre><p>inline <code>x</code> and <code><span id="a">y</span></code></p>'
    out = presettle.code_blocks(HIGHLIGHTED + plain)
    soup = BeautifulSoup(out, "html.parser")
    classes = [code.get("class") for code in soup.find_all("code")]
    assert classes == [["md-code__content"], None, None, None], classes
    assert presettle.code_blocks(out) == out, "a second pass changes nothing"
    assert out.replace(' class="md-code__content"', "") == HIGHLIGHTED + plain, "only the class was added"


def test_every_line_anchored_code_block_of_the_built_site_has_the_class(parsed_pages) -> None:
    seen = 0
    for page, soup in parsed_pages.items():
        for code in soup.select("pre > code"):
            if code.find("span", id=True, recursive=False) is not None:
                seen += 1
                assert "md-code__content" in (code.get("class") or []), f"{page}: {str(code)[:120]}"
    assert seen > 10, f"only {seen} line-anchored code blocks in the built site"


def test_the_early_script_carries_the_palette_as_inert_json() -> None:
    palette = [{"media": "(prefers-color-scheme: light)", "scheme": "default"},
               {"media": "</script><script>alert(1)</script>", "scheme": "slate"},
               {"scheme": "custom"}]
    script = presettle.early_script(palette)
    assert script.startswith("<script>") and script.endswith("</script>")
    body = script[len("<script>"):-len("</script>")]
    assert "</" not in body and "<script" not in body, "a value closed the element"
    literal = re.search(r"o=(\[.*?\]\]),e,", body).group(1)
    assert literal == ('[["(prefers-color-scheme: light)","light"],'
                       '["\\u003c/script>\\u003cscript>alert(1)\\u003c/script>","dark"],["","normal"]]')
    assert "o=[]," in presettle.early_script(None)
    assert '["","light"]' in presettle.early_script({"scheme": "default"})  # a single palette, not a list


def test_the_early_script_goes_last_in_head_of_every_built_page(built_site, content) -> None:
    script = presettle.early_script(content.config["theme"]["palette"])  # mkdocs.yml's palette
    assert '"(prefers-color-scheme: dark)","dark"' in script
    pages = list(built_site.dir.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        text = page.read_text(encoding="utf-8")
        head = text[: text.index("</head>")]
        assert head.count(script) == 1, f"{page}: the early script is not in <head> once"
        assert head.rstrip().endswith(script), f"{page}: something follows the early script in <head>"


def test_inject_leaves_a_page_without_head_alone() -> None:
    assert presettle.inject("<p>x</p>", "<script>s</script>") == "<p>x</p>"
    assert presettle.inject("<head><title>t</title></head><body></body>", "<script>s</script>") == (
        "<head><title>t</title><script>s</script>\n</head><body></body>")


def test_ask_slots_follow_every_h2() -> None:
    html = '<h2 id="a">A</h2><p>x</p><h3>c</h3><h2 id="b">B <code>&lt;/h2&gt;</code></h2>'
    assert presettle.ask_slots(html) == (
        '<h2 id="a">A</h2><p class="llm-ask"></p><p>x</p><h3>c</h3>'
        '<h2 id="b">B <code>&lt;/h2&gt;</code></h2><p class="llm-ask"></p>')


def test_articles_carry_empty_feedback_slots_and_other_pages_none(built_site, content, parsed_pages) -> None:
    """After every h2 of an article an empty p.llm-ask, and one hidden, empty .llm-fix: feedback.js fills them."""
    for slug in content.articles:
        article = parsed_pages[f"articles/{slug}/index.html"].find("article")
        heads = [h for h in article.find_all("h2") if h.get("id") != "__comments"]
        assert heads, slug
        for h in heads:
            slot = h.find_next_sibling()
            assert slot is not None and slot.name == "p" and slot.get("class") == ["llm-ask"], (slug, h.get("id"))
            assert slot.decode_contents() == "", (slug, h.get("id"))
        assert len(article.select(".llm-ask")) == len(heads), slug
        fix = article.select(".llm-fix")
        assert len(fix) == 1 and fix[0].has_attr("hidden") and fix[0].decode_contents() == "", slug
    for other in ("index.html", "articles/index.html", "route/index.html", "labs/attention_lab/index.html"):
        text = (built_site.dir / other).read_text("utf-8")
        assert "llm-ask" not in text and "llm-fix" not in text, other


def test_table_slots_hold_bare_tables_only() -> None:
    html = '<p>a</p><table>\n<tr><td>1</td></tr>\n</table><table class="dataframe"><tr><td>2</td></tr></table>'
    assert presettle.table_slots(html) == (
        '<p>a</p><div class="llm-table"><table>\n<tr><td>1</td></tr>\n</table></div>'
        '<table class="dataframe"><tr><td>2</td></tr></table>')
    assert presettle.table_slots("<p>no table</p>") == "<p>no table</p>"


def test_every_bare_table_of_the_built_site_sits_in_a_slot(parsed_pages) -> None:
    seen = 0
    for page, soup in parsed_pages.items():
        for table in soup.find_all("table"):
            if table.get("class") is None:
                seen += 1
                parent = table.parent
                assert parent.name == "div" and parent.get("class") == ["llm-table"], f"{page}: {str(table)[:80]}"
                assert len(parent.find_all(recursive=False)) == 1, f"{page}: the slot holds more than its table"
    assert seen >= 5, f"only {seen} bare tables in the built site"
