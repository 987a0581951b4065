"""Chinese typography of the prose (code, math, URLs, comments and front matter excluded).

Rules, on the text as the reader sees it (Markdown emphasis, link brackets,
link targets, attribute lists and inline HTML tags are transparent):

- A. a space between 汉字 and an adjacent Latin letter or digit (``用PyTorch写``);
- B. no half-width ``, ; : ? ! ( )`` right after or before 汉字 (``汉字,`` ``,汉字``);
- C. no space between 汉字 and full-width punctuation (``汉字 。`` ``， 汉字``);
- D. no repeated full-width punctuation (``。。`` ``！！``); ``……`` and ``——`` are fine.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from llmsite.content.checks.text import PLACEHOLDER
from llmsite.problems import Problem

if TYPE_CHECKING:
    from llmsite.content.checks import Document
    from llmsite.content.checks.context import Context

HAN = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
_HAN = re.compile(HAN)
_IMAGE = re.compile(r"!\[[^\]\n]*\](?:\([^)\n]*\)|\[[^\]\n]*\])")
# Markup that renders without visible characters of its own.
_TRANSPARENT = re.compile(
    r"\]\(" + PLACEHOLDER + r"*\)"  # a link's (masked) target
    r"|\]\[[^\]\n]*\]"  # a reference link's label
    r"|<[^<>\n]*>"  # inline HTML tags
    r"|\{:?[ \t]*[#.:][^{}\n]*\}"  # attr_list blocks
    r"|\*+|~~|\[|\]"  # emphasis, link brackets
)
_LATIN_RUN = re.compile(r"[A-Za-z0-9]+")
_HALF = {",": "，", ";": "；", ":": "：", "?": "？", "!": "！", "(": "（", ")": "）"}
_HALF_NEAR_HAN = re.compile(rf"{HAN}[,;:?!()]|[,;:?!()]{HAN}")
_FULL = "，。、；：？！（）《》〈〉「」『』【】〔〕…"
_SPACE_NEAR_FULL = re.compile(rf"{HAN}[ \t\u3000]+[{_FULL}]|[{_FULL}][ \t\u3000]+{HAN}")
_REPEATED = re.compile(r"([，。、；：？！])\1+")
_CONTEXT = 6


def visible(line: str) -> tuple[str, list[int]]:
    """The line as rendered text, with the original column of each kept character."""
    line = _IMAGE.sub(lambda m: PLACEHOLDER * len(m.group(0)), line)
    chars: list[str] = []
    cols: list[int] = []
    pos = 0
    for m in _TRANSPARENT.finditer(line):
        chars.extend(line[pos : m.start()])
        cols.extend(range(pos, m.start()))
        pos = m.end()
    chars.extend(line[pos:])
    cols.extend(range(pos, len(line)))
    return "".join(chars), cols


def _excerpt(original: str, start: int, end: int) -> str:
    text = original[max(0, start - _CONTEXT) : end + _CONTEXT].strip()
    return text.replace(PLACEHOLDER, "")


def _check_line(vis: str, cols: list[int], original: str) -> list[tuple[int, int, str, str]]:
    """(start column, end column, message, fix) for every violation on one line."""
    found: list[tuple[int, int, str, str]] = []

    def span(a: int, b: int) -> tuple[int, int]:
        return cols[a], cols[b - 1] + 1

    for m in _LATIN_RUN.finditer(vis):
        a, b = m.start(), m.end()
        before = a > 0 and _HAN.match(vis[a - 1])
        after = b < len(vis) and _HAN.match(vis[b])
        if not (before or after):
            continue
        s, e = span(a - 1 if before else a, b + 1 if after else b)
        word = m.group(0)
        sides = []
        if before:
            sides.append(f"「{vis[a - 1]}」和「{word}」之间")
        if after:
            sides.append(f"「{word}」和「{vis[b]}」之间")
        found.append(
            (
                s,
                e,
                f"排版规则 A：汉字与英文、数字之间要有空格：「{_excerpt(original, s, e)}」",
                f"在{'、'.join(sides)}加一个空格",
            )
        )
    for m in _HALF_NEAR_HAN.finditer(vis):
        mark = next(c for c in m.group(0) if c in _HALF)
        s, e = span(m.start(), m.end())
        found.append(
            (
                s,
                e,
                f"排版规则 B：汉字旁用了半角标点「{mark}」：「{_excerpt(original, s, e)}」",
                f"改成全角的「{_HALF[mark]}」",
            )
        )
    for m in _SPACE_NEAR_FULL.finditer(vis):
        s, e = span(m.start(), m.end())
        found.append(
            (
                s,
                e,
                f"排版规则 C：汉字与全角标点之间不要有空格：「{_excerpt(original, s, e)}」",
                "删去全角标点前后的空格",
            )
        )
    for m in _REPEATED.finditer(vis):
        s, e = span(m.start(), m.end())
        mark = m.group(1)
        found.append(
            (
                s,
                e,
                f"排版规则 D：全角标点「{mark}」重复：「{_excerpt(original, s, e)}」",
                f"只保留一个「{mark}」（省略号写成「……」）",
            )
        )
    return found


def check(doc: Document, ctx: Context) -> list[Problem]:
    out: list[Problem] = []
    originals = doc.body.split("\n")
    for i, line in enumerate(doc.prose.split("\n")):
        if not _HAN.search(line):
            continue
        vis, cols = visible(line)
        for _, _, message, fix in sorted(_check_line(vis, cols, originals[i])):
            out.append(Problem(doc.path, doc.first_line + i, message, fix))
    return out
