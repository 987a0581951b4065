"""Hostile and careless values for plain-text fields (front matter and data files).

REJECTED: markup, code-running URLs, invisible or control characters, absurd lengths — the
content checks must refuse each with ``file:line`` and a fix.
ACCEPTED: prose that merely contains characters special to HTML, XML, JSON or Markdown —
it must build, and show exactly as written, never parsed as markup, in every output.
Every ACCEPTED value carries the marker ``XSS`` so tests can find where it landed.
"""

from __future__ import annotations

REJECTED: dict[str, str] = {
    "img-onerror": "Transformer <img src=x onerror=window.__xss=1> 注意力",
    "script-breakout": '"><script>window.__xss=1</script>',
    "close-title": "</title><script>window.__xss=1</script>",
    "svg-onload": "注意力 <svg/onload=window.__xss=1>",
    "comment": "注意力 <!-- 注释 -->",
    "entity": "&lt;script&gt;window.__xss=1&lt;/script&gt;",
    "numeric-entity": "&#60;img src=x onerror=window.__xss=1&#62;",
    "javascript-url": "javascript:window.__xss=1",
    "data-url": "DATA:text/html;base64,PHNjcmlwdD4=",
    "tab-in-scheme": "java\tscript:window.__xss=1",
    "rtl-override": "注意力\u202e1gnp.exe",
    "zero-width": "注意\u200b力",
    "nul": "注意力\x00",
    "newline": "第一行\n第二行",
    "very-long": "注意力" * 400,
    "bare-close-tag": "注意力 </b>",
}

ACCEPTED: dict[str, str] = {
    "angle-words": "XSS BERT 的 <mask> 与 <T> 占位",
    "double-quote-breakout": 'XSS " onmouseover="window.__xss=1" data-x="',
    "single-quote-breakout": "XSS ' onfocus='window.__xss=1' autofocus data-y='",
    "ampersand-and-comparisons": "XSS Q&A：1 < 2 && 3 > 2",
    "markdown-syntax": "XSS *星号* _下划线_ [链接](https://example.org) `代码` $x$ #井号",
    "jinja-syntax": "XSS {{ config.site_name }} {% if 1 %}",
    "json-breakout": 'XSS "}]};window.__xss=1;//',
}
