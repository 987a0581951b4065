"""code/attention.py 的测试：与 torch.nn.functional.scaled_dot_product_attention 对照。"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from attention import causal_mask, padding_mask, scaled_dot_product_attention

REPO = Path(__file__).resolve().parents[2]

SHAPES = [
    # (batch 维, T_q, T_k, d_k, d_v)
    ((2,), 5, 5, 8, 8),
    ((2, 3), 4, 6, 16, 5),
    ((1, 1), 1, 3, 4, 4),
    ((3, 2), 7, 7, 32, 12),
]


def make_qkv(batch: tuple[int, ...], t_q: int, t_k: int, d_k: int, d_v: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, t_q, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(*batch, t_k, d_k, generator=g, dtype=torch.float64)
    v = torch.randn(*batch, t_k, d_v, generator=g, dtype=torch.float64)
    return q, k, v


def torch_weights(q, k, **kwargs):
    """用 PyTorch 求注意力权重：把 v 换成单位矩阵，输出就是权重本身。"""
    t_k = k.size(-2)
    eye = torch.eye(t_k, dtype=q.dtype).expand(*k.shape[:-1], t_k)
    return F.scaled_dot_product_attention(q, k, eye, **kwargs)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
def test_matches_torch_without_mask(shape, scale):
    q, k, v = make_qkv(*shape)
    out, w = scaled_dot_product_attention(q, k, v, scale=scale)
    ref = F.scaled_dot_product_attention(q, k, v, scale=scale)
    assert out.shape == ref.shape
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(w, torch_weights(q, k, scale=scale), atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1], dtype=w.dtype))


def test_default_scale_is_inverse_sqrt_dk():
    q, k, v = make_qkv((2,), 4, 4, 16, 16)
    out_default, _ = scaled_dot_product_attention(q, k, v)
    out_explicit, _ = scaled_dot_product_attention(q, k, v, scale=0.25)
    out_none, _ = scaled_dot_product_attention(q, k, v, scale=1.0)
    torch.testing.assert_close(out_default, out_explicit)
    assert not torch.allclose(out_default, out_none)


@pytest.mark.parametrize("scale", [None, 0.5])
def test_matches_torch_with_causal_mask(scale):
    q, k, v = make_qkv((2, 3), 6, 6, 8, 4)
    mask = causal_mask(6)
    out, w = scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(
        w, torch_weights(q, k, is_causal=True, scale=scale), atol=1e-10, rtol=1e-10
    )
    # 未来位置的权重必须恰好为 0，而不是“很小”
    assert (w[..., mask] == 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1], dtype=w.dtype))


def test_matches_torch_with_padding_mask():
    B, H, T, d = 3, 2, 5, 8
    q, k, v = make_qkv((B, H), T, T, d, d, seed=1)
    lengths = torch.tensor([5, 3, 1])
    mask = padding_mask(lengths, T)
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    # torch 的 bool attn_mask 中 True 表示“参与注意力”，和我们的约定相反
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(w, torch_weights(q, k, attn_mask=~mask), atol=1e-10, rtol=1e-10)
    for b, n in enumerate(lengths.tolist()):
        assert (w[b, :, :, n:] == 0).all()
        assert (w[b, :, :, :n] > 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(B, H, T, dtype=w.dtype))


def test_combined_causal_and_padding_mask_float32():
    B, H, T, d = 2, 4, 6, 16
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(B, H, T, d, generator=g) for _ in range(3))
    mask = causal_mask(T) | padding_mask(torch.tensor([6, 4]), T)
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert (w.expand(B, H, T, T)[mask.expand(B, H, T, T)] == 0).all()


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4, 8])
def test_grouped_query_attention_by_broadcasting(n_kv_heads):
    """k、v 只有 n_kv_heads 个头（1 个即 MQA）：把 q 的头拆成 (组数, 每组头数)、k、v 写成 (B, 组数, 1, T, d)，
    广播的结果与 PyTorch 的 enable_gqa=True 相同。"""
    g = torch.Generator().manual_seed(11)
    b, n_heads, t, d = 2, 8, 6, 4
    per_group = n_heads // n_kv_heads
    q = torch.randn(b, n_heads, t, d, generator=g, dtype=torch.float64)
    k = torch.randn(b, n_kv_heads, t, d, generator=g, dtype=torch.float64)
    v = torch.randn(b, n_kv_heads, t, d, generator=g, dtype=torch.float64)
    out, w = scaled_dot_product_attention(q.view(b, n_kv_heads, per_group, t, d), k[:, :, None], v[:, :, None],
                                          mask=causal_mask(t))
    assert w.shape == (b, n_kv_heads, per_group, t, t)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(out.reshape(b, n_heads, t, d), ref, atol=1e-10, rtol=1e-10)


def test_weights_hold_one_t_by_t_matrix_per_head():
    """函数把完整的打分矩阵存了下来：每个头 T×T 个数，float32 每个 4 字节。"""
    q = torch.zeros(1, 3, 10, 4)
    _, w = scaled_dot_product_attention(q, q, q)
    assert w.shape == (1, 3, 10, 10) and w.nbytes == 3 * 10 * 10 * 4


def test_causal_mask_values():
    expected = torch.tensor(
        [
            [False, True, True],
            [False, False, True],
            [False, False, False],
        ]
    )
    assert torch.equal(causal_mask(3), expected)
    m = causal_mask(7)
    assert m.dtype == torch.bool and m.shape == (7, 7)
    i, j = torch.meshgrid(torch.arange(7), torch.arange(7), indexing="ij")
    assert torch.equal(m, j > i)


def test_padding_mask_values():
    m = padding_mask(torch.tensor([3, 1, 4]), 4)
    assert m.dtype == torch.bool and m.shape == (3, 1, 1, 4)
    expected = torch.tensor(
        [
            [False, False, False, True],
            [False, True, True, True],
            [False, False, False, False],
        ]
    )
    assert torch.equal(m[:, 0, 0, :], expected)


def test_fully_masked_row_gives_zero_weights_and_output():
    """整行被屏蔽（如长度为 0 的序列）时：权重与输出全为 0，没有 NaN，梯度也没有 NaN。"""
    B, H, T, d = 2, 2, 4, 8
    q, k, v = make_qkv((B, H), T, T, d, d, seed=3)
    q.requires_grad_(True)
    k.requires_grad_(True)
    v.requires_grad_(True)
    lengths = torch.tensor([0, 3])
    mask = padding_mask(lengths, T)
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not torch.isnan(out).any() and not torch.isnan(w).any()
    assert (w[0] == 0).all() and (out[0] == 0).all()
    # 其余样本不受影响，仍与 PyTorch 一致
    ref = F.scaled_dot_product_attention(q[1:], k[1:], v[1:], attn_mask=~mask[1:])
    torch.testing.assert_close(out[1:], ref, atol=1e-10, rtol=1e-10)
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()


def test_fully_masked_single_query_row():
    # 只有第 1 个查询整行被屏蔽，其他查询正常
    q, k, v = make_qkv((2,), 3, 4, 8, 8, seed=4)
    mask = torch.zeros(3, 4, dtype=torch.bool)
    mask[1] = True
    mask[2, 0] = True
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    assert (w[:, 1] == 0).all() and (out[:, 1] == 0).all()
    keep = torch.tensor([0, 2])
    ref = F.scaled_dot_product_attention(q[:, keep], k, v, attn_mask=~mask[keep])
    torch.testing.assert_close(out[:, keep], ref, atol=1e-10, rtol=1e-10)
    assert (w[:, 2, 0] == 0).all()


def test_script_runs():
    result = subprocess.run(
        [sys.executable, "code/attention.py"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
