"""Every number (and every checkable statement) the attention article makes about a computation, recomputed.

Each entry of ``CLAIMS`` names where the claim is (a regular expression that must match a line of
``docs/articles/transformer-attention.md`` or the caption of one of its figures), reads the numbers the
sentence states from the regex groups, and checks them against a recomputation that uses the teaching modules
in ``code/`` (attention, multi-head attention, positional encodings) plus plain PyTorch -- never the figure
functions. If a sentence is reworded, the test says the claim is gone; if a seed or a module changes so that
the sentence no longer holds, it names the article line (or caption) and shows stated against recomputed.

The figures' random data follow a recipe the captions state (256 queries, 64 keys, seeded by d_k; seven
16-dimensional vectors seeded with 7). The recipe is written out again here, and one test checks that it
reproduces the figure module's inputs, so the numbers recomputed here are about the data the reader sees.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import pytest
import torch

from . import claims
from .claims import Claim, approx, below_power_of_ten, holds, span

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "transformer-attention.md"
FIGURES = CODE / "figures" / "transformer_attention.py"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

from attention import causal_mask, padding_mask, scaled_dot_product_attention  # noqa: E402
from multi_head_attention import MultiHeadAttention  # noqa: E402
from positional_encoding import (  # noqa: E402
    LearnedPositionEmbedding,
    apply_rope,
    sinusoidal_position_encoding,
)

D_KS = (4, 8, 16, 32, 64, 128, 256, 512)
N_QUERIES, N_KEYS = 256, 64
NEAR_ZERO = 0.01  # the article's threshold for "gradient almost zero"
GROWTH = 3  # the article's example: training has made q and k each 3 times larger
# Llama 2 7B as Touvron et al. (2023) publish it: a configuration the article cites, not a computation
LLAMA2_7B = {"n_layers": 32, "n_heads": 32, "context": 4096}


# --------------------------------------------------------------------------- recomputations


@cache
def random_qk(d_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The figures' recipe: q (256, d_k) then k (64, d_k), standard normal, float64, generator seeded with d_k."""
    generator = torch.Generator().manual_seed(d_k)
    q = torch.randn(N_QUERIES, d_k, generator=generator, dtype=torch.float64)
    k = torch.randn(N_KEYS, d_k, generator=generator, dtype=torch.float64)
    return q, k


def scores(d_k: int, scaled: bool) -> torch.Tensor:
    q, k = random_qk(d_k)
    z = q @ k.T
    return z / math.sqrt(d_k) if scaled else z


@cache
def weights(d_k: int, scaled: bool) -> torch.Tensor:
    """Softmax weights from code/attention.py, checked against torch.softmax on the same scores."""
    q, k = random_qk(d_k)
    v = torch.zeros(N_KEYS, 1, dtype=torch.float64)
    _, w = scaled_dot_product_attention(q, k, v, scale=None if scaled else 1.0)
    torch.testing.assert_close(w, torch.softmax(scores(d_k, scaled), dim=-1))
    return w


@cache
def jacobian_norms(d_k: int, scaled: bool) -> torch.Tensor:
    """Frobenius norm of d softmax(z) / d z for every query row, by automatic differentiation (n_queries,)."""
    jac = torch.func.vmap(torch.func.jacrev(lambda z: torch.softmax(z, dim=-1)))(scores(d_k, scaled))
    return jac.flatten(1).norm(dim=-1)


def score_variance(d_k: int, scaled: bool) -> float:
    """Variance of one query's scores over the keys, averaged over the queries."""
    return scores(d_k, scaled).var(dim=-1).mean().item()


def mean_max_weight(d_k: int, scaled: bool) -> float:
    return weights(d_k, scaled).max(dim=-1).values.mean().item()


def median_norm(d_k: int, scaled: bool) -> float:
    return jacobian_norms(d_k, scaled).median().item()


def near_zero_rows(d_k: int, scaled: bool) -> int:
    return int((jacobian_norms(d_k, scaled) < NEAR_ZERO).sum())


def softmax_jacobian_norms(z: torch.Tensor) -> torch.Tensor:
    """The same per-row Frobenius norm as jacobian_norms, for any (rows, keys) scores."""
    return torch.func.vmap(torch.func.jacrev(lambda s: torch.softmax(s, dim=-1)))(z).flatten(1).norm(dim=-1)


def grown_scores(d_k: int, factor: float, qk_norm: bool = False) -> torch.Tensor:
    """Scaled scores after training has made q and k `factor` times larger; with qk_norm, each row of q and k
    is first divided by its root mean square (QK-norm without a learned gain)."""
    q, k = random_qk(d_k)
    q, k = factor * q, factor * k
    if qk_norm:
        q = q / q.pow(2).mean(dim=-1, keepdim=True).sqrt()
        k = k / k.pow(2).mean(dim=-1, keepdim=True).sqrt()
    return q @ k.T / math.sqrt(d_k)


