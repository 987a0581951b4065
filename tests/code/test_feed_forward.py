"""code/feed_forward.py 的测试：与 PyTorch 的 nn.Linear / nn.GELU 拼出的网络和按定义写的 SwiGLU 对照。"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from feed_forward import FeedForward, SwiGLU, make_ffn, swiglu_hidden_dim
from torch import nn

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("bias", [True, False])
def test_gelu_ffn_matches_torch_sequential(bias):
    torch.manual_seed(0)
    ours = FeedForward(12, bias=bias).double()
    ref = nn.Sequential(nn.Linear(12, 48, bias=bias), nn.GELU(), nn.Linear(48, 12, bias=bias)).double()
    with torch.no_grad():
        ref[0].weight.copy_(ours.up.weight)
        ref[2].weight.copy_(ours.down.weight)
        if bias:
            ref[0].bias.copy_(ours.up.bias)
            ref[2].bias.copy_(ours.down.bias)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-12, rtol=1e-12)
    assert ours.up.out_features == 48  # 默认 d_ff = 4 * d_model


def test_swiglu_matches_definition():
    """SwiGLU(x) = W_down (SiLU(W_gate x) ⊙ W_up x)，SiLU(z) = z·sigmoid(z)，这里用矩阵乘法逐项写出。"""
    torch.manual_seed(1)
    ffn = SwiGLU(10, d_ff=20).double()
    x = torch.randn(3, 4, 10, dtype=torch.float64)
    a = x @ ffn.gate.weight.T
    b = x @ ffn.up.weight.T
    expected = (a * torch.sigmoid(a) * b) @ ffn.down.weight.T
    torch.testing.assert_close(ffn(x), expected, atol=1e-12, rtol=1e-12)
    assert ffn.gate.bias is None and ffn.up.bias is None and ffn.down.bias is None


@pytest.mark.parametrize("d_model", [3, 64, 96, 100, 768])
def test_swiglu_keeps_parameters_of_4x_ffn(d_model):
    """三个 d×h 矩阵与两个 d×4d 矩阵的参数量相同；不能整除时差距小于取整带来的一列。"""
    h = swiglu_hidden_dim(d_model)
    assert abs(3 * d_model * h - 2 * d_model * 4 * d_model) < 3 * d_model
    gelu = sum(p.numel() for p in FeedForward(d_model, bias=False).parameters())
    swiglu = sum(p.numel() for p in SwiGLU(d_model).parameters())
    assert abs(swiglu - gelu) < 3 * d_model


def test_swiglu_hidden_dim_rounding():
    assert swiglu_hidden_dim(768) == 2048  # 8/3 * 768 正好是整数
    assert swiglu_hidden_dim(4096, multiple_of=256) == 11008  # Llama 7B 配置中的 intermediate_size
    assert swiglu_hidden_dim(4096, multiple_of=256) % 256 == 0
    assert swiglu_hidden_dim(100, multiple_of=1) == 267  # ceil(266.67)


@pytest.mark.parametrize("cls", [FeedForward, SwiGLU])
def test_position_wise(cls):
    """前馈网络对每个位置单独计算：打乱词元顺序，输出跟着同样打乱。"""
    torch.manual_seed(2)
    ffn = cls(16)
    x = torch.randn(2, 7, 16)
    perm = torch.randperm(7)
    torch.testing.assert_close(ffn(x[:, perm]), ffn(x)[:, perm])


def test_make_ffn():
    assert isinstance(make_ffn("gelu", 8), FeedForward)
    assert isinstance(make_ffn("swiglu", 8), SwiGLU)
    with pytest.raises(ValueError, match="kind"):
        make_ffn("relu", 8)


@pytest.mark.parametrize("cls", [FeedForward, SwiGLU])
def test_wrong_shapes_raise(cls):
    ffn = cls(8)
    with pytest.raises(ValueError, match=r"x 的形状应为 \(\.\.\., d_model\).*d_model = 8.*收到 \(2, 5, 16\)"):
        ffn(torch.randn(2, 5, 16))
    with pytest.raises(ValueError, match="x 应为浮点张量"):
        ffn(torch.ones(2, 8, dtype=torch.long))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="d_ff"):
        FeedForward(8, d_ff=0)
    with pytest.raises(ValueError, match="d_model"):
        SwiGLU(-1)
    with pytest.raises(ValueError, match="multiple_of"):
        swiglu_hidden_dim(8, multiple_of=0)


def test_runs_on_its_own():
    proc = subprocess.run([sys.executable, "code/feed_forward.py"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "SwiGLU 的 d_ff = 2048" in proc.stdout
    assert "其他词元的输出不变: True" in proc.stdout
