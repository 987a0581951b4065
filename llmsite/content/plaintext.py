"""Plain-text fields: front matter and data-file strings that reach pages.

Titles, descriptions, author names, tag names, stage titles and summaries are
plain text. They are printed by templates, listings, meta tags, the feed and
the search index, each in its own context, so markup in them is either a
mistake or an attack. ``problems`` says what is wrong with a value (an empty
list means the value is acceptable plain text); the site still escapes every
accepted value for its context (``BERT 的 <mask>`` is accepted and shown as
written).
"""

from __future__ import annotations

import re
import unicodedata

# HTML, SVG and MathML element names a browser would parse as markup.
_ELEMENTS = frozenset(
    """
    a abbr acronym address animate animatemotion animatetransform applet area article aside audio b base
    basefont bdi bdo bgsound big blink blockquote body br button canvas caption center circle cite clippath code
    col colgroup data datalist dd defs del desc details dfn dialog dir div dl dt ellipse em embed feimage
    fieldset figcaption figure filter font footer foreignobject form frame frameset g h1 h2 h3 h4 h5 h6 head
    header hgroup hr html i iframe image img input ins isindex kbd keygen label legend li line lineargradient
    link listing main map mark marquee math menu menuitem meta meter mfrac mi mn mo mrow ms msqrt mtext multicol
    nav nextid nobr noembed noframes noscript object ol optgroup option output p param path pattern picture
    plaintext polygon polyline pre progress q rb rect rp rt rtc ruby s samp script search section select set
    slot small source spacer span stop strike strong style sub summary sup svg switch symbol table tbody td
    template text textarea textpath tfoot th thead time title tr track tspan tt u ul use var video wbr xmp
    """.split()  # noqa: SIM905  (a word list reads better than 200 quoted strings)
)
_TAG_LIKE = re.compile(r"<\s*(?P<close>/)?\s*(?P<name>[A-Za-z][\w:.-]*)(?P<rest>[^<>]*)(?:>|$)")
_OTHER_MARKUP = re.compile(r"<\s*[!?/]")
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);")
# A URL scheme that runs code or embeds content; browsers ignore tabs, newlines and leading spaces inside it.
_SCHEME = re.compile(r"(?:javascript|vbscript|data|livescript)[\s\x00-\x1f]*:", re.I)
# Invisible characters that reorder or hide text (bidi controls, zero-width characters, BOM).
_INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff"
)

# Longest values accepted, in characters (a title is one line in a card; a summary two or three).
MAX_LENGTH = {"title": 80, "description": 200, "name": 60, "bio": 200, "tag": 30, "summary": 200}


def _describe(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def problems(value: str, kind: str = "title") -> list[tuple[str, str]]:
    """``(message, fix)`` for every reason ``value`` is not acceptable plain text of this ``kind``."""
    out: list[tuple[str, str]] = []
    for m in _TAG_LIKE.finditer(value):
        name = m.group("name").lower()
        has_attrs = "=" in m.group("rest") or bool(m.group("rest").strip(" /"))
        if name in _ELEMENTS or has_attrs or m.group("close"):
            out.append(
                (
                    f"含有 HTML 标签 {m.group(0)[:40]!r}：这里只能写纯文本",
                    "删去尖括号；要写尖括号本身，请用全角的〈〉或写成文字",
                )
            )
            break
    else:
        if _OTHER_MARKUP.search(value):
            out.append(("含有 HTML 标记（<!、<?、</）：这里只能写纯文本", "删去这段标记"))
    if entity := _ENTITY.search(value):
        out.append(
            (
                f"含有 HTML 实体 {entity.group(0)!r}：这里只能写纯文本",
                "直接写出字符本身，例如 & 而不是 &amp;",
            )
        )
    if _SCHEME.search(value):
        out.append(
            ("含有 javascript:、data: 之类会执行或嵌入内容的网址写法", "删去它；需要链接请写在正文里")
        )
    bad = sorted({ch for ch in value if (unicodedata.category(ch) == "Cc" and ch not in "\n") or ch in _INVISIBLE})
    if bad:
        out.append(
            (
                f"含有控制字符或不可见字符：{'、'.join(_describe(ch) for ch in bad)}",
                "删去这些字符（常见于从网页或文档复制的文字），重新输入",
            )
        )
    if "\n" in value.strip():
        out.append(("应是一行文字，不能换行", "把它写成一行"))
    limit = MAX_LENGTH.get(kind)
    if limit is not None and len(value) > limit:
        out.append((f"太长：{len(value)} 个字符，最多 {limit} 个", "写得简短一些"))
    return out
