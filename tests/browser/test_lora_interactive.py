"""The LoRA article's explorable figure (``lora-poems``) in headless Chromium.

The poems, counts and rates are read from the page and recomputed here: ``tests/figures/test_lora_claims.py`` merges
the fine-tuned LoRA factors into plain copies of the stage-1 GPT by hand and rewrites every held-out head set with a
greedy loop of its own (no KV cache) -- never by reading the page's JSON.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import figure_stats
from tests.figures import test_lora_claims as lora_claims

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("trained_artifacts")]
FIG = "#fig-lora-poems"
LABELS = {"base": "基座模型", "lora-1": "LoRA r=1", "lora-4": "LoRA r=4", "lora-8": "LoRA r=8", "full": "全参数微调"}


def stats(page) -> dict[str, str]:
    return figure_stats(page, FIG)


def test_the_buttons_walk_the_head_sets_and_models(page, site_server):
    page.emulate_media(reduced_motion="reduce")
    page.goto(f"{site_server}articles/lora-finetune/")
    page.wait_for_selector(f"{FIG} .llm-ix__bar")
    fig = page.locator(FIG)
    heads = lora_claims.held_heads()
    n = len(heads)
    assert fig.locator("rect.llm-ix__bar").count() == 4  # one bar a line
    for i in (0, 3, 7):
        fig.locator("button", has_text=heads[i]).click()
        for name in ("base", "lora-4", "full"):
            fig.locator("button", has_text=LABELS[name]).click()
            poems, _ = lora_claims.greedy_poems(name)
            poem = poems[i]
            assert fig.locator(".llm-ix__title").inner_text() == f"藏头「{heads[i]}」· {LABELS[name]}：{poem}"
            shown = stats(page)
            hits = sum(a == b for a, b in zip(lora_claims.written(poem), heads[i], strict=False))
            assert int(shown["句首对上的句数"]) == hits
            assert int(shown["藏头成功"]) == int(lora_claims.written(poem) == heads[i])
            assert int(shown["格式正确"]) == int(lora_claims.form_ok(poem))
            rate = float(shown[f"验证集 {n} 组上格式正确的比例"])
            assert rate == pytest.approx(lora_claims.well_formed(name), abs=5e-4)
            rate = float(shown[f"验证集 {n} 组上藏头成功的比例"])
            assert rate == pytest.approx(lora_claims.success(name), abs=5e-4)
            # the bars: how many characters each of the first four lines has (ymax 10), 0 for a missing line
            lengths = [len(line) for line in re.split("[，。]", poem) if line][:4]
            scales = fig.locator("rect.llm-ix__bar").evaluate_all(
                "bars => bars.map(b => parseFloat((b.style.transform.match(/scaleY\\(([^)]+)\\)/) || [0, 0])[1]))")
            assert scales == pytest.approx([v / 10 for v in lengths + [0] * (4 - len(lengths))], abs=1e-4)
