"""The computed answers of the GPT-from-scratch article's exercises, recomputed independently.

Collected by ``tests/exercises/test_answers.py`` (``RECOMPUTED`` here) and checked here with its ``check``. The
recomputations do not call the answer functions, the figure module, ``load_poems`` / ``split_poems`` or the
tokenizer: the corpus is read, split and its vocabulary counted in plain Python (``test_gpt_claims.corpus``),
parameter counts come from PyTorch's own modules on the meta device, and the trained model (the build artifact,
read from the run's cache) is run by a forward pass written out here from its ``state_dict`` with PyTorch's
functional ops -- which also gives the attention weights the ``gpt-attention`` figure shows. The sentences of the
explanations that state something about these results are checked too.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.figures.test_gpt_claims import corpus  # the split and the vocabulary, counted there in plain Python

from .test_answers import Value, check

# The trained Tang-poem model is read from the run's build cache, never trained here.
pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
CORPUS = ROOT / "data" / "tang_wujue" / "poems.txt"
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

D, LAYERS, HEADS, CONTEXT = 64, 4, 4, 64  # the reference model as the article states it
N_BYTES = 256
FIGURE_POEM = "白日依山盡，黃河入海流。欲窮千里目，更上一層樓。"  # the poem the gpt-attention figure reads
HELD_OUT_POEM = "玉管朝朝弄，清歌日日新。折花當驛路，寄與隴頭人。"  # the poem of the next-after-poem exercise




def encode(text: str) -> list[int]:
    """Characters of the vocabulary by their place after the 256 byte tokens, the rest as UTF-8 bytes."""
    index = {c: N_BYTES + i for i, c in enumerate(corpus()["chars"])}
    return [i for c in text for i in ([index[c]] if c in index else list(c.encode("utf-8")))]


@cache
def weights() -> dict[str, torch.Tensor]:
    import gpt_from_scratch

    model, tok, _ = gpt_from_scratch.pretrained_gpt(verbose=False)
    assert tok.chars == corpus()["chars"], "the trained model's vocabulary is not the one counted here"
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def forward(ids: list[int]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """(logits (T, V), per layer the attention weights (heads, T, T)), written out from the state dict."""
    w = weights()
    T = len(ids)
    x = w["embed.weight"][torch.tensor(ids)] + w["pos.embedding.weight"][:T]
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    attention = []
    for layer in range(LAYERS):
        p = f"blocks.{layer}."
        h = F.layer_norm(x, (D,), w[p + "ln.weight"], w[p + "ln.bias"])
        q, k, v = F.linear(h, w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"]).split(D, dim=-1)
        q, k, v = (t.reshape(T, HEADS, D // HEADS).transpose(0, 1) for t in (q, k, v))
        scores = (q @ k.transpose(-1, -2) / math.sqrt(D // HEADS)).masked_fill(future, float("-inf"))
        a = scores.softmax(dim=-1)
        attention.append(a)
        x = x + F.linear((a @ v).transpose(0, 1).reshape(T, D), w[p + "attn.out.weight"], w[p + "attn.out.bias"])
        h = F.layer_norm(x, (D,), w[p + "mlp.0.weight"], w[p + "mlp.0.bias"])
        up = F.gelu(F.linear(h, w[p + "mlp.1.up.weight"], w[p + "mlp.1.up.bias"]))
        x = x + F.linear(up, w[p + "mlp.1.down.weight"], w[p + "mlp.1.down.bias"])
    x = F.layer_norm(x, (D,), w["ln_f.weight"], w["ln_f.bias"])
    return F.linear(x, w["unembed.weight"], w["unembed.bias"]), attention


def token_text(i: int) -> str:
    return corpus()["chars"][i - N_BYTES] if i >= N_BYTES else f"<byte {i}>"


# --------------------------------------------------------------------------- the recomputations


def uniform_guess_loss() -> float:
    """ln V: the cross-entropy of 1/V for the right token, from F.cross_entropy of all-equal scores."""
    V = N_BYTES + len(corpus()["chars"])
    loss = F.cross_entropy(torch.zeros(3, V, dtype=torch.float64), torch.tensor([0, 7, V - 1])).item()
    assert math.isclose(loss, math.log(V), rel_tol=1e-12)
    return loss


def gpt_param_count() -> int:
    """PyTorch's own modules: embeddings, 4 Transformer layers (d_ff = 4d), a final LayerNorm, a Linear head."""
    V = N_BYTES + len(corpus()["chars"])

    def n(m: nn.Module) -> int:
        return sum(p.numel() for p in m.parameters())

    with torch.device("meta"):
        total = (n(nn.Embedding(V, D)) + n(nn.Embedding(CONTEXT, D))
                 + LAYERS * n(nn.TransformerEncoderLayer(D, HEADS, 4 * D)) + n(nn.LayerNorm(D)) + n(nn.Linear(D, V)))
    # the explanation's formula
    assert total == 2 * V * D + V + CONTEXT * D + LAYERS * (12 * D * D + 13 * D) + 2 * D
    # and "most of the parameters are in the embedding and the output layer"
    embedding_and_head = 2 * V * D + V
    assert embedding_and_head > total / 2
    return total


