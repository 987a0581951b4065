"""An executed lab notebook as the body of a site page, rendered once by the lab worker and cached.

mkdocs-jupyter's converter (``nb2html``) turns the notebook into HTML; what it inlines in front of the
notebook (about 600 KB of JupyterLab CSS, MathJax and mermaid loaders, a clipboard script) is dropped,
code cells become Material code blocks (its highlighting and copy button), text outputs can be reached and
scrolled with the keyboard whatever their width (``tabindex="0"``, written here rather than by a script that
measures them: fonts and load order then cannot leave an overflowing output unreachable), headings get readable ids
(the site's slugify) with a table of contents built from them, plots get an alt text naming their
section, and the ``$...$`` / ``$$...$$`` formulas of the text cells are checked with KaTeX and written as
``pymdownx.arithmatex`` writes them (the build renders them to HTML with the articles' formulas; the page loads
no KaTeX script). Formulas are taken out of the cells' Markdown before the converter sees it
(``\\$`` is a dollar sign, code spans and fenced code are left alone) and put back rendered afterwards.
The result is written next to the executed notebook (``page.html``, ``toc.json``): the build only reads these
two files, so the MkDocs process imports neither mkdocs-jupyter, nbconvert nor jupytext.
"""

from __future__ import annotations

import html
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsite import tex
from llmsite.paths import rel

PAGE_FILE = "page.html"
TOC_FILE = "toc.json"

_WRAPPER = '<div class="jupyter-wrapper">'
_STYLE = re.compile(r"<style\b[^>]*>.*?</style>", re.S | re.I)
_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.S | re.I)
_CLIPBOARD = re.compile(r'<div class="zeroclipboard-container">.*?</clipboard-copy>\s*</div>', re.S)
_CLIPBOARD_TEXT = re.compile(r'<div [^>]*class="clipboard-copy-txt"[^>]*>.*?</div>', re.S)  # the source, again
_COLLAPSER = re.compile(r'<div class="jp-Collapser[^"]*">\s*</div>')
_TOOLBAR = re.compile(r'<div class="celltoolbar">(?:\s*<div class="button_container[^"]*">.*?</div>)*\s*</div>', re.S)
_CODE = re.compile(r'<div class="highlight-ipynb hl-(?P<lang>[\w+-]+)\s*"><pre>(?P<body>.*?)</pre></div>', re.S)
# nbconvert makes the output's <div> focusable, but the <pre> inside is what scrolls (lab.css): the stop moves there.
_TEXT_OUTPUT = re.compile(
    r'(?P<div><div class="jp-RenderedText jp-OutputArea-output[^"]*" data-mime-type="[^"]+")(?: tabindex="0")?>'
    r'(?P<gap>\s*)<pre>')
_HEADING = re.compile(r"<h(?P<level>[1-6])(?P<attrs>[^>]*)>(?P<inner>.*?)</h(?P=level)>", re.S)
_ANCHOR = re.compile(r'<a class="anchor-link"[^>]*>.*?</a>', re.S)
_TAG = re.compile(r"<[^>]+>")
_IMG_ALT = re.compile(r'<img alt="No description has been provided for this image"')
_H2_OR_IMG = re.compile(r'<h2 id="[^"]*">(?P<h2>.*?)<a class="headerlink"|' + _IMG_ALT.pattern, re.S)


class PageError(RuntimeError):
    pass


def _code_block(match: re.Match[str]) -> str:
    body = match.group("body")
    if body.startswith("<span></span>"):
        body = body[len("<span></span>"):]
    return f'<div class="language-{match.group("lang")} highlight"><pre><span></span><code>{body}</code></pre></div>'


def trim(content: str) -> str:
    """The notebook body without the converter's inlined header, scripts and styles."""
    start = content.find(_WRAPPER)
    if start < 0:
        raise PageError("mkdocs-jupyter 的输出里找不到 jupyter-wrapper：它的模板变了，请检查 labs/page.py 的 trim")
    body = content[start:]
    for pattern in (_STYLE, _SCRIPT, _CLIPBOARD, _CLIPBOARD_TEXT, _TOOLBAR, _COLLAPSER):
        body = pattern.sub("", body)
    body = _TEXT_OUTPUT.sub(r'\g<div>>\g<gap><pre tabindex="0">', body)
    return _CODE.sub(_code_block, body)


