"""The computed answers of the efficient-inference article's exercises, recomputed independently.

Collected by ``tests/exercises/test_answers.py`` (``RECOMPUTED`` here) and checked here with its ``check``: the
build's value (``answers.compute_value``) against a recomputation that calls neither the answer functions nor
``code/quantize.py`` / ``code/inference_cost.py`` / ``code/tiled_attention.py``. The bytes come from the published
``config.json`` fields and the datasheet numbers written out in ``tests/figures/test_efficient_inference_claims.py``;
the quantized Tang GPT's losses from that module's own absmax quantizer; the online softmax from a plain loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from ..figures import test_efficient_inference_claims as ei_claims
from .test_answers import Value, check

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")


def int4_g128_bits() -> float:
    """4 bits per code, plus one 16-bit (float16) scale shared by 128 weights."""
    return 4 + 16 / 128


def fp16_ridge_batch() -> int:
    """fp16: 2 bytes read per weight, 2 FLOPs per weight and sequence, so the intensity is the batch size B; the
    smallest B at or above 312e12 / 2039e9."""
    shapes = ei_claims.matrices("Llama 2 7B")
    n = sum(o * i for o, i in shapes)
    ridge = ei_claims.A100_FLOPS / ei_claims.A100_BANDWIDTH
    assert (ei_claims.A100_FLOPS, ei_claims.A100_BANDWIDTH) == (312e12, 2039e9)  # as the question states them
    assert f"{ridge:.2f}" == "153.02"  # the question's 「约 153.02」
    batch = math.ceil(ridge)
    assert 2 * batch * n / (2 * n) >= ridge > 2 * (batch - 1) * n / (2 * n)
    return batch


def two_bit_scale_gap() -> float:
    """2 bits: one scale for the whole matrix against one per output row (the Tang GPT's validation windows)."""
    return ei_claims.loss(2, "tensor") - ei_claims.loss(2, "row")


def online_softmax_final() -> str:
    """The figure's row (seed 6, 23 keys, tiles of 5): the online weights after the last tile against softmax."""
    gen = torch.Generator().manual_seed(6)
    q = torch.randn(16, generator=gen, dtype=torch.float64)
    k = torch.randn(23, 16, generator=gen, dtype=torch.float64)
    s = k @ q / 4
    m, total = -math.inf, 0.0
    for start in range(0, 23, 5):
        block = s[start : start + 5]
        new = max(m, block.max().item())
        total = total * math.exp(m - new) + torch.exp(block - new).sum().item()
        m = new
    gap = (torch.exp(s - m) / total - torch.softmax(s, dim=-1)).abs().max().item()
    assert gap < 1e-12
    return "完全一样，只差浮点舍入"


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "int4-g128-bits": int4_g128_bits,
    "fp16-ridge-batch": fp16_ridge_batch,
    "two-bit-scale-gap": two_bit_scale_gap,
    "online-softmax-final": online_softmax_final,
}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])
