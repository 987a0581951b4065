"""形状契约测试：code/ 中注意力与位置编码模块的每个公开函数和类。

- 文档里写明的每种形状都能用，结果与 PyTorch（F.scaled_dot_product_attention、装入相同权重的
  nn.MultiheadAttention）或本文件里独立写的参考实现一致；
- 每种常见的错误形状都抛出 ValueError，消息里写出参数名和收到的形状，而不是悄悄广播出错误结果；
- 检查用 raise 而非 assert，在 python -O 下依然有效。
"""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from attention import causal_mask, padding_mask, scaled_dot_product_attention
from multi_head_attention import MultiHeadAttention
from positional_encoding import (
    LearnedPositionEmbedding,
    apply_rope,
    rope_frequencies,
    sinusoidal_position_encoding,
)
from torch import nn

REPO = Path(__file__).resolve().parents[2]
F64 = torch.float64


def randn(*shape: int, seed: int = 0, dtype: torch.dtype = F64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def random_mask(*shape: int, seed: int = 0) -> torch.Tensor:
    """随机的 bool 掩码（True 为屏蔽），第 0 个键从不屏蔽，所以没有整行被屏蔽的查询。"""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(*shape, generator=g) < 0.4
    mask[..., 0] = False
    return mask


# ====================== scaled_dot_product_attention ======================


def reference_sdpa(q, k, v, mask):
    """PyTorch 的实现；它的 bool attn_mask 中 True 表示「可以看」，与我们相反。权重：把 v 换成单位矩阵。"""
    batch = q.shape[:-2]
    k = k.expand(*batch, *k.shape[-2:])
    v = v.expand(*batch, *v.shape[-2:])
    attn_mask = None if mask is None else ~mask
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    eye = torch.eye(k.size(-2), dtype=q.dtype).expand(*k.shape[:-1], k.size(-2))
    weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=attn_mask)
    return out, weights


# (说明, q 形状, k 形状, v 形状, mask 形状或 None)
SDPA_SHAPES = [
    ("二维 q，无掩码", (5, 8), (6, 8), (6, 3), None),
    ("二维 q，(T_q, T_k) 掩码", (5, 8), (6, 8), (6, 3), (5, 6)),
    ("三维 q，(T, T) 掩码", (2, 5, 8), (2, 5, 8), (2, 5, 8), (5, 5)),
    ("三维 q，每个样本一张 (B, T_q, T_k)", (2, 5, 8), (2, 7, 8), (2, 7, 4), (2, 5, 7)),
    ("三维 q，键填充 (B, 1, T_k)", (3, 5, 8), (3, 7, 8), (3, 7, 8), (3, 1, 7)),
    ("三维 q，(1, T_k)", (3, 5, 8), (3, 7, 8), (3, 7, 8), (1, 7)),
    ("四维 q，(T, T) 掩码", (2, 3, 6, 8), (2, 3, 6, 8), (2, 3, 6, 8), (6, 6)),
    ("四维 q，padding_mask 的 (B, 1, 1, T_k)", (2, 3, 6, 8), (2, 3, 6, 8), (2, 3, 6, 8), (2, 1, 1, 6)),
    ("四维 q，完整的 (B, H, T_q, T_k)", (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5), (2, 3, 4, 6)),
    ("四维 q，各头一张 (1, H, T_q, T_k)", (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5), (1, 3, 4, 6)),
    ("多查询：k、v 只有一个头 (B, 1, T, d)", (2, 4, 6, 8), (2, 1, 6, 8), (2, 1, 6, 8), (6, 6)),
    ("所有样本共用 k、v (T_k, d)", (3, 5, 8), (7, 8), (7, 2), (3, 1, 7)),
    ("B == T 的三维输入", (5, 5, 8), (5, 5, 8), (5, 5, 8), (5, 1, 5)),
]


