"""code/multi_head_attention.py 的测试：装入相同权重后与 torch.nn.MultiheadAttention 对照。"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from attention import causal_mask, padding_mask
from multi_head_attention import MultiHeadAttention
from torch import nn

REPO = Path(__file__).resolve().parents[2]


def make_pair(d_model: int, n_heads: int, bias: bool, dtype: torch.dtype, seed: int = 0):
    """建一对模型：我们的实现与 PyTorch 官方实现，权重完全相同。"""
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model, n_heads, bias=bias).to(dtype)
    ref = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True).to(dtype)
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.qkv.weight)
        ref.out_proj.weight.copy_(ours.out.weight)
        if bias:
            ref.in_proj_bias.copy_(ours.qkv.bias)
            ref.out_proj.bias.copy_(ours.out.bias)
    ours.eval()
    ref.eval()
    return ours, ref


CASES = [(16, 4, True), (12, 3, False), (8, 1, True), (32, 8, True)]


@pytest.mark.parametrize(("d_model", "n_heads", "bias"), CASES)
@pytest.mark.parametrize("causal", [False, True])
def test_matches_torch_float64(d_model, n_heads, bias, causal):
    B, T = 3, 7
    ours, ref = make_pair(d_model, n_heads, bias, torch.float64)
    x = torch.randn(B, T, d_model, dtype=torch.float64)
    mask = causal_mask(T) if causal else None
    with torch.no_grad():
        y, w = ours(x, mask=mask, need_weights=True)
        # nn.MultiheadAttention 的 bool attn_mask 中 True 表示“不允许关注”，与我们一致
        y_ref, w_ref = ref(
            x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False
        )
    assert y.shape == (B, T, d_model)
    assert w.shape == (B, n_heads, T, T)
    torch.testing.assert_close(y, y_ref, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(w, w_ref, atol=1e-6, rtol=1e-6)
    if causal:
        assert (w[..., causal_mask(T)] == 0).all()


@pytest.mark.parametrize("causal", [False, True])
def test_matches_torch_float32_without_weights(causal):
    B, T, d_model, n_heads = 2, 9, 24, 6
    ours, ref = make_pair(d_model, n_heads, True, torch.float32, seed=1)
    x = torch.randn(B, T, d_model)
    mask = causal_mask(T) if causal else None
    with torch.no_grad():
        y = ours(x, mask=mask)
        y_ref, _ = ref(x, x, x, attn_mask=mask, need_weights=False)
    assert isinstance(y, torch.Tensor)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)


def test_padding_mask_matches_key_padding_mask():
    B, T, d_model, n_heads = 3, 6, 16, 4
    ours, ref = make_pair(d_model, n_heads, True, torch.float64, seed=2)
    x = torch.randn(B, T, d_model, dtype=torch.float64)
    lengths = torch.tensor([6, 4, 2])
    mask = padding_mask(lengths, T)  # (B, 1, 1, T)
    with torch.no_grad():
        y, w = ours(x, mask=mask, need_weights=True)
        y_ref, w_ref = ref(
            x, x, x, key_padding_mask=mask[:, 0, 0, :],
            need_weights=True, average_attn_weights=False,
        )
    torch.testing.assert_close(y, y_ref, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(w, w_ref, atol=1e-6, rtol=1e-6)


def test_gradients_match_torch():
    B, T, d_model, n_heads = 2, 5, 8, 2
    ours, ref = make_pair(d_model, n_heads, True, torch.float64, seed=3)
    x = torch.randn(B, T, d_model, dtype=torch.float64)
    ours(x, mask=causal_mask(T)).pow(2).sum().backward()
    y_ref, _ = ref(x, x, x, attn_mask=causal_mask(T), need_weights=False)
    y_ref.pow(2).sum().backward()
    torch.testing.assert_close(ours.qkv.weight.grad, ref.in_proj_weight.grad)
    torch.testing.assert_close(ours.out.weight.grad, ref.out_proj.weight.grad)


def test_module_structure():
    mha = MultiHeadAttention(16, 4)
    assert isinstance(mha.qkv, nn.Linear) and mha.qkv.weight.shape == (48, 16)
    assert isinstance(mha.out, nn.Linear) and mha.out.weight.shape == (16, 16)
    assert sum(p.numel() for p in mha.parameters()) == 4 * 16 * 16 + 4 * 16
    no_bias = MultiHeadAttention(16, 4, bias=False)
    assert no_bias.qkv.bias is None and no_bias.out.bias is None


def test_d_model_not_divisible_raises():
    # ValueError 而不是 assert：python -O 下检查也还在（见 test_shape_contracts.py）
    with pytest.raises(ValueError, match="n_heads = 3"):
        MultiHeadAttention(10, 3)


def test_script_runs():
    result = subprocess.run(
        [sys.executable, "code/multi_head_attention.py"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
