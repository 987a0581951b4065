"""Formulas rendered at build time (llmsite/tex.py): KaTeX's HTML in the written pages, no KaTeX script.

- The renderer: inline and display style, TeX holding ``<`` and ``&``, KaTeX's error as ``TexError``; arithmatex's
  spans and divs replaced inside their wrapper; an invalid formula reported at the line of the Markdown source
  (and, through the MkDocs adapter, a build error naming docs/...md:line).
- Lab pages: ``$...$`` / ``$$...$$`` found as Jupyter reads them (escaped dollars, code spans, fenced code and raw
  ``<code>`` left alone), through the real converter; an invalid formula names labs/<name>.py:line and the cell.
- The built site: every page with formulas has KaTeX output for each of them, no ``\\(`` / ``\\[`` left in its text,
  loads no KaTeX script; the search index holds the formulas' TeX, not KaTeX's spans.
- In Chromium with JavaScript off, at 375 px: a formula has a size and KaTeX's fonts come from the site itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import markdown
import nbformat
import pytest
from bs4 import BeautifulSoup

from llmsite import tex
from llmsite.labs import page as lab_page

ARTICLE = "transformer-attention"


def _arithmatex(md: str) -> str:
    return markdown.markdown(md, extensions=["pymdownx.arithmatex"], extension_configs={
        "pymdownx.arithmatex": {"generic": True}})


# --------------------------------------------------------------------------- the renderer


def test_inline_and_display_style():
    inline = tex.render(r"\sqrt{d_k}")
    assert inline.startswith('<span class="katex">') and "katex-display" not in inline
    assert "<math" in inline and '<annotation encoding="application/x-tex">\\sqrt{d_k}</annotation>' in inline
    display = tex.render(r"\frac{QK^\top}{\sqrt{d_k}}", display=True)
    assert display.startswith('<span class="katex-display">') and 'display="block"' in display


def test_less_than_and_ampersand_in_tex_are_escaped_in_the_html():
    out = tex.render(r"a<b \& c")
    soup = BeautifulSoup(out, "html.parser")
    assert soup.select_one("annotation").get_text() == r"a<b \& c"
    assert "<b" not in out.replace("<b>", "") or "&lt;b" in out
    assert not soup.find("b"), "a < in TeX must not open an element"
    assert "&lt;" in out and "&amp;" in out


def test_invalid_tex_raises_with_katex_message():
    with pytest.raises(tex.TexError) as exc:
        tex.render(r"\frac{a")
    assert "KaTeX parse error" in str(exc.value) and "function" not in str(exc.value)
    with pytest.raises(tex.TexError):
        tex.render(r"\notacommand")


def test_arithmatex_output_is_replaced_inside_its_wrapper():
    html = _arithmatex("行内 $a<b$ 和 $x_1 \\& y$。\n\n$$\n\\sum_i p_i = 1\n$$\n\n`$not$` 也 `\\(not\\)`\n")
    assert html.count('class="arithmatex"') == 3
    out, problems = tex.render_arithmatex(html, "", "docs/x.md")
    assert problems == []
    soup = BeautifulSoup(out, "html.parser")
    spans = soup.select("span.arithmatex")
    divs = soup.select("div.arithmatex")
    assert len(spans) == 2 and len(divs) == 1
    assert all(el.select_one(".katex") for el in spans) and divs[0].select_one(".katex-display")
    assert [a.get_text() for a in soup.select("annotation")] == ["a<b", r"x_1 \& y", r"\sum_i p_i = 1"]
    assert [c.get_text() for c in soup.select("code")] == ["$not$", r"\(not\)"], "code is left alone"
    for el in soup.select(".katex-mathml, code"):
        el.decompose()
    assert "\\(" not in soup.get_text() and "\\[" not in soup.get_text()
    again, _ = tex.render_arithmatex(out, "", "docs/x.md")
    assert again == out, "rendering a rendered page changes nothing"


def test_invalid_formula_is_reported_at_its_line():
    source = "---\ntitle: t\n---\n\n# 标题\n\n好的 $x^2$。\n\n坏的 $\\frac{a$ 在这里。\n\n$$\n  \\badcommand{1}\n$$\n"
    out, problems = tex.render_arithmatex(_arithmatex(source.split("---\n", 2)[2]), source, "docs/articles/x.md")
    assert [(p.path, p.line) for p in problems] == [("docs/articles/x.md", 9), ("docs/articles/x.md", 12)]
    assert all("公式无法渲染" in p.message and "KaTeX parse error" in p.message for p in problems)
    assert 'class="katex-error"' in out and out.count('<span class="katex">') == 1


def test_the_build_stops_naming_file_and_line(tmp_path: Path):
    from mkdocs.exceptions import PluginError

    from llmsite.mkdocs import formulas

    src = tmp_path / "bad.md"
    src.write_text("# 标题\n\n一行\n\n公式 $\\frac{1}{$ 坏了\n", encoding="utf-8")
    page = SimpleNamespace(file=SimpleNamespace(abs_src_path=str(src), src_uri="articles/bad.md",
                                                content_string=src.read_text(encoding="utf-8")))
    html = _arithmatex(src.read_text(encoding="utf-8"))
    with pytest.raises(PluginError) as exc:
        formulas.page_content(html, page, serving=False)
    assert re.search(r"bad\.md:5: 公式无法渲染：KaTeX parse error", str(exc.value)), str(exc.value)
    assert "发现 1 个内容问题" in str(exc.value)
    shown = formulas.page_content(html, page, serving=True)  # the preview shows it and goes on
    assert 'class="katex-error"' in shown


# --------------------------------------------------------------------------- lab pages


@pytest.mark.parametrize(("text", "found"), [
    ("价格 \\$5 和 \\$6", []),
    ("公式 $a<b$ 和 $x_1 & y$", [("a<b", False), ("x_1 & y", False)]),
    ("代码 `$x$` 与 ``a ` $y$`` 都不算，$z$ 算", [("z", False)]),
    ("```\n$$ not math $$\n```\n\n$$\n\\frac12\n$$", [("\n\\frac12\n", True)]),
    ("<code>$c$</code> 与 <pre>$p$</pre>", []),
    ("$ 5 $ 和 5$ 不是；$\\$$ 是，$1$2 也不是", [("\\$", False)]),
    ("两段 $a\n\nb$ 不连", []),
])
def test_dollar_math_as_jupyter_reads_it(text: str, found: list[tuple[str, bool]]):
    assert [(tex_, display) for _, _, tex_, display in lab_page.math_spans(text)] == found


def _notebook(path: Path, *markdown_cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(c) for c in markdown_cells]
    nb.cells.insert(1, nbformat.v4.new_code_cell("x = '$not math$'"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path


def test_lab_page_formulas_through_the_converter(tmp_path: Path):
    nb = _notebook(tmp_path / "demo.ipynb",
                   "# 演示\n\n价格 \\$5，公式 $a<b$，代码 `$x$`。\n\n$$\n\\sum_i p_i = 1\n$$",
                   "## 第二节 $n$ 个词\n\n行内 $$q$$ 结束")
    body, toc = lab_page.render(nb, "演示")
    soup = BeautifulSoup(body, "html.parser")
    assert [el.get_text() for el in soup.select("span.arithmatex")] == ["\\(a<b\\)", "\\(n\\)", "\\[q\\]"]
    assert [el.get_text() for el in soup.select("div.arithmatex")] == ["\\[\\sum_i p_i = 1\\]"]
    assert "价格 $5" in soup.get_text()
    assert "$x$" in [c.get_text() for c in soup.select("code")]
    assert "$not math$" in soup.get_text(), "code cells are left alone"
    assert "LLMMATH" not in body and "LLMMATH" not in json.dumps(toc)
    assert toc[0]["children"][0]["name"] == "第二节 n 个词"
    rendered, problems = tex.render_arithmatex(body, "", "docs/labs/demo.ipynb")
    assert problems == [] and rendered.count('<span class="katex">') == 4


def test_lab_formula_error_names_file_line_and_cell(tmp_path: Path):
    source = tmp_path / "labs" / "demo.py"
    source.parent.mkdir()
    source.write_text("# %% [markdown]\n# # 演示\n#\n# 好的 $x$\n\n# %%\nx = 1\n\n# %% [markdown]\n"
                      "# 说明\n# 坏的 $\\frac{1$ 这里\n", encoding="utf-8")
    nb = _notebook(tmp_path / "demo.ipynb", "# 演示\n\n好的 $x$", "说明\n坏的 $\\frac{1$ 这里")
    with pytest.raises(lab_page.PageError) as exc:
        lab_page.render(nb, "演示", source)
    message = str(exc.value)
    assert re.search(r"demo\.py:11: 第 2 个文字单元第 2 行的公式无法渲染：KaTeX parse error", message), message
    assert "修改建议" in message


# --------------------------------------------------------------------------- the built site


def _pages_with_math(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("index.html") if 'class="arithmatex"' in p.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_every_formula_of_the_site_is_katex_html_and_no_page_loads_katex(built_site):
    pages = _pages_with_math(built_site.dir)
    names = {p.parent.relative_to(built_site.dir).as_posix() for p in pages}
    assert f"articles/{ARTICLE}" in names
    assert sum(n.startswith("labs/") for n in names) >= 3, names
    for path in built_site.dir.rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        assert not re.findall(r"<script[^>]*(?:katex|auto-render)", html, re.I), path
    for path in pages:
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        formulas = soup.select(".arithmatex")
        assert formulas, path
        for el in formulas:
            assert el.select_one(":scope > .katex, :scope > .katex-display > .katex"), (path, str(el)[:200])
            assert el.select_one(".katex-mathml math annotation"), "the MathML copy is what a screen reader reads"
        assert not soup.select(".katex-error"), path
        article = soup.select_one("article")
        for el in article.select(".katex-mathml, pre, code"):
            el.decompose()
        text = article.get_text()
        assert "\\(" not in text and "\\[" not in text, f"{path}: TeX delimiters left in the text"
    assert not (built_site.dir / "assets" / "javascripts" / "katex-init.js").exists()


@pytest.mark.slow
def test_search_index_holds_the_tex_not_katex_spans(built_site):
    index = json.loads((built_site.dir / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = " ".join(doc["text"] for doc in index["docs"] if doc["location"].startswith(f"articles/{ARTICLE}/"))
    assert "\\(\\sqrt{d_k}\\)" in text
    lab = " ".join(doc["text"] for doc in index["docs"] if doc["location"].startswith("labs/attention_lab/"))
    assert "\\(Q = XW_Q\\)" in lab
    everything = json.dumps(index, ensure_ascii=False)
    assert "katex" not in everything and "\u200b\u200b" not in everything.replace("\u200b\u200b\u200b", "")


# --------------------------------------------------------------------------- in a browser, without JavaScript


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_formulas_show_without_javascript_on_a_phone(browser, site_server, built_site, scheme, tmp_path: Path):
    context = browser.new_context(viewport={"width": 375, "height": 812}, device_scale_factor=2, locale="zh-CN",
                                  color_scheme=scheme, java_script_enabled=False)
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    try:
        pg = context.new_page()
        pg.goto(f"{built_site.base_url}articles/{ARTICLE}/")
        pg.wait_for_load_state("load")
        display = pg.locator("article div.arithmatex").first
        display.scroll_into_view_if_needed()
        box = display.bounding_box()
        assert box and box["width"] > 50 and box["height"] > 10, box
        inline = pg.locator("article span.arithmatex .katex-html").first.bounding_box()
        assert inline and inline["width"] > 0 and inline["height"] > 0, inline
        pg.wait_for_timeout(300)
        pg.screenshot(path=str(tmp_path / f"formula-{scheme}.png"))
        # KaTeX's fonts come from the site itself (the vendored woff2 files), nothing from elsewhere.
        fonts = [u for u in requests if u.endswith(".woff2") and "/KaTeX_" in u]
        assert fonts and all(u.startswith(f"{built_site.base_url}assets/vendor/katex/fonts/") for u in fonts), fonts
        assert not [u for u in requests if not u.startswith(built_site.base_url) and not u.startswith("data:")]
        assert not [u for u in requests if u.endswith(".js") and "katex" in u]
    finally:
        context.close()