def headings(content: str, plain: Callable[[str], str] = str) -> tuple[str, list[dict[str, Any]]]:
    """Readable ids (the site's slugify) on every heading with a headerlink; the toc tokens MkDocs builds from.
    ``plain`` maps a heading's text to what the id and the table of contents use (a formula's TeX source)."""
    from pymdownx.slugs import slugify

    slug = slugify(case="lower")
    seen: dict[str, int] = {}
    tokens: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []

    def replace(match: re.Match[str]) -> str:
        level = int(match.group("level"))
        inner = _ANCHOR.sub("", match.group("inner")).strip()
        text = plain(html.unescape(_TAG.sub("", inner))).strip()
        base = slug(text, "-") or f"section-{len(tokens) + len(stack) + 1}"
        n = seen.get(base, 0)
        seen[base] = n + 1
        hid = base if n == 0 else f"{base}_{n}"
        token = {"level": level, "id": hid, "name": html.escape(text), "children": []}
        while stack and stack[-1]["level"] >= level:
            stack.pop()
        (stack[-1]["children"] if stack else tokens).append(token)
        stack.append(token)
        return f'<h{level} id="{hid}">{inner}<a class="headerlink" href="#{hid}" title="本节链接">&para;</a></h{level}>'

    return _HEADING.sub(replace, content), tokens


def alt_texts(content: str, title: str) -> str:
    """nbconvert gives every plot the alt text "No description has been provided": name the section instead."""
    section = title

    def replace(match: re.Match[str]) -> str:
        nonlocal section
        if match.group("h2") is not None:
            section = html.unescape(_TAG.sub("", match.group("h2"))).strip()
            return match.group(0)
        return f'<img alt="{html.escape(f"代码运行得到的图：{section}")}"'

    return _H2_OR_IMG.sub(replace, content)


def convert(notebook: Path) -> str:
    """The converter's HTML for an executed notebook (nothing is executed here)."""
    from mkdocs_jupyter.nbconvert2 import nb2html

    return str(nb2html(str(notebook), execute=False, kernel_name="python3", no_prompt=True,
                       include_requirejs=False, allow_errors=False, custom_mathjax_url=""))


# --------------------------------------------------------------------------- formulas in the text cells


@dataclass(frozen=True)
class Formula:
    tex: str
    display: bool
    cell: int  # the text cell's number, from 1
    line: int  # the formula's line in that cell, from 1


_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})", re.M)
_RAW_CODE = re.compile(r"<(?P<tag>code|pre)\b[^>]*>.*?</(?P=tag)>", re.S | re.I)
_PLACEHOLDER = re.compile(r"LLMMATH(?P<n>\d+)X")  # letters and digits: the converter's Markdown leaves it alone


def _skipped(text: str) -> list[tuple[int, int]]:
    """(start, end) of fenced code blocks and raw ``<code>`` / ``<pre>`` elements: no formulas inside."""
    spans = [(m.start(), m.end()) for m in _RAW_CODE.finditer(text)]
    at = 0
    while (opening := _FENCE.search(text, at)) is not None:
        fence = opening.group("fence")
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        end_of_line = text.find("\n", opening.end())
        found = closing.search(text, len(text) if end_of_line < 0 else end_of_line + 1)
        end = found.end() if found else len(text)
        spans.append((opening.start(), end))
        at = end
    return sorted(spans)


