"""The BPE article's explorable figure (``bpe-segmentation``) in headless Chromium.

The numbers are read from the page and recomputed here: the tokenizer is trained with ``code/bpe.py`` on the training
poems as ``tests/figures/test_bpe_claims.py`` reads them (plain Python, not ``split_poems``), and the segmentation is
done by that module's encoder written out there -- never by reading the page's JSON.
"""

from __future__ import annotations

import pytest

from tests.conftest import figure_stats
from tests.figures import test_bpe_claims as bpe_claims

pytestmark = pytest.mark.browser
FIG = "#fig-bpe-segmentation"


def stats(page) -> dict[str, str]:
    return figure_stats(page, FIG)


def test_the_slider_walks_the_vocabulary_sizes(page, site_server):
    page.emulate_media(reduced_motion="reduce")
    page.goto(f"{site_server}articles/bpe-tokenizer/")
    page.wait_for_selector(f"{FIG} .llm-ix__bar")
    fig = page.locator(FIG)
    slider = fig.locator("input[type=range]")
    slider.focus()
    page.keyboard.press("Home")
    held = bpe_claims.held_text()
    poem = bpe_claims.POEM + "\n"
    for size in (256, 257, 258, 259, 260, 300):
        if size != 256:
            page.keyboard.press("ArrowRight")
        bpe = bpe_claims.ours_at(size)
        tokens = bpe.encode(poem)
        shown = stats(page)
        assert fig.locator(".llm-ix__title").inner_text().startswith(f"词表 {size}：")
        assert int(shown["这首诗的词元数"]) == len(tokens)
        assert float(shown["这首诗每个字符的词元数"]) == pytest.approx(len(tokens) / len(poem), abs=1e-3)
        assert float(shown["验证集每个字符的词元数"]) == pytest.approx(len(bpe.encode(held)) / len(held), abs=1e-3)
    page.keyboard.press("End")
    full = bpe_claims.ours_full()
    title = fig.locator(".llm-ix__title").inner_text()
    assert title.startswith(f"词表 {full.vocab_size}：")
    assert title.split("：", 1)[1].split(" | ")[:3] == ["玉階", "生", "白露"]
    assert int(stats(page)["这首诗的词元数"]) == len(bpe_claims.segmentation(full.vocab_size))
    # bars: one per character, the tallest (a character cut into three bytes) reaching the top at 256
    assert fig.locator("rect.llm-ix__bar").count() == len(poem)
    page.keyboard.press("Home")
    tallest = fig.locator("rect.llm-ix__bar").first.evaluate("b => b.getBoundingClientRect().height")
    plot = fig.locator(".llm-ix svg").evaluate("s => s.getBoundingClientRect().height")
    assert tallest > 0.6 * plot
