"""Masking of Markdown regions that the content checks must not look into.

Every mask keeps the text's length and its line breaks, so an offset in the
masked text is the same offset (and line) in the original body. Masked
characters become ``PLACEHOLDER``: it is neither 汉字, Latin, space nor
punctuation, so it never takes part in a match and never joins two words.
"""

from __future__ import annotations

import re

PLACEHOLDER = "\ufffc"

_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_INLINE_CODE = re.compile(r"(?<!`)(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?!`)")
_DISPLAY_MATH = re.compile(r"(?<!\\)\$\$.*?(?<!\\)\$\$|\\\[.*?\\\]", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?![\s$])(?:\\.|[^$\n\\])+?(?<!\s)\$(?![$0-9])|\\\(.*?\\\)")
# Destination (and optional title) of an inline link or image: "](dest "title")".
LINK_DEST = re.compile(
    r"\]\(\s*(?P<dest><[^>\n]*>|(?:[^()\s]|\([^()\s]*\))*)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
REF_DEF = re.compile(r"^[ \t]{0,3}\[(?P<label>[^\]\n]+)\]:[ \t]*(?P<dest><[^>\n]*>|\S+)", re.M)
_AUTOLINK = re.compile(r"<(?:https?|ftp|mailto):[^>\s]*>", re.I)
_BARE_URL = re.compile(r"(?:https?://|www\.)[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")


def blank(text: str) -> str:
    """``text`` with every character but line breaks replaced by the placeholder."""
    return re.sub(r"[^\n]", PLACEHOLDER, text)


def _sub(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda m: blank(m.group(0)), text)


def mask_fences(body: str) -> str:
    """Blank fenced code blocks (``` and ~~~, possibly indented) including the fence lines."""
    out: list[str] = []
    fence: str | None = None
    for line in body.split("\n"):
        if fence is None:
            m = _FENCE.match(line)
            # A backtick fence's info string may not contain backticks (CommonMark).
            if m and not (m.group("fence")[0] == "`" and "`" in m.group("info")):
                fence = m.group("fence")
                out.append(blank(line))
            else:
                out.append(line)
            continue
        out.append(blank(line))
        stripped = line.strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            fence = None
    return "\n".join(out)


def mask_code(body: str) -> str:
    """Fenced code blocks and inline code spans blanked."""
    return _sub(_INLINE_CODE, mask_fences(body))


def mask_comments(text: str) -> str:
    return _sub(_COMMENT, text)


def mask_math(text: str) -> str:
    """``$$...$$``, ``\\[...\\]``, ``$...$`` and ``\\(...\\)`` blanked (pymdownx.arithmatex syntax)."""
    return _sub(_INLINE_MATH, _sub(_DISPLAY_MATH, text))


def mask_urls(text: str) -> str:
    """Link destinations, reference definitions, autolinks and bare URLs blanked.

    For inline links only the part inside the parentheses is blanked, so the
    ``](`` and ``)`` stay and the link text stays readable.
    """

    def dest(m: re.Match[str]) -> str:
        whole = m.group(0)
        return "](" + blank(whole[2:-1]) + ")"

    def ref(m: re.Match[str]) -> str:
        start = m.start("dest") - m.start(0)
        whole = m.group(0)
        return whole[:start] + blank(whole[start:])

    text = LINK_DEST.sub(dest, text)
    text = REF_DEF.sub(ref, text)
    text = _sub(_AUTOLINK, text)
    return _sub(_BARE_URL, text)


def line_at(text: str, offset: int, first_line: int) -> int:
    """1-based file line of ``offset`` in a body that starts on ``first_line``."""
    return first_line + text.count("\n", 0, offset)