@pytest.mark.parametrize(("q_shape", "k_shape", "v_shape", "mask_shape"),
                         [case[1:] for case in SDPA_SHAPES], ids=[case[0] for case in SDPA_SHAPES])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_sdpa_documented_shapes_match_torch(q_shape, k_shape, v_shape, mask_shape, dtype):
    q, k, v = (randn(*shape, seed=seed, dtype=dtype) for seed, shape in enumerate((q_shape, k_shape, v_shape)))
    mask = None if mask_shape is None else random_mask(*mask_shape, seed=4)
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    ref_out, ref_w = reference_sdpa(q, k, v, mask)
    assert out.shape == (*q_shape[:-1], v_shape[-1])
    assert w.shape == (*q_shape[:-1], k_shape[-2])
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(out, ref_out, atol=tol, rtol=tol)
    torch.testing.assert_close(w, ref_w, atol=tol, rtol=tol)


def test_sdpa_three_d_q_with_padding_mask_squeezed():
    """三维 q 配填充掩码的正确写法：mask[:, 0]，形状 (B, 1, T)；与逐个样本单独计算一致。"""
    B, T, d = 2, 8, 4
    q, k, v = randn(B, 5, d, seed=1), randn(B, T, d, seed=2), randn(B, T, d, seed=3)
    lengths = torch.tensor([8, 3])
    out, _ = scaled_dot_product_attention(q, k, v, mask=padding_mask(lengths, T)[:, 0])
    assert out.shape == (B, 5, d)
    for b, n in enumerate(lengths.tolist()):  # 只用前 n 个键，不加掩码
        ref = F.scaled_dot_product_attention(q[b], k[b, :n], v[b, :n])
        torch.testing.assert_close(out[b], ref)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_sdpa_left_padding_with_causal_mask_masks_whole_rows():
    """文档字符串里整行被屏蔽的例子：左侧填充加因果掩码，开头的填充位置整行被屏蔽，权重和输出都为 0。"""
    B, H, T, d = 2, 2, 5, 4
    q, k, v = randn(B, H, T, d, seed=1), randn(B, H, T, d, seed=2), randn(B, H, T, d, seed=3)
    n_pad = torch.tensor([2, 0])
    left_pad = torch.arange(T)[None, :] < n_pad[:, None]  # (B, T)，开头 n_pad 个是填充
    mask = causal_mask(T) | left_pad[:, None, None, :]
    full_rows = mask.expand(B, H, T, T).all(dim=-1)
    expected = left_pad[:, None, :].expand(B, H, T)
    assert torch.equal(full_rows, expected)  # 整行被屏蔽的恰好是开头的填充位置
    q.requires_grad_()
    # detect_anomaly：反向传播中任何一步算出 NaN 都会报错（softmax 遇到整行 -inf 就会）
    with torch.autograd.detect_anomaly(check_nan=True):
        out, w = scaled_dot_product_attention(q, k, v, mask=mask)
        out.sum().backward()
    assert torch.isfinite(q.grad).all()
    assert (w[full_rows] == 0).all() and (out[full_rows] == 0).all()
    ref_out, _ = reference_sdpa(q.detach(), k, v, mask)
    torch.testing.assert_close(out[~full_rows], ref_out[~full_rows])
    # 只屏蔽键的填充掩码：只有长度为 0 的序列才整行被屏蔽
    key_only = padding_mask(torch.tensor([3, 0]), T).expand(B, H, T, T)
    assert torch.equal(key_only.all(dim=-1)[:, 0, 0], torch.tensor([False, True]))


@pytest.mark.parametrize(
    ("q_shape", "k_shape", "mask"),
    [
        ((2, 5, 6), (2, 5, 6), None),
        ((2, 2, 4, 3), (2, 2, 4, 3), "causal"),
        ((2, 2, 4, 3), (2, 2, 4, 3), "padding-with-empty-sequence"),
        ((2, 3, 4, 3), (2, 1, 5, 3), "random"),
    ],
)
def test_sdpa_gradcheck(q_shape, k_shape, mask):
    q = randn(*q_shape, seed=1).requires_grad_()
    k = randn(*k_shape, seed=2).requires_grad_()
    v = randn(*k_shape, seed=3).requires_grad_()
    T_q, T_k = q_shape[-2], k_shape[-2]
    m = {
        None: None,
        "causal": causal_mask(T_q),
        "padding-with-empty-sequence": padding_mask(torch.tensor([3, 0]), T_k),  # 第 2 个序列整行被屏蔽
        "random": random_mask(T_q, T_k, seed=5),
    }[mask]
    assert torch.autograd.gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, mask=m), (q, k, v))


