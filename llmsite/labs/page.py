"""An executed lab notebook as the body of a site page, rendered once by the lab worker and cached.

mkdocs-jupyter's converter (``nb2html``) turns the notebook into HTML; what it inlines in front of the
notebook (about 600 KB of JupyterLab CSS, MathJax and mermaid loaders, a clipboard script) is dropped,
code cells become Material code blocks (its highlighting and copy button), text outputs can be reached and
scrolled with the keyboard whatever their width (``tabindex="0"``, written here rather than by a script that
measures them: fonts and load order then cannot leave an overflowing output unreachable), headings get readable ids
(the site's slugify) with a table of contents built from them, and plots get an alt text naming their
section. The result is written next to the executed notebook (``page.html``, ``toc.json``): the build
only reads these two files, so the MkDocs process imports neither mkdocs-jupyter, nbconvert nor jupytext.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

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


def headings(content: str) -> tuple[str, list[dict[str, Any]]]:
    """Readable ids (the site's slugify) on every heading with a headerlink; the toc tokens MkDocs builds from."""
    from pymdownx.slugs import slugify

    slug = slugify(case="lower")
    seen: dict[str, int] = {}
    tokens: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []

    def replace(match: re.Match[str]) -> str:
        level = int(match.group("level"))
        inner = _ANCHOR.sub("", match.group("inner")).strip()
        text = html.unescape(_TAG.sub("", inner)).strip()
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


def render(notebook: Path, title: str) -> tuple[str, list[dict[str, Any]]]:
    """(page body, toc tokens) of an executed notebook."""
    body, toc = headings(trim(convert(notebook)))
    return alt_texts(body, title), toc


def write(notebook: Path, title: str, folder: Path) -> None:
    """Render ``notebook`` and write ``page.html`` and ``toc.json`` into ``folder`` (a staging cache entry)."""
    body, toc = render(notebook, title)
    (folder / PAGE_FILE).write_text(body, encoding="utf-8")
    (folder / TOC_FILE).write_text(json.dumps(toc, ensure_ascii=False, indent=1), encoding="utf-8")


def read(folder: Path) -> tuple[str, list[dict[str, Any]]]:
    """The cached (page body, toc tokens) of a cache entry."""
    body = (folder / PAGE_FILE).read_text(encoding="utf-8")
    return body, json.loads((folder / TOC_FILE).read_text(encoding="utf-8"))