def grown_near_zero_rows(d_k: int, factor: float, qk_norm: bool = False) -> int:
    return int((softmax_jacobian_norms(grown_scores(d_k, factor, qk_norm)) < NEAR_ZERO).sum())


def check_grown_variance(stated: list) -> str | None:
    """q and k each `factor` times larger: the scaled scores' variance is factor**4 times larger (exactly, on the
    figures' d_k = 64 draw), and that is more than the unscaled variance at d_k = 64."""
    factor, ratio = int(stated[0]), int(stated[1])
    if factor != GROWTH:
        return f"states a growth of {factor}, the recomputations use {GROWTH}"
    measured = grown_scores(64, factor).var(dim=-1).mean().item() / score_variance(64, True)
    if ratio != factor**4 or not math.isclose(measured, ratio, rel_tol=1e-9):
        return f"states x{ratio}, recomputed x{measured:.6g} (factor**4 = {factor**4})"
    if not grown_scores(64, factor).var(dim=-1).mean().item() > score_variance(64, False):
        return "the grown scaled variance is not above the unscaled one at d_k = 64"
    return None


def score_matrix_gib(n_heads: int, seq_len: int) -> float:
    """fp32 bytes of one layer's (n_heads, T, T) weights for one sequence, in GiB, by counting what
    code/attention.py really materialises on a small input and scaling the element count."""
    t_small, d = 16, 8
    q = torch.zeros(1, n_heads, t_small, d, dtype=torch.float32)
    _, w = scaled_dot_product_attention(q, q, q)
    assert tuple(w.shape) == (1, n_heads, t_small, t_small)
    bytes_per_element = w.nbytes // w.numel()
    return n_heads * seq_len * seq_len * bytes_per_element / 2**30


def check_score_matrix_bytes(stated: list) -> str | None:
    heads, seq_len, heads_again, seq_again, per_element, gib, long_len, long_gib = (int(x) for x in stated)
    if (heads, seq_len) != (LLAMA2_7B["n_heads"], LLAMA2_7B["context"]):
        return f"states {heads} heads and {seq_len} tokens, Llama 2 7B has {LLAMA2_7B}"
    if (heads_again, seq_again) != (heads, seq_len) or per_element != 4:
        return f"the product {heads_again} x {seq_again}² x {per_element} does not restate {heads} heads, T = {seq_len}"
    actual = (score_matrix_gib(heads, seq_len), score_matrix_gib(heads, long_len))
    if (gib, long_gib) != actual:
        return f"states {gib} and {long_gib} GiB, recomputed {actual}"
    return None


def attention_cost(seq_len: int) -> tuple[int, int]:
    """(FLOPs counted by PyTorch, bytes of the weights) of code/attention.py on one (4 heads, T, 16) input."""
    from torch.utils.flop_counter import FlopCounterMode

    q = torch.randn(1, 4, seq_len, 16, generator=torch.Generator().manual_seed(seq_len))
    with FlopCounterMode(display=False) as counter:
        _, w = scaled_dot_product_attention(q, q, q)
    return counter.get_total_flops(), w.nbytes


def doubling_factor() -> float:
    """How much the work and the score memory grow when the sequence doubles (both the same)."""
    (f1, b1), (f2, b2) = attention_cost(64), attention_cost(128)
    assert f2 / f1 == b2 / b1
    return f2 / f1


@cache
def mask_demo() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The mask figure's recipe: 7 random vectors of 16 dimensions (seed 7), Q = K = V = x."""
    x = torch.randn(7, 16, generator=torch.Generator().manual_seed(7))
    _, plain = scaled_dot_product_attention(x, x, x)
    _, masked = scaled_dot_product_attention(x, x, x, mask=causal_mask(7))
    return x, plain, masked


def rope_score_spread(d: int = 64, starts: Sequence[int] = (0, 100, 1000)) -> float:
    """Largest difference between the score curves of one random (q, k) pair started at different positions."""
    generator = torch.Generator().manual_seed(3)
    qk = torch.randn(2, d, generator=generator, dtype=torch.float64)  # rows: q, k
    curves = []
    for m in starts:
        curve = []
        for delta in range(-32, 33):
            rotated = apply_rope(qk, torch.tensor([m, m + delta]))  # q at position m, k at m + delta
            curve.append((rotated[0] @ rotated[1]).item() / math.sqrt(d))
        curves.append(torch.tensor(curve, dtype=torch.float64))
    return max((c - curves[0]).abs().max().item() for c in curves[1:])


