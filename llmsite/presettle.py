"""Work that Material's bundle would do over a whole loaded page, done before the page's body exists (issue 29).

A Chromium trace of a long article opening on a phone (``bench/README.md``, round twelve) shows Material's
``bundle.js`` making the browser recompute the style of every element of the page several times over, each time
for a change that could have been made while the page had no body yet:

- its instant navigation writes every relative ``href``/``src`` as an absolute URL (``el.href = el.href``). For a
  ``<link rel="stylesheet">`` that counts as a new stylesheet: the whole page's style is recomputed;
- it swaps ``no-js`` for ``js`` on ``<html>``, and its focus-visible polyfill adds ``js-focus-visible`` there: each
  a class on the root, so every element's style again;
- our ``palette.js`` (like Material's palette component) adds ``<meta name="color-scheme">``: a change of the
  page's colour scheme, so every element's style once more;
- on every code block with line anchors it adds the class ``md-code__content`` (``display: grid``), then measures
  the block: one forced style and layout of the block per code block.

``early_script`` makes the first three changes from the last script in ``<head>``, when they cost nothing; Material
then finds nothing to change. ``code_blocks`` writes the class into the HTML. The page that results is the one
Material would have made.

Inserting any element into ``<article>`` restyles the whole article (a rule of Material's,
``.md-typeset table:not([class]) + *``, and one of Chromium's MathML stylesheet end in a universal selector). So
``ask_slots`` writes the empty paragraphs that ``feedback.js`` fills with its 「提问」 links (one after each ``h2``);
filling one restyles that paragraph only. The correction bar's slot is in ``overrides/partials/content.html``.
``table_slots`` puts each bare ``<table>`` in a ``div.llm-table`` (``display: contents``: no box of its own), so
the wrapper Material puts around a table on load is inserted there and not into the article.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

# The value <meta name="color-scheme"> gets for each of Material's schemes: what its stylesheet gives the page
# (color-scheme: light / dark), as docs/assets/javascripts/palette.js writes it when the reader switches.
SCHEMES = {"default": "light", "slate": "dark"}

# Material's own rule for what its instant navigation rewrites: a value that is neither absolute (scheme:) nor
# protocol-relative (//host). The first of href, src that qualifies is rewritten.
_SCRIPT = """(function(){var d=document,r=d.documentElement,o=%s,e,k,v,s=null,i;\
r.classList.remove("no-js");r.classList.add("js","js-focus-visible");r.setAttribute("data-js-focus-visible","");\
for(e of d.head.querySelectorAll("[href],[src]"))for(k of["href","src"]){v=e.getAttribute(k);\
if(v&&!/^(?:[a-z]+:)?\\/\\//i.test(v)){e[k]=e[k];break}}\
if(!o.length||d.head.querySelector('meta[name="color-scheme"]'))return;\
try{v=__md_get("__palette")}catch(x){v=null}\
if(v&&typeof v.index=="number"&&v.index>=0&&v.index<o.length)s=o[v.index][1];\
for(i=0;s===null&&i<o.length;i++)if(o[i][0]&&matchMedia(o[i][0]).matches)s=o[i][1];\
e=d.createElement("meta");e.name="color-scheme";e.content=s===null?o[0][1]:s;d.head.appendChild(e)})()"""


def early_script(palette: Iterable[Mapping[str, Any]] | Mapping[str, Any] | None) -> str:
    """The ``<script>`` element that goes last in ``<head>``, for the theme's ``palette`` setting.

    The colour scheme is chosen as palette.js chooses the palette: the reader's stored choice (Material's
    ``__palette`` key), else the first option whose ``media`` matches, else the first option."""
    if palette is None:
        options: list[Mapping[str, Any]] = []
    elif isinstance(palette, Mapping):
        options = [palette]
    else:
        options = list(palette)
    pairs = [[str(o.get("media") or ""), SCHEMES.get(str(o.get("scheme") or "default"), "normal")] for o in options]
    # JSON inside a <script>: "<" written as \\u003c, so no value can close the element
    literal = json.dumps(pairs, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f"<script>{_SCRIPT % literal}</script>"


def inject(html: str, script: str) -> str:
    """``script`` placed just before ``</head>`` (after every stylesheet); a page without ``</head>`` unchanged."""
    at = html.find("</head>")
    return html if at < 0 else f"{html[:at]}{script}\n{html[at:]}"


# pymdownx.highlight with line_spans: <pre ...><span></span><code><span id="__span-0-1">… . Material's code block
# component adds class="md-code__content" to a <code> that has <span id> children; the same test, written here.
_CODE = re.compile(r"(<pre\b[^>]*>(?:<span></span>)?<code)>(?=<span id=\")")


def code_blocks(html: str) -> str:
    """``html`` with ``class="md-code__content"`` on every highlighted code block that has line spans."""
    if "<code><span id=" not in html:
        return html
    return _CODE.sub(r'\1 class="md-code__content">', html)


ASK_SLOT = '<p class="llm-ask"></p>'  # feedback.js fills it; empty, it takes no room (extra.css: .llm-ask:empty)


def ask_slots(html: str) -> str:
    """An article's ``html`` with an empty 「提问」 slot after every ``h2``."""
    return html.replace("</h2>", "</h2>" + ASK_SLOT)


_TABLE = re.compile(r"<table>.*?</table>", re.S)  # Markdown's tables: bare, never nested


def table_slots(html: str) -> str:
    """``html`` with every bare ``<table>`` inside a ``<div class="llm-table">`` (extra.css: display: contents)."""
    if "<table>" not in html:
        return html
    return _TABLE.sub(lambda m: f'<div class="llm-table">{m.group(0)}</div>', html)
