"""The computed answers of the LoRA article's exercises, recomputed independently.

Collected by ``tests/exercises/test_answers.py`` (``RECOMPUTED`` here) and checked here with its ``check``: the
build's value (``answers.compute_value``) against a recomputation that calls neither the answer functions nor
``code/lora.py`` / ``code/acrostic.py``. Layer shapes come from PyTorch's own ``nn.Linear`` on the meta device; the
prompt is encoded by hand from the corpus (as ``tests/figures/test_lora_claims.py`` does); the success rates come
from that module's greedy decoding of the hand-merged models.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

from ..figures import test_lora_claims as lora_claims
from .test_answers import Value, check

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")


def lora_r2_trainable() -> int:
    """Rank 2 on each of the 4 layers' qkv (64 -> 192) and out (64 -> 64): r * (d_in + d_out) for each."""
    with torch.device("meta"):
        layers = [nn.Linear(64, 192), nn.Linear(64, 64)] * 4
    return sum(2 * (layer.in_features + layer.out_features) for layer in layers)


def lora_4096_ratio() -> int:
    """A 4096 x 4096 matrix against rank-8 factors A (8 x 4096) and B (4096 x 8)."""
    with torch.device("meta"):
        full = nn.Linear(4096, 4096, bias=False).weight.numel()
        a, b = torch.empty(8, 4096), torch.empty(4096, 8)
    assert full % (a.numel() + b.numel()) == 0
    return full // (a.numel() + b.numel())


def acrostic_masked_positions() -> int:
    """「藏头：春夏秋冬\\n」 encoded by hand (头 and ： fall back to 3 UTF-8 bytes each): P - 1 unlabelled."""
    ids = lora_claims.prompt_ids("春夏秋冬")
    assert len(ids) == 1 + 3 + 3 + 4 + 1
    return len(ids) - 1


def lora_r1_form_vs_full() -> str:
    """The share of well-formed poems (four lines of five characters), LoRA r = 1 against full fine-tuning."""
    gap = lora_claims.well_formed("lora-1") - lora_claims.well_formed("full")
    options = ("明显低于全参数微调（低 10 个百分点以上）", "和全参数微调相差不到 10 个百分点",
               "明显高于全参数微调（高 10 个百分点以上）")
    return options[0] if gap < -0.1 else options[2] if gap > 0.1 else options[1]


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "lora-r2-trainable": lora_r2_trainable,
    "lora-4096-ratio": lora_4096_ratio,
    "acrostic-masked-positions": acrostic_masked_positions,
    "lora-r1-form-vs-full": lora_r1_form_vs_full,
}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])