def rope_half_pairing(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """RoPE as GPT-NeoX and Hugging Face write it: dimension i turns together with dimension i + d/2."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.to(torch.float64)[:, None] * theta  # (T, d/2)
    cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)
    first, second = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-second, first], dim=-1) * sin


# --------------------------------------------------------------------------- facts (checks without a number)


def fact_diagonal_brightest() -> bool:
    _, plain, _ = mask_demo()
    return bool((plain.argmax(dim=-1) == torch.arange(7)).all())


def fact_mask_structure() -> bool:
    _, _, masked = mask_demo()
    rows_sum_to_one = torch.allclose(masked.sum(dim=-1), torch.ones(7))
    return rows_sum_to_one and bool((masked.triu(diagonal=1) == 0).all())


def fact_unscaled_median_above_scaled_up_to_64() -> bool:
    above = [median_norm(d, False) > median_norm(d, True) for d in D_KS]
    return above == [d <= 64 for d in D_KS]


def fact_unscaled_median_falls_after_16() -> bool:
    medians = [median_norm(d, False) for d in D_KS]
    peak = D_KS.index(16)
    falling = all(a > b for a, b in zip(medians[peak:-1], medians[peak + 1 :], strict=True))
    return medians.index(max(medians)) == peak and falling


def fact_mean_held_up_by_few_rows() -> bool:
    norms = jacobian_norms(512, False)
    top = norms.sort(descending=True).values
    # the mean is far above the median, and the top fifth of the rows carries most of the sum
    return norms.mean() > 50 * norms.median() and top[: len(top) // 5].sum() > 0.5 * top.sum()


def fact_no_scaled_row_near_zero() -> bool:
    return all(near_zero_rows(d, True) == 0 for d in D_KS)


def fact_qk_norm_removes_saturation() -> bool:
    """Without growth no scaled row is near zero; after growth some are; QK-norm brings it back to none."""
    return (near_zero_rows(64, True) == 0 and grown_near_zero_rows(64, GROWTH) > 0
            and grown_near_zero_rows(64, GROWTH, qk_norm=True) == 0)


def fact_matches_torch_sdpa() -> bool:
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(8)
    q, k, v = (torch.randn(2, 4, 9, 8, generator=gen, dtype=torch.float64) for _ in range(3))
    out, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(9))
    return torch.allclose(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))


def fact_gqa_by_broadcast() -> bool:
    """q's heads split into (groups, heads per group) and k, v as (B, groups, 1, T, d): the function computes
    GQA (and MQA with one group), equal to repeating each group's k, v and to PyTorch's enable_gqa=True."""
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(9)
    b, n_heads, t, d = 2, 8, 6, 4
    for groups in (1, 2, 4):
        per_group = n_heads // groups
        q = torch.randn(b, n_heads, t, d, generator=gen, dtype=torch.float64)
        k, v = (torch.randn(b, groups, t, d, generator=gen, dtype=torch.float64) for _ in range(2))
        out, _ = scaled_dot_product_attention(q.view(b, groups, per_group, t, d), k[:, :, None], v[:, :, None],
                                              mask=causal_mask(t))
        out = out.reshape(b, n_heads, t, d)
        repeated = F.scaled_dot_product_attention(q, k.repeat_interleave(per_group, 1),
                                                  v.repeat_interleave(per_group, 1), is_causal=True)
        native = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        if not (torch.allclose(out, repeated) and torch.allclose(out, native)):
            return False
    return True


def fact_parameters_do_not_depend_on_heads() -> bool:
    counts = {sum(p.numel() for p in MultiHeadAttention(64, h).parameters()) for h in (1, 2, 4, 8, 16)}
    return len(counts) == 1


def fact_head_scores_rank_at_most_d_head() -> bool:
    torch.manual_seed(0)
    d_model, n_heads, n = 32, 8, 20
    mha = MultiHeadAttention(d_model, n_heads).double()
    x = torch.randn(1, n, d_model, dtype=torch.float64)
    q, k, _ = mha.qkv(x).chunk(3, dim=-1)
    d_head = d_model // n_heads
    q = q.view(n, n_heads, d_head).transpose(0, 1)
    k = k.view(n, n_heads, d_head).transpose(0, 1)
    ranks = torch.linalg.matrix_rank(q @ k.transpose(-2, -1))  # (n_heads,) ranks of N x N score matrices
    return bool((ranks == d_head).all())  # at most d_head, and random weights reach it


def fact_permutation_equivariance() -> bool:
    """f(PX) = P f(X) for multi-head self-attention without a mask; a causal mask breaks it."""
    torch.manual_seed(1)
    mha = MultiHeadAttention(16, 4).double()
    x = torch.randn(1, 6, 16, dtype=torch.float64)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    with torch.no_grad():
        equivariant = torch.allclose(mha(x[:, perm]), mha(x)[:, perm], atol=1e-12)
        causal = torch.allclose(mha(x[:, perm], mask=causal_mask(6)), mha(x, mask=causal_mask(6))[:, perm])
    return equivariant and not causal


def fact_uniform_causal_head_reads_position() -> bool:
    """A head that attends evenly to what it can see gives the start token a share of 1/i at position i."""
    t = 8
    q = torch.zeros(t, 4, dtype=torch.float64)  # all scores equal: uniform weights
    v = torch.zeros(t, 1, dtype=torch.float64)
    v[0, 0] = 1.0  # the start token's marker
    out, _ = scaled_dot_product_attention(q, q, v, mask=causal_mask(t))
    return torch.allclose(out[:, 0], 1.0 / torch.arange(1, t + 1, dtype=torch.float64))


def fact_sinusoidal_shift_is_one_linear_map() -> bool:
    d, shift = 16, 5
    pe = sinusoidal_position_encoding(seq_len=60, d_model=d).double()
    omega = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    rotation = torch.zeros(d, d, dtype=torch.float64)
    for i, w in enumerate(omega * shift):  # (sin, cos) pair i turns by omega_i * k, the same for every pos
        c, s = math.cos(w), math.sin(w)
        rotation[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    return torch.allclose(pe[shift:], pe[:-shift] @ rotation.T, atol=1e-5)  # pe is float32 from the module


def fact_rope_angles() -> bool:
    """Position 1 turns pair (2i, 2i+1) by theta_i = 10000^(-2i/d)."""
    d = 16
    for i in range(d // 2):
        e = torch.zeros(1, d, dtype=torch.float64)
        e[0, 2 * i] = 1.0
        out = apply_rope(e, torch.tensor([1]))[0]
        angle = math.atan2(out[2 * i + 1].item(), out[2 * i].item())
        if not math.isclose(angle, 10000.0 ** (-2 * i / d), rel_tol=1e-12):
            return False
    return True


def fact_rope_pairings_agree_up_to_permutation() -> bool:
    d, t = 16, 9
    gen = torch.Generator().manual_seed(4)
    q = torch.randn(t, d, generator=gen, dtype=torch.float64)
    k = torch.randn(t, d, generator=gen, dtype=torch.float64)
    pos = torch.arange(t)
    # adjacent layout position 2i holds half-layout dimension i, position 2i + 1 holds dimension i + d/2
    interleave = torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], dim=-1).flatten()
    same_vectors = torch.allclose(apply_rope(q[:, interleave], pos), rope_half_pairing(q, pos)[:, interleave])
    s_adjacent = apply_rope(q[:, interleave], pos) @ apply_rope(k[:, interleave], pos).T
    s_half = rope_half_pairing(q, pos) @ rope_half_pairing(k, pos).T
    differ_without_permutation = not torch.allclose(apply_rope(q, pos), rope_half_pairing(q, pos))
    return same_vectors and torch.allclose(s_adjacent, s_half) and differ_without_permutation


def fact_view_after_transpose_fails() -> bool:
    y = torch.randn(2, 4, 5, 8).transpose(1, 2)  # (B, n_heads, T, d_head) -> (B, T, n_heads, d_head)
    try:
        y.view(2, 5, 32)
    except RuntimeError:
        return torch.equal(y.contiguous().view(2, 5, 32), y.reshape(2, 5, 32))
    return False


def fact_zero_fill_leaks_minus_inf_does_not() -> bool:
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(4, 8, generator=gen) for _ in range(3))
    mask = causal_mask(4)
    leaked = torch.softmax((q @ k.T / math.sqrt(8)).masked_fill(mask, 0.0), dim=-1)
    _, w = scaled_dot_product_attention(q, k, v, mask=mask)
    return bool((leaked[mask] > 0).all()) and bool((w[mask] == 0).all())


def fact_fully_masked_query_gives_zeros() -> bool:
    gen = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(1, 3, 4, generator=gen) for _ in range(3))
    mask = torch.zeros(1, 3, 3, dtype=torch.bool)
    mask[0, 1] = True  # query 1 may look at nothing
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    return bool(torch.isfinite(out).all()) and bool((w[0, 1] == 0).all()) and bool((out[0, 1] == 0).all())


def fact_padding_or_causal_broadcasts() -> bool:
    combined = padding_mask(torch.tensor([4, 2]), 4) | causal_mask(4)
    return tuple(combined.shape) == (2, 1, 4, 4) and bool(combined[1, 0, 3, 2]) and not bool(combined[0, 0, 3, 2])


def fact_key_padding_mask_reaches_every_head_and_query() -> bool:
    """key_padding_mask (B, T) acts like padding_mask (B, 1, 1, T): no head and no query sees a padded key."""
    torch.manual_seed(2)
    mha = MultiHeadAttention(16, 4).double()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    lengths = torch.tensor([5, 3])
    padded = torch.arange(5)[None, :] >= lengths[:, None]  # (B, T), True at padding
    with torch.no_grad():
        y, w = mha(x, key_padding_mask=padded, need_weights=True)
        y_ref, _ = mha(x, mask=padding_mask(lengths, 5), need_weights=True)
    return torch.allclose(y, y_ref) and bool((w[1, :, :, 3:] == 0).all()) and bool((w[0] > 0).all())


def fact_learned_embedding_refuses_long_input() -> bool:
    emb = LearnedPositionEmbedding(max_len=8, d_model=4)
    emb(torch.zeros(1, 8, 4))
    try:
        emb(torch.zeros(1, 9, 4))
    except ValueError:
        return True
    return False


# --------------------------------------------------------------------------- the table


def name_head_threshold() -> float:
    """The score a head needs before code/tiny_transformer.py gives it a role (the caption quotes it)."""
    import inspect

    from tiny_transformer import name_head

    return inspect.signature(name_head).parameters["threshold"].default


def fact_typical_query_is_the_median() -> bool:
    """The query dk-explorer draws at each of its d_k is one whose Jacobian norm is the median of the 256 rows."""
    fig = _figure_module()
    return all(jacobian_norms(d, False)[fig.typical_query(d)].item() == median_norm(d, False)
               for d in fig.EXPLORER_D_KS)


def first_above(threshold: float) -> int:
    return next(d for d in D_KS if mean_max_weight(d, False) > threshold)


CLAIMS = [
    # the mask demonstration (figure attention-weights)
    Claim("diagonal weight", "article",
          r"对角线上的权重平均为 (\d\.\d+)",
          approx(lambda: mask_demo()[1].diagonal().mean().item())),
    Claim("diagonal brightest", "article",
          r"对角线最亮是这种构造带来的",
          holds(fact_diagonal_brightest)),
    Claim("mask structure", "article",
          r"对角线右上方的格子全部变成 0.*每一行加起来仍然是 1",
          holds(fact_mask_structure)),
    Claim("mask figure data", "attention-weights",
          r"输入是 (\d+) 个未经训练的随机向量 x（(\d+) 维）",
          approx(lambda: mask_demo()[0].shape[0], lambda: mask_demo()[0].shape[1], exact=True)),
    Claim("mask figure structure", "attention-weights",
          r"右图对角线右上方的权重全部为 0，而每一行加起来仍然是 1",
          holds(fact_mask_structure)),
    Claim("mask figure diagonal", "attention-weights",
          r"对角线最亮是这种构造的结果",
          holds(fact_diagonal_brightest)),
    # variance of the dot product (figure dot-product-variance)
    Claim("std at 512", "article",
          r"当 \$d_k=512\$ 时，标准差约为 (\d+\.\d)",
          approx(lambda: math.sqrt(512))),
    Claim("measured variance at 512", "article",
          r"\$d_k=512\$ 时实测为 (\d+)",
          approx(lambda: score_variance(512, False))),
    Claim("scaled variance range", "article",
          r"缩放后则稳定在 1 附近，各个 \$d_k\$ 下都在 (\d\.\d+) 到 (\d\.\d+) 之间",
          span(lambda: [score_variance(d, True) for d in D_KS])),
    Claim("scaled variance range", "dot-product-variance",
          r"方块是除以 .* 之后的方差，在 (\d\.\d+) 到 (\d\.\d+) 之间",
          span(lambda: [score_variance(d, True) for d in D_KS])),
    Claim("figure data", "dot-product-variance",
          r"(\d+) 个查询、(\d+) 个键",
          approx(lambda: N_QUERIES, lambda: N_KEYS, exact=True)),
    # saturation (figure softmax-saturation)
    Claim("max weight at 64", "article",
          r"\$d_k=64\$ 时是 (\d\.\d+)",
          approx(lambda: mean_max_weight(64, False))),
    Claim("first d_k above 0.9", "article",
          r"从 \$d_k=(\d+)\$ 起才超过 0\.9",
          approx(lambda: first_above(0.9), exact=True)),
    Claim("scaled max weight range", "article",
          r"缩放后的曲线几乎是平的，各个 \$d_k\$ 下都在 (\d\.\d+) 到 (\d\.\d+) 之间",
          span(lambda: [mean_max_weight(d, True) for d in D_KS])),
    Claim("scaled max weight range", "softmax-saturation",
          r"缩放后它基本不随 \$d_k\$ 变化，在 (\d\.\d+) 到 (\d\.\d+) 之间",
          span(lambda: [mean_max_weight(d, True) for d in D_KS])),
    Claim("figure data", "softmax-saturation",
          r"(\d+) 个查询、(\d+) 个键",
          approx(lambda: N_QUERIES, lambda: N_KEYS, exact=True)),
    # gradient (figure softmax-gradient)
    Claim("unscaled above scaled up to 64", "article",
          r"\$d_k\$ 不超过 64 的时候.*典型一行的梯度甚至比缩放后还大一些",
          holds(fact_unscaled_median_above_scaled_up_to_64)),
    Claim("median 16 -> 512", "article",
          r"中位数从 \$d_k=16\$ 时的 (\d\.\d+) 降到 \$d_k=512\$ 时的 (\d\.\d+)",
          approx(lambda: median_norm(16, False), lambda: median_norm(512, False))),
    Claim("near-zero rows at 512", "article",
          r"\$d_k=512\$ 时，(\d+) 行里有 (\d+) 行的范数小于 0\.01",
          approx(lambda: N_QUERIES, lambda: near_zero_rows(512, False), exact=True)),
    Claim("near-zero rows at 64 and 128", "article",
          r"\$d_k=64\$ 时 (\d+) 行里有 (\d+) 行的范数小于 0\.01，\$d_k=128\$ 时有 (\d+) 行",
          approx(lambda: N_QUERIES, lambda: near_zero_rows(64, False), lambda: near_zero_rows(128, False),
                 exact=True)),
    Claim("mean at 512", "article",
          r"平均值降得慢得多，\$d_k=512\$ 时仍有 (\d\.\d+)",
          approx(lambda: jacobian_norms(512, False).mean().item())),
    Claim("mean held up by few rows", "article",
          r"少数还没饱和的行梯度很大，把平均值撑住了",
          holds(fact_mean_held_up_by_few_rows)),
    Claim("scaled median range", "article",
          r"缩放之后，中位数在各个 \$d_k\$ 下都在 (\d\.\d+) 到 (\d\.\d+) 之间",
          span(lambda: [median_norm(d, True) for d in D_KS])),
    Claim("no scaled row near zero", "article",
          r"没有一行的范数小于 0\.01",
          holds(fact_no_scaled_row_near_zero)),
    Claim("figure data", "softmax-gradient",
          r"(\d+) 个查询、(\d+) 个键",
          approx(lambda: N_QUERIES, lambda: N_KEYS, exact=True)),
    Claim("threshold", "softmax-gradient",
          r"右图是范数小于 (0\.\d+)、梯度几乎为 0 的行所占的比例",
          approx(lambda: _figure_module().NEAR_ZERO_GRADIENT, exact=True)),
    Claim("median peak", "softmax-gradient",
          r"中位数在 \$d_k\$ = 16 时最大（(\d\.\d+)），之后一路下降，到 512 只剩 (\d\.\d+)",
          approx(lambda: median_norm(16, False), lambda: median_norm(512, False))),
    Claim("median falls after 16", "softmax-gradient",
          r"中位数在 \$d_k\$ = 16 时最大.*之后一路下降",
          holds(fact_unscaled_median_falls_after_16)),
    Claim("median over the rows", "softmax-gradient",
          r"实线是 (\d+) 行的中位数",
          approx(lambda: jacobian_norms(64, False).numel(), exact=True)),
    Claim("near-zero rows at 512", "softmax-gradient",
          r"(\d+) 行里有 (\d+) 行的梯度几乎为 0",
          approx(lambda: N_QUERIES, lambda: near_zero_rows(512, False), exact=True)),
    Claim("mean held up by few rows", "softmax-gradient",
          r"平均值下降得慢得多，因为它被少数还没饱和的行撑着",
          holds(fact_mean_held_up_by_few_rows)),
    Claim("scaled median range", "softmax-gradient",
          r"中位数始终在 (\d\.\d+) 到 (\d\.\d+) 之间",
          span(lambda: [median_norm(d, True) for d in D_KS])),
    Claim("no scaled row near zero", "softmax-gradient",
          r"没有一行的范数小于 0\.01",
          holds(fact_no_scaled_row_near_zero)),
    Claim("the typical query", "dk-explorer",
          r"随机向量，(\d+) 个查询、(\d+) 个键.*它的范数就是 (\d+) 行的中位数",
          lambda stated: approx(lambda: N_QUERIES, lambda: N_KEYS, lambda: jacobian_norms(64, False).numel(),
                                exact=True)(stated) or holds(fact_typical_query_is_the_median)(stated)),
    # the scaling holds at initialisation only; QK-norm
    Claim("grown q, k", "article",
          r"尺度各长到原来的 (\d+) 倍，缩放后分数的方差就变成原来的 (\d+) 倍，比 \$d_k=64\$ 时完全不缩放还大",
          check_grown_variance),
    Claim("grown q, k saturate", "article",
          r"把 \$q\$、\$k\$ 各乘 (\d+) 再算，(\d+) 行里有 (\d+) 行的雅可比范数小于 0\.01，而不乘时一行也没有",
          approx(lambda: GROWTH, lambda: N_QUERIES, lambda: grown_near_zero_rows(64, GROWTH), exact=True)),
    Claim("QK-norm", "article",
          r"对上面乘过 (\d+) 的 \$q\$、\$k\$ 先各自除以均方根，再照常打分，范数小于 0\.01 的行又回到 (\d+) 行",
          approx(lambda: GROWTH, lambda: grown_near_zero_rows(64, GROWTH, qk_norm=True), exact=True)),
    Claim("QK-norm, no row near zero before growth", "article",
          r"而不乘时一行也没有.*又回到 0 行",
          holds(fact_qk_norm_removes_saturation)),
    # the T x T score matrix
    Claim("doubling T", "article",
          r"正比于 \$T\^2 d_k\$，序列长度翻一倍，这两样都变成 (\d+) 倍",
          approx(doubling_factor, exact=True)),
    Claim("score matrix bytes", "article",
          r"(\d+) 个头，上下文 (\d+) 个词元，.*打分矩阵用 fp32 存，就是 (\d+) × (\d+)² × (\d+) 字节 = (\d+) GiB；"
          r"上下文到 (\d+) 时是 (\d+) GiB",
          check_score_matrix_bytes),
    Claim("score matrices of all layers", "article",
          r"(\d+) 层加起来是 (\d+) GiB",
          approx(lambda: LLAMA2_7B["n_layers"],
                 lambda: LLAMA2_7B["n_layers"] * score_matrix_gib(LLAMA2_7B["n_heads"], LLAMA2_7B["context"]),
                 exact=True)),
    Claim("same as PyTorch", "article",
          r"测试把它和 PyTorch 的这个函数逐项对照，结果一致",
          holds(fact_matches_torch_sdpa)),
    Claim("GQA by broadcasting", "article",
          r"`k`、`v` 写成 `\(B, 组数, 1, T, d_k\)`，广播会把每组的键和值分给组里所有的查询头.*`enable_gqa=True`",
          holds(fact_gqa_by_broadcast)),
    # multi-head attention
    Claim("head-naming threshold", "multi-head-weights",
          r"门槛 (\d\.\d+)",
          approx(lambda: name_head_threshold(), exact=True)),
    Claim("parameters independent of heads", "article",
          r"把一个头换成 \$h\$ 个头，参数量不变",
          holds(fact_parameters_do_not_depend_on_heads)),
    Claim("low-rank head scores", "article",
          r"一个头的打分矩阵 .*秩不超过 \$d_k\$",
          holds(fact_head_scores_rank_at_most_d_head)),
    # positions
    Claim("permutation equivariance", "article",
          r"^f\(PX\)=P\\,f\(X\)$",
          holds(fact_permutation_equivariance)),
    Claim("causal mask reveals position", "article",
          r"起始符在结果里占的分量就是 \$1/i\$",
          holds(fact_uniform_causal_head_reads_position)),
    Claim("sinusoidal shift", "article",
          r"\$PE_\{pos\+k\}\$ 都是 \$PE_\{pos\}\$ 的同一个线性变换",
          holds(fact_sinusoidal_shift_is_one_linear_map)),
    Claim("learned embedding refuses long input", "article",
          r"输入超过 `max_len` 时代码会直接报错",
          holds(fact_learned_embedding_refuses_long_input)),
    Claim("RoPE frequencies", "article",
          r"^\\theta_i=\\text\{base\}\^\{-2i/d\}",
          holds(fact_rope_angles)),
    Claim("RoPE pairings", "article",
          r"两种写法只差一个固定的维度重排.*两种写法算出的分数完全相同",
          holds(fact_rope_pairings_agree_up_to_permutation)),
    Claim("RoPE curves coincide", "article",
          r"三条曲线重合，差别只是浮点误差，小于 \$10\^\{(-\d+)\}\$",
          below_power_of_ten(rope_score_spread)),
    Claim("RoPE curves coincide", "rope-relative",
          r"三条曲线完全重合（差别小于 \$10\^\{(-\d+)\}\$",
          below_power_of_ten(rope_score_spread)),
    # code behaviour the prose describes
    Claim("fully masked row", "article",
          r"如果某个查询整行都被屏蔽，函数会把它的权重和输出都置为 0",
          holds(fact_fully_masked_query_gives_zeros)),
    Claim("padding or causal", "article",
          r"也能和因果掩码直接取逻辑或",
          holds(fact_padding_or_causal_broadcasts)),
    Claim("key padding mask", "article",
          r"把 `\(B, T\)` 的填充标记传给 `key_padding_mask`.*广播到所有头和查询位置",
          holds(fact_key_padding_mask_reaches_every_head_and_query)),
    Claim("view after transpose", "article",
          r"直接 `view` 会报错",
          holds(fact_view_after_transpose_fails)),
    Claim("zero fill leaks", "article",
          r"填 0 的位置照样分到权重",
          holds(fact_zero_fill_leaks_minus_inf_does_not)),
]


# --------------------------------------------------------------------------- locating the sentences


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.where}:{c.name}" for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


# --------------------------------------------------------------------------- the recipe is the figures' recipe


@cache
def _figure_module():
    spec = importlib.util.spec_from_file_location("_attention_figures_under_test", FIGURES)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recipe_reproduces_the_figures_inputs() -> None:
    """The numbers above are about the data drawn in the figures, not about a look-alike sample."""
    fig = _figure_module()
    for d in (4, 64, 512):
        for scaled in (False, True):
            torch.testing.assert_close(fig._weights(d, scaled), weights(d, scaled), rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(fig.mask_demo_vectors(), mask_demo()[0])


def test_claims_are_not_luck_of_one_seed() -> None:
    """The qualitative picture the article draws holds for other random draws too (looser bounds)."""
    for seed in (101, 202, 303):
        gen = torch.Generator().manual_seed(seed)
        stats = {}
        for d in (64, 512, 128):  # 128 last: the draws for 64 and 512 stay what they were
            q = torch.randn(N_QUERIES, d, generator=gen, dtype=torch.float64)
            k = torch.randn(N_KEYS, d, generator=gen, dtype=torch.float64)
            for scaled in (False, True):
                z = q @ k.T / (math.sqrt(d) if scaled else 1.0)
                p = torch.softmax(z, dim=-1)
                jac = torch.func.vmap(torch.func.jacrev(lambda s: torch.softmax(s, dim=-1)))(z)
                norms = jac.flatten(1).norm(dim=-1)
                stats[d, scaled] = (p.max(-1).values.mean().item(), norms.median().item(), (norms < NEAR_ZERO).float(),
                                    norms.mean().item())
            if d == 64:  # q and k grown GROWTH times: rows saturate again; QK-norm (divide by the RMS) undoes it
                grown = (GROWTH * q) @ (GROWTH * k).T / math.sqrt(d)
                rms = lambda x: x / x.pow(2).mean(dim=-1, keepdim=True).sqrt()  # noqa: E731
                normed = rms(GROWTH * q) @ rms(GROWTH * k).T / math.sqrt(d)
                stats["grown"] = int((softmax_jacobian_norms(grown) < NEAR_ZERO).sum())
                stats["normed"] = int((softmax_jacobian_norms(normed) < NEAR_ZERO).sum())
        assert 0.74 < stats[64, False][0] < 0.84, seed
        # already at real head sizes a good share of the rows is near zero (35 and 92 of 256 in the figure's draw)
        assert stats[64, False][2].sum() >= 20 and stats[128, False][2].sum() >= 60, seed
        assert stats[512, False][0] > 0.9, seed
        # about half the rows or more near zero without scaling (160 of 256 in the figure's draw; 128 seen too)
        assert stats[512, False][2].mean() >= 0.45, seed
        assert stats[512, False][1] < 0.01, seed
        assert stats[512, False][3] > 5 * stats[512, False][1], seed  # the mean stays far above the median
        assert stats["grown"] >= 20 and stats["normed"] == 0, seed  # 44 and 0 in the figure's draw
        for d in (64, 512):
            assert 0.16 < stats[d, True][1] < 0.20, seed
            assert stats[d, True][2].sum() == 0, seed


# --------------------------------------------------------------------------- no new unchecked number


# Numbers that are not results of a computation. Add one only with a reason.
NOT_COMPUTED: dict[str, str] = {
    "256 条新序列上的平均": "how many sequences the head scores of multi-head-weights average over: a setting of "
    "trained_heads in code/figures/transformer_attention.py",
}