def test_sdpa_gradients_match_torch():
    q, k, v = (randn(2, 3, 5, 4, seed=s).requires_grad_() for s in (1, 2, 3))
    mask = random_mask(2, 1, 5, 5, seed=6)
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    grads = torch.autograd.grad(out.pow(2).sum(), (q, k, v))
    ref_out, _ = reference_sdpa(q, k, v, mask)
    ref_grads = torch.autograd.grad(ref_out.pow(2).sum(), (q, k, v))
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r)


# ====================== 掩码函数 ======================


@pytest.mark.parametrize("seq_len", [0, 1, 4, 9])
def test_causal_mask_matches_torch_tril(seq_len):
    expected = ~torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
    assert torch.equal(causal_mask(seq_len), expected)
    assert torch.equal(causal_mask(torch.tensor(seq_len)), expected)  # 只含一个整数的张量也行


@pytest.mark.parametrize(("lengths", "max_len"), [([3, 1, 4], 4), ([0, 2], 5), ([], 3), ([6], 6)])
def test_padding_mask_documented_shapes(lengths, max_len):
    m = padding_mask(torch.tensor(lengths, dtype=torch.long), max_len)
    assert m.dtype == torch.bool and m.shape == (len(lengths), 1, 1, max_len)
    for b, n in enumerate(lengths):
        assert m[b, 0, 0].tolist() == [j >= n for j in range(max_len)]


# ====================== MultiHeadAttention ======================


def make_pair(d_model: int, n_heads: int, seed: int = 0, dtype: torch.dtype = F64):
    """我们的实现与 nn.MultiheadAttention，装入相同的权重。"""
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model, n_heads).to(dtype).eval()
    ref = nn.MultiheadAttention(d_model, n_heads, batch_first=True).to(dtype).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.qkv.weight)
        ref.in_proj_bias.copy_(ours.qkv.bias)
        ref.out_proj.weight.copy_(ours.out.weight)
        ref.out_proj.bias.copy_(ours.out.bias)
    return ours, ref


# (说明, B, T, mask 的种类, 是否传 key_padding_mask)
MHA_CASES = [
    ("无掩码", 2, 5, None, False),
    ("因果 (T, T)", 2, 5, "causal", False),
    ("key_padding_mask (B, T)", 3, 6, None, True),
    ("B == T 时的 key_padding_mask", 4, 4, None, True),
    ("因果 + key_padding_mask", 3, 6, "causal", True),
    ("B == T 时的因果 + key_padding_mask", 5, 5, "causal", True),
    ("padding_mask 的 (B, 1, 1, T)", 3, 6, "padding4d", False),
    ("四维 (B, H, T, T)", 2, 5, "full4d", False),
    ("四维 (1, H, T, T) + key_padding_mask", 2, 5, "heads4d", True),
]


@pytest.mark.parametrize(("B", "T", "mask_kind", "use_kpm"),
                         [case[1:] for case in MHA_CASES], ids=[case[0] for case in MHA_CASES])
