"""Images need alt text and must be served by the site itself.

- ``![](...)`` with empty alt text and ``<img>`` without a non-empty ``alt``;
- image sources on other hosts (``http://``, ``https://``, ``//host``) in
  Markdown images (inline or by reference) and in ``src``/``srcset``/``poster``
  of HTML media tags: pages must not make requests to other hosts.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from llmsite.content.checks.text import REF_DEF, line_at
from llmsite.problems import Problem

if TYPE_CHECKING:
    from llmsite.content.checks import Document
    from llmsite.content.checks.context import Context

_MD_IMAGE = re.compile(
    r"!\[(?P<alt>[^\]\n]*)\]"
    r"(?:\(\s*(?P<dest><[^>\n]*>|(?:[^()\s]|\([^()\s]*\))*)[^)\n]*\)|\[(?P<ref>[^\]\n]*)\])"
)
_MEDIA_TAG = re.compile(r"<(?P<name>img|source|video|audio|input|picture|track)\b(?P<attrs>[^<>]*)>", re.I | re.S)
_ATTR = re.compile(
    r"""(?P<key>[A-Za-z_:][\w:.-]*)(?:\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"'>]+)))?"""
)
_EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.I)
_LOCAL_FIX = (
    "把图片放到 docs/assets/ 下用相对路径引用，或用 <!-- figure: 名字 --> 由 code/figures/ 中的代码生成；"
    "页面不能向其他网站请求资源"
)
_ALT_FIX = "写一句描述图片内容的替代文字，例如 ![注意力权重热力图](图片路径)"


def _attrs(raw: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for m in _ATTR.finditer(raw):
        value = m.group("dq") if m.group("dq") is not None else m.group("sq")
        if value is None:
            value = m.group("bare")
        out.setdefault(m.group("key").lower(), value)
    return out


def is_external(url: str) -> bool:
    """True for URLs that make the browser contact another host (data: URLs do not)."""
    return bool(_EXTERNAL.match(url.strip().strip("<>")))


def check(doc: Document, ctx: Context) -> list[Problem]:
    text = doc.markup_nomath
    out: list[Problem] = []
    refs = {m.group("label").strip().lower(): m.group("dest").strip("<>") for m in REF_DEF.finditer(text)}
    for m in _MD_IMAGE.finditer(text):
        line = line_at(text, m.start(), doc.first_line)
        if not m.group("alt").strip():
            out.append(Problem(doc.path, line, "图片缺少替代文字（alt）", _ALT_FIX))
        ref = m.group("ref")
        if ref is None:
            dest = (m.group("dest") or "").strip("<>")
        else:  # reference image; ![alt][] uses the alt text as label
            dest = refs.get((ref or m.group("alt")).strip().lower(), "")
        if dest and is_external(dest):
            out.append(Problem(doc.path, line, f"图片引用了外部网址：{dest}", _LOCAL_FIX))
    for m in _MEDIA_TAG.finditer(text):
        name = m.group("name").lower()
        attrs = _attrs(m.group("attrs"))
        line = line_at(text, m.start(), doc.first_line)
        if name == "img" and not (attrs.get("alt") or "").strip():
            out.append(
                Problem(doc.path, line, "<img> 缺少替代文字（alt 属性为空或没有写）", '加上 alt="描述图片内容的一句话"')
            )
        for key in ("src", "srcset", "poster", "data"):
            value = attrs.get(key) or ""
            urls = [part.strip().split(" ")[0] for part in value.split(",")] if key == "srcset" else [value]
            for url in urls:
                if url and is_external(url):
                    out.append(Problem(doc.path, line, f"<{name}> 的 {key} 引用了外部网址：{url}", _LOCAL_FIX))
    return out