def next_after_poem() -> str:
    assert HELD_OUT_POEM in corpus()["held"] and HELD_OUT_POEM not in corpus()["train"]
    # "no variant of it in the training set": none of its four lines occurs in a training poem
    lines = [line for line in re.split("[，。]", HELD_OUT_POEM) if line]
    assert len(lines) == 4 and not any(line in poem for poem in corpus()["train"] for line in lines)
    ids = encode("\n" + HELD_OUT_POEM)
    assert len(ids) == 25 and all(i >= N_BYTES for i in ids), "no byte fallback: a newline and 24 characters"
    assert token_text(ids[24]) == "。"
    logits, _ = forward(ids)
    top = int(logits[-1].argmax())
    assert token_text(top) == "\n", token_text(top)
    # the explanation: in the training text, what follows the 24th token after a newline (when it is the
    # final full stop of a poem without byte fallback) is always a newline
    assert all(p.endswith("。") for p in corpus()["train"] if len(encode(p)) == 24)
    return "换行：这首诗结束了"


@cache
def full_stop_head() -> tuple[int, int]:
    """The head with the largest mean weight from the second half (positions 13-24) on position 12, over the
    held-out poems of exactly 25 tokens (the figure's head, recomputed)."""
    rows = [ids for p in corpus()["held"] if len(ids := encode("\n" + p)) == 25]
    total = torch.zeros(LAYERS, HEADS)
    for ids in rows:
        _, attention = forward(ids)
        total += torch.stack([a[:, 13:, 12].mean(dim=-1) for a in attention])
    flat = int(total.argmax())
    return flat // HEADS, flat % HEADS


def stop_head_before_stop() -> str:
    ids = encode("\n" + FIGURE_POEM)
    assert [token_text(ids[i]) for i in (0, 6, 10, 11, 12)] == ["\n", "，", "海", "流", "。"]
    layer, head = full_stop_head()
    _, attention = forward(ids)
    a = attention[layer][head]
    assert int(a[11].argmax()) == 6 and a[11, 6].item() > 0.5, a[11]
    # the explanation: at the full stop itself and in the second half, it turns to position 12
    assert all(int(a[t].argmax()) == 12 for t in range(12, 25))
    return "位置 6 的逗号：第一句的末尾"


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "uniform-guess-loss": uniform_guess_loss,
    "gpt-param-count": gpt_param_count,
    "next-after-poem": next_after_poem,
    "stop-head-before-stop": stop_head_before_stop,
}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])


def test_the_written_out_forward_is_the_model() -> None:
    """The forward pass above reproduces the trained model's logits, so the answers above are about that model."""
    import gpt_from_scratch

    model, _, _ = gpt_from_scratch.pretrained_gpt(verbose=False)
    ids = encode("\n" + FIGURE_POEM)
    with torch.no_grad():
        expected = model(torch.tensor([ids]))[0]
    logits, _ = forward(ids)
    assert torch.allclose(logits, expected, atol=1e-4)
