"""code/block_depth.py 的测试：深度实验的数字与另行用 torch.autograd.grad 算出的一致。"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from attention import causal_mask
from block_depth import depth_profile, last_layer_gradient, make_stack, residual_stream_std, scale_residual_branches
from torch import nn

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("layout", ["pre", "post", "residual", "plain"])
def test_depth_profile_matches_autograd(layout):
    n, d, B, T = 5, 16, 2, 6
    p = depth_profile(layout, n_layers=n, d_model=d, n_heads=2, batch=B, seq_len=T, seed=3)
    assert len(p.std) == len(p.grad) == n + 1
    assert p.grad[-1] == pytest.approx(1.0)
    # 另算一遍：同样的初始化和输入，用 autograd.grad 一次求出对每层输入的梯度
    blocks = make_stack(layout, n, d, 2, seed=3)
    gen = torch.Generator().manual_seed(1003)
    x = torch.randn(B, T, d, generator=gen, dtype=torch.float64)
    g = torch.randn(B, T, d, generator=gen, dtype=torch.float64)
    states = [x.requires_grad_()]
    for block in blocks:
        states.append(block(states[-1], mask=causal_mask(T)))
    grads = torch.autograd.grad((states[-1] * g).sum(), states)
    top = grads[-1].norm()
    assert top == pytest.approx(g.norm().item())  # 损失对输出的梯度就是 g
    assert p.std == pytest.approx([s.detach().std().item() for s in states], rel=1e-12)
    assert p.grad == pytest.approx([(gr.norm() / top).item() for gr in grads], rel=1e-9)


def test_post_ln_output_is_normalised():
    p = depth_profile("post", n_layers=3, d_model=16, n_heads=2)
    # 每层输出的每个词元都被 LayerNorm 成均值 0、方差 1（增益 1、偏置 0 时），整体标准差也就是 1
    assert p.std[1:] == pytest.approx([1.0] * 3, abs=1e-3)


def test_last_layer_gradient_matches_autograd():
    n, d = 3, 16
    value = last_layer_gradient("pre", n, d_model=d, n_heads=2, batch=2, seq_len=5, seed=1)
    blocks = make_stack("pre", n, d, 2, seed=1)
    gen = torch.Generator().manual_seed(1001)
    x = torch.randn(2, 5, d, generator=gen, dtype=torch.float64)
    g = torch.randn(2, 5, d, generator=gen, dtype=torch.float64)
    for block in blocks:
        x = block(x, mask=causal_mask(5))
    out = nn.functional.layer_norm(x, (d,))  # 末尾的归一化：增益 1、偏置 0，与 PyTorch 的函数式版本相同
    (grad,) = torch.autograd.grad((out * g).sum() / 10, blocks[-1].ffn.down.weight)
    assert value == pytest.approx(grad.norm().item(), rel=1e-9)


def test_scale_residual_branches_scales_each_branch_output():
    """乘以 c 之后，每个块的注意力子层、前馈子层的输出（加回残差之前）正好是原来的 c 倍。"""
    blocks = make_stack("pre", 2, 16, 2, seed=4)
    scaled = make_stack("pre", 2, 16, 2, seed=4)
    scale_residual_branches(scaled, 0.25)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mask = causal_mask(5)
    with torch.no_grad():
        for a, b in zip(blocks, scaled, strict=True):
            assert torch.allclose(b.attn(b.norm1(x), mask=mask), 0.25 * a.attn(a.norm1(x), mask=mask))
            assert torch.allclose(b.ffn(b.norm2(x)), 0.25 * a.ffn(a.norm2(x)))
            # 别的参数（归一化、Q/K/V 投影、升维矩阵）一个都没动
            assert torch.equal(b.attn.qkv.weight, a.attn.qkv.weight) and torch.equal(b.ffn.up.weight, a.ffn.up.weight)
            assert torch.equal(b.norm1.gain, a.norm1.gain)


def test_residual_stream_std_matches_a_manual_run():
    n = 6
    for scaled in (False, True):
        blocks = make_stack("residual", n, 16, 2, seed=2)
        if scaled:
            with torch.no_grad():
                for block in blocks:
                    for linear in (block.attn.out, block.ffn.down):
                        linear.weight.mul_(1 / (2 * n) ** 0.5)
                        linear.bias.mul_(1 / (2 * n) ** 0.5)
        x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1002), dtype=torch.float64)
        with torch.no_grad():
            for block in blocks:
                x = block(x, mask=causal_mask(5))
        got = residual_stream_std("residual", n, scaled=scaled, d_model=16, n_heads=2, batch=2, seq_len=5, seed=2)
        assert got == pytest.approx(x.std().item(), rel=1e-12)


def test_scaled_init_stops_the_growth():
    """GPT-2 式的缩小让 Pre-LN 残差流的标准差在 4 层和 32 层时都接近 1，不缩小时则明显随深度变大。"""
    assert residual_stream_std("pre", 32) > 1.5 * residual_stream_std("pre", 4)
    for n in (4, 32):
        assert abs(residual_stream_std("pre", n, scaled=True) - 1) < 0.05


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="factor"):
        scale_residual_branches(make_stack("pre", 1, 16, 2), 0.0)
    with pytest.raises(ValueError, match="blocks"):
        scale_residual_branches(nn.ModuleList([nn.Linear(4, 4)]), 0.5)
    with pytest.raises(ValueError, match="blocks"):
        scale_residual_branches(nn.ModuleList(), 0.5)
    with pytest.raises(ValueError, match="layout"):
        residual_stream_std("post", 2)
    with pytest.raises(ValueError, match="n_layers"):
        residual_stream_std("pre", 0)
    with pytest.raises(ValueError, match="layout"):
        last_layer_gradient("residual", 2)
    with pytest.raises(ValueError, match="n_layers"):
        make_stack("pre", 0)


def test_runs_on_its_own():
    proc = subprocess.run([sys.executable, "code/block_depth.py"], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "plain" in proc.stdout and "post" in proc.stdout and "缩小后" in proc.stdout
