"""The offline list finds the files a page loads with a faster scan (``offline._refs``) that must find exactly what
``offline._REF.findall`` finds: the same references, in the same order, word boundaries included."""

from __future__ import annotations

import pytest

from llmsite import offline

CASES = [
    '<link rel="stylesheet" href="../assets/a.css"><script src="x.js"></script>',
    '<img src="a.png" data-src="no.png" xsrc="no.png" _href="no" -href="yes.svg" é href="yes2">',
    '<div data-llm-data="../figures/f.data.json" data-llm-header=\'p/m.json\'></div>',
    '<a href = "spaced.html#frag">x</a><a href="#only-fragment">y</a><a href="">z</a>',
    "src=\"at-start.js\" hrefsrc=\"no\" src='single.js' src=unquoted.js",
    'éhref="no-unicode-word-before" 中href="no" 。href="yes-punct" href="a" href="b"',
    "srcsrc=\"x\" data-llm-data-llm-data=\"y\" <p>no attributes at all</p>",
]


@pytest.mark.parametrize("html", CASES)
def test_the_scan_finds_what_the_reference_pattern_finds(html: str) -> None:
    assert offline._refs(html) == offline._REF.findall(html)


def test_a_long_page_with_every_kind_of_reference() -> None:
    html = "\n".join(CASES * 200)
    assert offline._refs(html) == offline._REF.findall(html)