def test_mha_documented_shapes_match_torch(B, T, mask_kind, use_kpm):
    d_model, H = 12, 3
    ours, ref = make_pair(d_model, H, seed=B * 10 + T)
    x = randn(B, T, d_model, seed=7)
    lengths = torch.tensor([T - (b % 3) for b in range(B)])  # 长度 T, T-1, T-2, ...，不会整行被屏蔽
    kpm = (torch.arange(T)[None, :] >= lengths[:, None]) if use_kpm else None  # (B, T)
    mask = {
        None: None,
        "causal": causal_mask(T),
        "padding4d": padding_mask(lengths, T),
        "full4d": random_mask(B, H, T, T, seed=8),
        "heads4d": random_mask(1, H, T, T, seed=9),
    }[mask_kind]
    # nn.MultiheadAttention 的 attn_mask 只收 (T, T) 或 (B * H, T, T)；key_padding_mask 是 (B, T)
    ref_attn_mask, ref_kpm = mask, kpm
    if mask_kind == "padding4d":
        ref_attn_mask, ref_kpm = None, mask[:, 0, 0, :]
    elif mask is not None and mask.dim() == 4:
        ref_attn_mask = mask.expand(B, H, T, T).reshape(B * H, T, T)
    with torch.no_grad():
        y, w = ours(x, mask=mask, key_padding_mask=kpm, need_weights=True)
        y_ref, w_ref = ref(x, x, x, attn_mask=ref_attn_mask, key_padding_mask=ref_kpm,
                           need_weights=True, average_attn_weights=False)
    assert y.shape == (B, T, d_model) and w.shape == (B, H, T, T)
    torch.testing.assert_close(y, y_ref, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(w, w_ref, atol=1e-10, rtol=1e-10)


def test_mha_float32_matches_torch():
    ours, ref = make_pair(16, 4, seed=1, dtype=torch.float32)
    x = randn(3, 7, 16, seed=2, dtype=torch.float32)
    kpm = padding_mask(torch.tensor([7, 5, 2]), 7)[:, 0, 0]
    with torch.no_grad():
        y = ours(x, mask=causal_mask(7), key_padding_mask=kpm)
        y_ref, _ = ref(x, x, x, attn_mask=causal_mask(7), key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)


# ====================== 位置编码 ======================


def rope_reference(x: torch.Tensor, positions: torch.Tensor | None, base: float = 10000.0) -> torch.Tensor:
    """逐个向量、逐对维度地做二维旋转；positions 先按文档展开成 x.shape[:-1]。"""
    T, d = x.shape[-2:]
    pos = torch.arange(T) if positions is None else positions
    pos = pos.double().expand(x.shape[:-1]).reshape(-1)
    flat = x.double().reshape(-1, d)
    out = torch.empty_like(flat)
    for n in range(flat.size(0)):
        for i in range(d // 2):
            angle = pos[n].item() * base ** (-2 * i / d)
            a, b = flat[n, 2 * i].item(), flat[n, 2 * i + 1].item()
            out[n, 2 * i] = a * math.cos(angle) - b * math.sin(angle)
            out[n, 2 * i + 1] = a * math.sin(angle) + b * math.cos(angle)
    return out.reshape(x.shape).to(x.dtype)


def per_sequence_positions(*shape: int) -> torch.Tensor:
    """每个序列各自的位置：第 n 个序列从 7n 开始编号（像带缓存的生成、或左侧填充后重新编号）。"""
    T = shape[-1]
    starts = torch.arange(math.prod(shape[:-1])).reshape(*shape[:-1], 1) * 7
    return starts + torch.arange(T)


# (说明, x 形状, positions：None / 形状 / 'float')
ROPE_CASES = [
    ("二维 x，默认位置", (5, 8), None),
    ("二维 x，(T,)", (5, 8), (5,)),
    ("三维 x，(T,)", (2, 5, 8), (5,)),
    ("三维 x，每个序列 (B, T)", (3, 5, 8), (3, 5)),
    ("三维 x，(1, T)", (3, 5, 8), (1, 5)),
    ("四维 x，默认位置", (2, 3, 5, 8), None),
    ("四维 x，(T,)", (2, 3, 5, 8), (5,)),
    ("四维 x，每个序列 (B, 1, T)", (2, 3, 5, 8), (2, 1, 5)),
    ("四维 x，B == H 时的 (B, 1, T)", (3, 3, 4, 6), (3, 1, 4)),
    ("四维 x，完整的 (B, H, T)", (2, 3, 5, 8), (2, 3, 5)),
    ("四维 x，浮点位置 (T,)", (2, 3, 5, 8), "float"),
]


@pytest.mark.parametrize(("x_shape", "positions"), [case[1:] for case in ROPE_CASES], ids=[c[0] for c in ROPE_CASES])
@pytest.mark.parametrize("base", [10000.0, 100.0])
def test_rope_documented_shapes_match_reference(x_shape, positions, base):
    x = randn(*x_shape, seed=3)
    if positions == "float":
        pos = torch.tensor([0.0, 0.5, 2.25, 10.0, 1000.0], dtype=F64)
    else:
        pos = None if positions is None else per_sequence_positions(*positions)
    y = apply_rope(x, pos, base=base)
    assert y.shape == x.shape
    torch.testing.assert_close(y, rope_reference(x, pos, base))


def test_rope_float32_and_frequencies():
    x = randn(2, 4, 6, 8, seed=4, dtype=torch.float32)
    torch.testing.assert_close(apply_rope(x), rope_reference(x, None), atol=1e-5, rtol=1e-5)
    assert apply_rope(x).dtype == torch.float32
    expected = torch.tensor([500.0 ** (-2 * i / 10) for i in range(5)], dtype=F64)
    torch.testing.assert_close(rope_frequencies(10, base=500.0), expected)


@pytest.mark.parametrize(("seq_len", "d_model"), [(0, 4), (1, 1), (6, 7), (9, 16)])
def test_sinusoidal_documented_shapes_match_formula(seq_len, d_model):
    pe = sinusoidal_position_encoding(seq_len, d_model)
    assert pe.shape == (seq_len, d_model) and pe.dtype == torch.float32
    for pos in range(seq_len):
        for j in range(d_model):
            angle = pos / 10000 ** (2 * (j // 2) / d_model)
            expected = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert pe[pos, j].item() == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("B", "T"), [(1, 1), (3, 5), (2, 8)])
def test_learned_documented_shapes(B, T):
    emb = LearnedPositionEmbedding(max_len=8, d_model=4)
    x = randn(B, T, 4, dtype=torch.float32)
    torch.testing.assert_close(emb(x), x + emb.embedding.weight[:T].expand(B, T, 4))


# ====================== 错误的形状：必须抛出 ValueError 并说清楚 ======================

_mha = None


def mha() -> MultiHeadAttention:
    """d_model = 12、n_heads = 3 的模型（float32）。"""
    global _mha
    if _mha is None:
        torch.manual_seed(0)
        _mha = MultiHeadAttention(12, 3)
    return _mha


def t(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape).to(dtype) if dtype.is_floating_point else torch.zeros(*shape, dtype=dtype)


def bmask(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.bool)


# (说明, 调用, 错误消息必须含有的参数名, 收到的形状（None 表示不是形状问题）)
WRONG: list[tuple[str, Callable[[], object], str, tuple[int, ...] | None]] = [
    # --- scaled_dot_product_attention ---
    ("#11 三维 q 配 padding_mask 的 (B, 1, 1, T)",
     lambda: scaled_dot_product_attention(t(2, 5, 8), t(2, 8, 8), t(2, 8, 8), padding_mask(torch.tensor([8, 3]), 8)),
     "mask", (2, 1, 1, 8)),
    ("五维掩码配四维 q（会多出一维）",
     lambda: scaled_dot_product_attention(t(2, 3, 4, 8), t(2, 3, 4, 8), t(2, 3, 4, 8), bmask(1, 1, 1, 4, 4)),
     "mask", (1, 1, 1, 4, 4)),
    ("掩码的 T 不对", lambda: scaled_dot_product_attention(t(2, 5, 8), t(2, 5, 8), t(2, 5, 8), bmask(6, 6)),
     "mask", (6, 6)),
    ("掩码写成 (T_k, T_q)", lambda: scaled_dot_product_attention(t(2, 4, 8), t(2, 6, 8), t(2, 6, 8), bmask(6, 4)),
     "mask", (6, 4)),
    ("掩码的批次大小不对", lambda: scaled_dot_product_attention(t(2, 5, 8), t(2, 5, 8), t(2, 5, 8), bmask(3, 1, 5)),
     "mask", (3, 1, 5)),
    ("浮点掩码", lambda: scaled_dot_product_attention(t(2, 5, 8), t(2, 5, 8), t(2, 5, 8), t(5, 5)), "mask", None),
    ("0/1 整数掩码",
     lambda: scaled_dot_product_attention(t(2, 5, 8), t(2, 5, 8), t(2, 5, 8), t(5, 5, dtype=torch.long)), "mask", None),
    ("#14 d_k 不一致", lambda: scaled_dot_product_attention(t(2, 5, 8), t(2, 5, 6), t(2, 5, 8)), "k", (2, 5, 6)),
    ("v 的 T 与 k 不一致", lambda: scaled_dot_product_attention(t(2, 5, 8), t(2, 5, 8), t(2, 4, 8)), "v", (2, 4, 8)),
    ("一维 q", lambda: scaled_dot_product_attention(t(8), t(5, 8), t(5, 8)), "q", (8,)),
    ("k 的批次维与 q 不同", lambda: scaled_dot_product_attention(t(2, 5, 8), t(3, 5, 8), t(3, 5, 8)), "k", (3, 5, 8)),
    ("k 的批次维会把结果变大", lambda: scaled_dot_product_attention(t(5, 8), t(2, 5, 8), t(2, 5, 8)), "k", (2, 5, 8)),
    ("v 的批次维与 q 不同", lambda: scaled_dot_product_attention(t(2, 5, 8), t(2, 5, 8), t(3, 5, 8)), "v", (3, 5, 8)),
    ("k 的 dtype 与 q 不同",
     lambda: scaled_dot_product_attention(t(2, 5, 8), t(2, 5, 8, dtype=F64), t(2, 5, 8)), "k", None),
    ("整数 q", lambda: scaled_dot_product_attention(t(2, 5, 8, dtype=torch.long), t(2, 5, 8), t(2, 5, 8)), "q", None),
    # --- causal_mask / padding_mask ---
    ("负的 seq_len", lambda: causal_mask(-1), "seq_len", None),
    ("小数 seq_len", lambda: causal_mask(2.5), "seq_len", None),
    ("二维 lengths (B, 1)", lambda: padding_mask(torch.tensor([[3], [2]]), 4), "lengths", (2, 1)),
    ("浮点 lengths", lambda: padding_mask(torch.tensor([3.0, 2.0]), 4), "lengths", None),
    ("lengths 超过 max_len", lambda: padding_mask(torch.tensor([5, 2]), 4), "lengths", None),
    ("负的 lengths", lambda: padding_mask(torch.tensor([-1, 2]), 4), "lengths", None),
    ("lengths 不是张量", lambda: padding_mask([3, 2], 4), "lengths", None),
    ("负的 max_len", lambda: padding_mask(torch.tensor([0]), -1), "max_len", None),
    # --- MultiHeadAttention ---
    ("#14 d_model 不能被 n_heads 整除", lambda: MultiHeadAttention(10, 3), "n_heads", None),
    ("n_heads = 0", lambda: MultiHeadAttention(12, 0), "n_heads", None),
    ("d_model = 0", lambda: MultiHeadAttention(0, 3), "d_model", None),
    ("#14 二维输入 (T, d_model)", lambda: mha()(t(5, 12)), "x", (5, 12)),
    ("四维输入", lambda: mha()(t(2, 1, 5, 12)), "x", (2, 1, 5, 12)),
    ("d_model 不对", lambda: mha()(t(2, 5, 8)), "x", (2, 5, 8)),
    ("最后一维是 1（会被广播）", lambda: mha()(t(2, 5, 1)), "x", (2, 5, 1)),
    ("x 的 dtype 与参数不同", lambda: mha()(t(2, 5, 12, dtype=F64)), "x", None),
    ("#12 (B, T) 的填充掩码传给了 mask", lambda: mha()(t(2, 5, 12), mask=bmask(2, 5)), "key_padding_mask", (2, 5)),
    ("二维 mask 的 T 不对", lambda: mha()(t(2, 5, 12), mask=bmask(6, 6)), "mask", (6, 6)),
    ("三维 mask (B, T, T)", lambda: mha()(t(3, 5, 12), mask=bmask(3, 5, 5)), "mask", (3, 5, 5)),
    ("四维 mask 的头数不对", lambda: mha()(t(2, 5, 12), mask=bmask(2, 4, 5, 5)), "mask", (2, 4, 5, 5)),
    ("四维 mask 的批次不对", lambda: mha()(t(2, 5, 12), mask=bmask(3, 1, 1, 5)), "mask", (3, 1, 1, 5)),
    ("四维 mask 的 T 不对", lambda: mha()(t(2, 5, 12), mask=bmask(2, 1, 1, 6)), "mask", (2, 1, 1, 6)),
    ("一维 mask", lambda: mha()(t(2, 5, 12), mask=bmask(5)), "mask", (5,)),
    ("浮点 mask", lambda: mha()(t(2, 5, 12), mask=t(5, 5)), "mask", None),
    ("key_padding_mask 只有 (T,)", lambda: mha()(t(2, 5, 12), key_padding_mask=bmask(5)), "key_padding_mask", (5,)),
    ("key_padding_mask 写成 (T, B)", lambda: mha()(t(2, 5, 12), key_padding_mask=bmask(5, 2)), "key_padding_mask",
     (5, 2)),
    ("key_padding_mask 用了 padding_mask 的四维形状",
     lambda: mha()(t(2, 5, 12), key_padding_mask=padding_mask(torch.tensor([5, 3]), 5)), "key_padding_mask",
     (2, 1, 1, 5)),
    ("浮点 key_padding_mask", lambda: mha()(t(2, 5, 12), key_padding_mask=t(2, 5)), "key_padding_mask", None),
    # --- 位置编码 ---
    ("#13 (B, T) 的位置配 (B, H, T, d) 且 B == H", lambda: apply_rope(t(2, 2, 5, 8), torch.zeros(2, 5)),
     "positions", (2, 5)),
    ("#13 (B, T) 的位置配 (B, H, T, d)", lambda: apply_rope(t(2, 3, 5, 8), torch.zeros(2, 5)), "positions", (2, 5)),
    ("positions 的 T 不对", lambda: apply_rope(t(2, 5, 8), torch.arange(6)), "positions", (6,)),
    ("positions 的批次不对", lambda: apply_rope(t(2, 5, 8), torch.zeros(3, 5)), "positions", (3, 5)),
    ("positions 比 x 多一维", lambda: apply_rope(t(2, 5, 8), torch.zeros(2, 1, 5)), "positions", (2, 1, 5)),
    ("positions 会把结果变大", lambda: apply_rope(t(1, 5, 8), torch.zeros(3, 5)), "positions", (3, 5)),
    ("positions 是标量", lambda: apply_rope(t(2, 5, 8), torch.tensor(3)), "positions", ()),
    ("bool 的 positions", lambda: apply_rope(t(2, 5, 8), torch.ones(5, dtype=torch.bool)), "positions", None),
    ("RoPE 的 d 为奇数", lambda: apply_rope(t(2, 5, 7)), "x", (2, 5, 7)),
    ("一维 x", lambda: apply_rope(t(8)), "x", (8,)),
    ("整数 x", lambda: apply_rope(t(2, 5, 8, dtype=torch.long)), "x", None),
    ("rope_frequencies 的 d 为奇数", lambda: rope_frequencies(7), "d", None),
    ("rope_frequencies 的 base 为 0", lambda: rope_frequencies(8, base=0.0), "base", None),
    ("负的 seq_len", lambda: sinusoidal_position_encoding(-1, 8), "seq_len", None),
    ("d_model = 0", lambda: sinusoidal_position_encoding(5, 0), "d_model", None),
    ("小数 d_model", lambda: sinusoidal_position_encoding(5, 8.0), "d_model", None),
    ("负的 base", lambda: sinusoidal_position_encoding(5, 8, base=-1.0), "base", None),
    ("可学习嵌入的二维输入 (T, d_model)，T == d_model", lambda: LearnedPositionEmbedding(8, 4)(t(4, 4)), "x", (4, 4)),
    ("可学习嵌入的最后一维是 1", lambda: LearnedPositionEmbedding(8, 4)(t(2, 3, 1)), "x", (2, 3, 1)),
    ("可学习嵌入的序列太长", lambda: LearnedPositionEmbedding(8, 4)(t(2, 9, 4)), "max_len", None),
    ("max_len = 0", lambda: LearnedPositionEmbedding(0, 4), "max_len", None),
]


@pytest.mark.parametrize(("call", "name", "got"), [w[1:] for w in WRONG], ids=[w[0] for w in WRONG])
def test_wrong_input_raises_value_error_naming_argument(call, name, got):
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert name in message
    if got is not None:
        assert f"收到 {got}" in message  # 收到的形状，写成 (2, 5) 的样子
        assert "应为" in message  # 以及应有的形状


def test_bsize_equals_t_key_padding_is_not_mistaken_for_attention_mask():
    """#12 的回归测试：B == T 时，(B, T) 的填充位置通过 key_padding_mask 传入，结果与 PyTorch 一致，
    而且与把它误当成 (T, T) 的结果不同（说明这个测试能发现混淆）。"""
    B = T = 4
    ours, ref = make_pair(8, 2, seed=3)
    x = randn(B, T, 8, seed=4)
    kpm = padding_mask(torch.tensor([4, 3, 2, 1]), T)[:, 0, 0]
    with torch.no_grad():
        y = ours(x, key_padding_mask=kpm)
        y_confused = ours(x, mask=kpm)  # 形状恰好是 (T, T)，只能当作所有样本共用的掩码
        y_ref, _ = ref(x, x, x, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(y, y_ref)
    assert (y_confused - y_ref).abs().max() > 1e-3


def test_code_modules_use_no_assert_for_checks():
    """assert 在 python -O 下会被跳过；code/ 里的检查必须用 raise。"""
    offenders = []
    for path in sorted((REPO / "code").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [f"{path.name}:{node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Assert)]
    assert offenders == []


def test_checks_survive_python_dash_o():
    """python -O 会去掉 assert；检查用的是 raise，所以仍然有效。"""
    script = """
import sys
sys.path.insert(0, "code")
import torch
assert False, "在 -O 下这一行不会执行"
from attention import padding_mask, scaled_dot_product_attention
from multi_head_attention import MultiHeadAttention
from positional_encoding import apply_rope
cases = [
    ("n_heads", lambda: MultiHeadAttention(10, 3)),
    ("mask", lambda: scaled_dot_product_attention(torch.randn(2, 5, 8), torch.randn(2, 8, 8), torch.randn(2, 8, 8),
                                                  padding_mask(torch.tensor([8, 3]), 8))),
    ("x", lambda: MultiHeadAttention(12, 3)(torch.randn(5, 12))),
    ("positions", lambda: apply_rope(torch.randn(2, 2, 5, 8), torch.zeros(2, 5))),
]
for name, call in cases:
    try:
        call()
    except ValueError as e:
        print(name, "ValueError", str(e).replace("\\n", " "), sep="\\t")
    else:
        print(name, "no error", sep="\\t")
"""
    result = subprocess.run([sys.executable, "-O", "-c", script], cwd=REPO, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [row[:2] for row in rows] == [[n, "ValueError"] for n in ("n_heads", "mask", "x", "positions")]
    for name, _, message in rows:
        assert name in message