def math_spans(text: str) -> list[tuple[int, int, str, bool]]:
    """(start, end, tex, display) of the ``$$...$$`` and ``$...$`` formulas of a Markdown text, as Jupyter reads
    them: a backslash escapes the next character (``\\$`` is a dollar sign), nothing inside code spans or
    fenced code counts, an inline formula does not start before or end after a space and ends on its paragraph."""
    skipped = _skipped(text)
    found: list[tuple[int, int, str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        if skipped and skipped[0][0] <= i:
            start, end = skipped.pop(0)
            i = max(i, end) if start <= i else i
            continue
        c = text[i]
        if c == "\\":
            i += 2
        elif c == "`":
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            close = re.compile(rf"(?<!`){'`' * run}(?!`)").search(text, i + run)
            i = close.end() if close else i + run
        elif c == "$":
            display = text.startswith("$$", i)
            limit = skipped[0][0] if skipped else n  # a formula does not run into code
            end = _closing(text[:limit], i + (2 if display else 1), display)
            if end is None:
                i += 2 if display else 1
                continue
            width = 2 if display else 1
            found.append((i, end + width, text[i + width:end], display))
            i = end + width
        else:
            i += 1
    return found


def _closing(text: str, start: int, display: bool) -> int | None:
    """Where the formula opened just before ``start`` closes (the index of its closing dollar sign)."""
    if display:
        j = start
        while (j := text.find("$$", j)) >= 0:
            if text[j - 1] != "\\":
                return j
            j += 1
        return None
    if start >= len(text) or text[start].isspace() or text[start] == "$":
        return None
    j = start
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if text.startswith("\n\n", j):
            return None
        if c == "$" and not text[j - 1].isspace() and not (j + 1 < len(text) and text[j + 1].isdigit()):
            return j
        j += 1
    return None


def take_formulas(nb: Any) -> list[Formula]:
    """Replace every formula of the notebook's text cells by a placeholder (in place); the formulas, in order."""
    formulas: list[Formula] = []
    cells = [cell for cell in nb.cells if cell.cell_type == "markdown"]
    for number, cell in enumerate(cells, 1):
        source = cell.source
        out, at = [], 0
        for start, end, body, display in math_spans(source):
            out += [source[at:start], f"LLMMATH{len(formulas)}X"]
            formulas.append(Formula(body.strip() if display else body, display, number,
                                    source.count("\n", 0, start) + 1))
            at = end
        cell.source = "".join([*out, source[at:]])
    return formulas


def put_formulas(content: str, formulas: list[Formula], lab_source: Path | None) -> str:
    """Placeholders replaced by the formulas as ``pymdownx.arithmatex`` writes them in article pages (the build
    renders both alike: ``llmsite.tex.render_arithmatex``, after Material's search has indexed their TeX). Each
    formula is rendered here once to check it: one KaTeX rejects raises ``PageError`` naming the lab's file, line
    and cell."""
    problems = []
    for formula in formulas:
        try:
            tex.render(formula.tex, formula.display)
        except tex.TexError as exc:
            problems.append(_where(formula, lab_source) + f"公式无法渲染：{exc}")
    if problems:
        raise PageError("\n".join(problems) + "\n修改建议：检查公式的 TeX 写法（KaTeX 支持的命令见 "
                        "https://katex.org/docs/supported）")

    def paragraph(match: re.Match[str]) -> str:  # a display formula that is a whole paragraph: a block of its own
        formula = formulas[int(match.group("n"))]
        return tex.arithmatex(formula.tex, True, block=True) if formula.display else match.group(0)

    content = re.sub(rf"<p>\s*{_PLACEHOLDER.pattern}\s*</p>", paragraph, content)
    return _PLACEHOLDER.sub(lambda m: tex.arithmatex(*_formula_of(m, formulas)), content)


def _formula_of(match: re.Match[str], formulas: list[Formula]) -> tuple[str, bool]:
    formula = formulas[int(match.group("n"))]
    return formula.tex, formula.display


def _where(formula: Formula, lab_source: Path | None) -> str:
    cell = f"第 {formula.cell} 个文字单元第 {formula.line} 行"
    if lab_source is None:
        return f"{cell}："
    text = lab_source.read_text(encoding="utf-8")
    return f"{rel(lab_source)}:{tex.source_line(text, formula.tex)}: {cell}的"


def _plain(formulas: list[Formula]) -> Callable[[str], str]:
    """A heading's text with each placeholder back as its formula's TeX source."""
    return lambda text: _PLACEHOLDER.sub(lambda m: formulas[int(m.group("n"))].tex, text)


def render(notebook: Path, title: str, lab_source: Path | None = None) -> tuple[str, list[dict[str, Any]]]:
    """(page body, toc tokens) of an executed notebook. ``lab_source`` (``labs/<name>.py``) is where a formula
    KaTeX rejects is reported."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    formulas = take_formulas(nb)
    with tempfile.TemporaryDirectory(prefix="llm-lab-page-") as tmp:
        protected = Path(tmp) / notebook.name
        nbformat.write(nb, protected)
        converted = convert(protected)
    body, toc = headings(trim(converted), _plain(formulas))
    return put_formulas(alt_texts(body, title), formulas, lab_source), toc


def write(notebook: Path, title: str, folder: Path, lab_source: Path | None = None) -> None:
    """Render ``notebook`` and write ``page.html`` and ``toc.json`` into ``folder`` (a staging cache entry)."""
    body, toc = render(notebook, title, lab_source)
    (folder / PAGE_FILE).write_text(body, encoding="utf-8")
    (folder / TOC_FILE).write_text(json.dumps(toc, ensure_ascii=False, indent=1), encoding="utf-8")


def read(folder: Path) -> tuple[str, list[dict[str, Any]]]:
    """The cached (page body, toc tokens) of a cache entry."""
    body = (folder / PAGE_FILE).read_text(encoding="utf-8")
    return body, json.loads((folder / TOC_FILE).read_text(encoding="utf-8"))
