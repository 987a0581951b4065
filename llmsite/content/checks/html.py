"""Raw HTML that runs code or pulls in other content is not allowed in articles.

Rejected outside code blocks, inline code and HTML comments: ``<script>``,
``<style>``, ``<iframe>``, ``<object>``, ``<embed>`` and similar tags, inline
event handlers (``onerror=``, ``onclick=``, any ``on...=`` inside a tag or an
``attr_list`` block) and ``javascript:`` URLs in attributes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from llmsite.content.checks.text import line_at
from llmsite.problems import Problem

if TYPE_CHECKING:
    from llmsite.content.checks import Document
    from llmsite.content.checks.context import Context

_FIXES = {
    "script": "文章里不能嵌入脚本；需要交互效果请在 PR 中说明，由维护者加到站点的 assets/javascripts/ 中",
    "style": "文章里不能写样式表；需要的样式请加到 docs/assets/stylesheets/extra.css，用 { .类名 } 引用",
    "link": "文章里不能引入外部样式或资源；需要的样式请加到 docs/assets/stylesheets/extra.css",
}
_EMBED_FIX = "页面不能嵌入其他网站的内容；改成普通链接 [说明文字](https://...)，或截图后放到 docs/assets/ 下"
_TAGS = ("script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "link", "meta", "base", "form")
_BAD_TAG = re.compile(r"<\s*(?P<tag>" + "|".join(_TAGS) + r")(?=[\s/>]|$)", re.I | re.M)
_TAG = re.compile(r"<(?P<name>[A-Za-z][\w:-]*)(?P<attrs>(?:\s[^<>]*)?)/?>", re.S)
_ATTR_LIST = re.compile(r"\{:?(?P<attrs>[^{}\n]*)\}")
_HANDLER = re.compile(r"(?:^|[\s\"'/])(?P<attr>on[a-z]+)\s*=", re.I)
_JS_URL = re.compile(r"(?:^|[\s\"'/])(?P<attr>[a-z:-]+)\s*=\s*[\"']?\s*(?:javascript|vbscript):", re.I)


def check(doc: Document, ctx: Context) -> list[Problem]:
    text = doc.markup  # code blocks, inline code and comments masked
    out: list[Problem] = []
    for m in _BAD_TAG.finditer(text):
        tag = m.group("tag").lower()
        out.append(
            Problem(
                doc.path,
                line_at(text, m.start(), doc.first_line),
                f"不允许使用 HTML 标签 <{tag}>",
                _FIXES.get(tag, _EMBED_FIX),
            )
        )
    attr_blocks = [(m.start(), m.group("attrs")) for m in _TAG.finditer(text)]
    attr_blocks += [(m.start(), m.group("attrs")) for m in _ATTR_LIST.finditer(text)]
    for start, attrs in sorted(attr_blocks):
        line = line_at(text, start, doc.first_line)
        for h in _HANDLER.finditer(attrs):
            name = h.group("attr").lower()
            out.append(
                Problem(
                    doc.path,
                    line,
                    f"不允许使用事件属性 {name}=（它会在读者的浏览器里执行脚本）",
                    f"删去 {name}= 属性；文章里不能包含脚本",
                )
            )
        for j in _JS_URL.finditer(attrs):
            out.append(
                Problem(
                    doc.path,
                    line,
                    f"属性 {j.group('attr')}= 中不允许使用 javascript: 网址",
                    "改成普通的 http(s) 网址或站内的相对链接",
                )
            )
    return out
