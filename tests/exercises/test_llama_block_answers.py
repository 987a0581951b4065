"""The computed answers of the Llama-block article's exercises, recomputed independently.

Collected by ``tests/exercises/test_answers.py`` (``RECOMPUTED`` here) and checked here with its ``check``: the
build's value (``answers.compute_value``) against a recomputation that calls neither the answer functions nor
``code/llama.py``. The block's parameters come from PyTorch's own ``nn.Linear`` / ``nn.RMSNorm`` on the meta
device; the KV bytes from the formula; the RoPE tables from 2 x 2 rotations written out here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch import nn

from ..figures.claims import rotate_pairs
from .test_answers import Value, check


def llama_block_params_96() -> int:
    """d = 96, 4 query heads of 24, 2 KV heads, SwiGLU hidden ceil(8/3 * 96) = 256, no biases, two RMSNorm gains."""
    d, heads, kv, hidden = 96, 4, 2, math.ceil(8 * 96 / 3)
    head = d // heads
    with torch.device("meta"):
        layers = [nn.Linear(d, heads * head, bias=False), nn.Linear(d, kv * head, bias=False),
                  nn.Linear(d, kv * head, bias=False), nn.Linear(heads * head, d, bias=False),
                  nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False), nn.Linear(hidden, d, bias=False),
                  nn.RMSNorm(d), nn.RMSNorm(d)]
    count = sum(p.numel() for layer in layers for p in layer.parameters())
    assert count == 2 * d * d + 2 * d * kv * head + 3 * d * hidden + 2 * d
    return count


def kv_bytes_28_4() -> int:
    """K and V, 28 layers, 4 KV heads of 128 values, 2 bytes each (float16)."""
    return 2 * 28 * 4 * 128 * 2


def rope_table(q: torch.Tensor, k: torch.Tensor, offset: int, size: int = 16) -> torch.Tensor:
    qs = torch.stack([rotate_pairs(q, offset + i) for i in range(size)])
    ks = torch.stack([rotate_pairs(k, offset + j) for j in range(size)])
    return qs @ ks.T


def llama_rope_shift() -> str:
    """The figure's pair (seed 0, two 16-dim standard normal vectors in float64): the table at s = 1024 equals s = 0."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(16, generator=gen, dtype=torch.float64)
    k = torch.randn(16, generator=gen, dtype=torch.float64)
    before, after = rope_table(q, k, 0), rope_table(q, k, 1024)
    assert (before - after).abs().max().item() < 1e-9
    return "一格都不变"


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "llama-block-params-96": llama_block_params_96,
    "llama-kv-bytes-28-4": kv_bytes_28_4,
    "llama-rope-shift": llama_rope_shift,
}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])
