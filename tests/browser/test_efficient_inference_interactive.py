"""The efficient-inference article's explorable figure (``online-softmax-tiles``) in headless Chromium.

The running max, the normaliser, the rescaling factor and the bars are read from the page and recomputed here: the
figure's row (seed 6: a 16-dim query and 23 keys, standard normal float64) is rebuilt and folded tile by tile with a
plain loop in ``tests/figures/test_efficient_inference_claims.py`` (``row_steps``), and the exact softmax comes from
``torch.softmax`` -- never by reading the page's JSON or calling ``code/tiled_attention.py``.
"""

from __future__ import annotations

import math

import pytest
import torch

from tests.conftest import figure_stats
from tests.figures import test_efficient_inference_claims as ei_claims

pytestmark = pytest.mark.browser
FIG = "#fig-online-softmax-tiles"


def stats(page) -> dict[str, str]:
    return figure_stats(page, FIG)


def row() -> torch.Tensor:
    gen = torch.Generator().manual_seed(6)
    q = torch.randn(16, generator=gen, dtype=torch.float64)
    k = torch.randn(23, 16, generator=gen, dtype=torch.float64)
    return k @ q / 4


def test_the_slider_walks_the_tiles_to_the_exact_softmax(page, site_server):
    page.emulate_media(reduced_motion="reduce")
    page.goto(f"{site_server}articles/efficient-inference/")
    page.wait_for_selector(f"{FIG} .llm-ix__bar")
    fig = page.locator(FIG)
    assert fig.locator("rect.llm-ix__bar").count() == 23
    s = row()
    exact = torch.softmax(s, dim=-1)
    steps = ei_claims.row_steps(6)
    weights = [torch.cat([torch.exp(s[: min(5 * (i + 1), 23)] - m) / total, torch.zeros(23 - min(5 * (i + 1), 23),
                                                                                      dtype=s.dtype)])
               for i, (m, total, _) in enumerate(steps)]
    ymax = math.ceil(max(w.max().item() for w in weights) * 10) / 10
    slider = fig.locator("input[type=range]")
    slider.focus()
    page.keyboard.press("Home")
    for i, (m, total, factor) in enumerate(steps):
        if i:
            page.keyboard.press("ArrowRight")
        stop = min(5 * (i + 1), 23)
        assert fig.locator(".llm-ix__title").inner_text().startswith(f"第 {i + 1} 块（键 {5 * i + 1}–{stop}）处理完")
        shown = stats(page)
        assert int(shown["已经处理的键"].split("/")[0]) == stop
        assert float(shown["运行最大值 m"]) == pytest.approx(m, abs=6e-5)
        assert float(shown["归一化因子 l"]) == pytest.approx(total, abs=6e-5)
        assert float(shown["旧的 l 乘上的 exp(m_旧 − m_新)"]) == pytest.approx(factor, abs=6e-5)
        gap = (weights[i] - exact).abs().max().item()
        assert float(shown["和精确 softmax 的最大差"]) == pytest.approx(gap, abs=6e-5)
        scales = fig.locator("rect.llm-ix__bar").evaluate_all(
            "bars => bars.map(b => parseFloat((b.style.transform.match(/scaleY\\(([^)]+)\\)/) || [0, 0])[1]))")
        assert scales == pytest.approx((weights[i] / ymax).tolist(), abs=1e-3)
    # the last tile: the weights are the exact softmax
    assert float(stats(page)["和精确 softmax 的最大差"]) == 0
    assert steps[2][2] < 1 and steps[2][1] < steps[1][1]  # the third tile rescales, and l drops
