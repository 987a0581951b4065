"""code/normalization.py 的测试：与 torch.nn.LayerNorm、torch.nn.RMSNorm 对照。"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from normalization import LayerNorm, RMSNorm, make_norm
from torch import nn

REPO = Path(__file__).resolve().parents[2]


def _randomise(*params: torch.Tensor, seed: int = 0) -> None:
    """把增益、偏置改成随机值：初始的 1 和 0 会掩盖「忘了乘增益」这类错误。"""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in params:
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))


@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 8), (2, 2, 3, 8), (8,)])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_matches_torch(shape, bias):
    ours = LayerNorm(8, eps=1e-5, bias=bias).double()
    ref = nn.LayerNorm(8, eps=1e-5, bias=bias).double()
    _randomise(ours.gain, *([ours.bias] if bias else []))
    with torch.no_grad():
        ref.weight.copy_(ours.gain)
        if bias:
            ref.bias.copy_(ours.bias)
    x = 3 * torch.randn(shape, dtype=torch.float64) + 2
    torch.testing.assert_close(ours(x), ref(x), atol=1e-12, rtol=1e-12)


def test_layer_norm_gradients_match_torch():
    ours, ref = LayerNorm(6).double(), nn.LayerNorm(6).double()
    _randomise(ours.gain, ours.bias)
    with torch.no_grad():
        ref.weight.copy_(ours.gain)
        ref.bias.copy_(ours.bias)
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    g = torch.randn(4, 6, dtype=torch.float64)
    grads = torch.autograd.grad((ours(x) * g).sum(), (x, ours.gain, ours.bias))
    grads_ref = torch.autograd.grad((ref(x) * g).sum(), (x, ref.weight, ref.bias))
    for a, b in zip(grads, grads_ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("eps", [1e-6, 1e-2])
@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 8)])
def test_rms_norm_matches_torch(eps, shape):
    ours = RMSNorm(8, eps=eps).double()
    ref = nn.RMSNorm(8, eps=eps).double()
    _randomise(ours.gain, seed=1)
    with torch.no_grad():
        ref.weight.copy_(ours.gain)
    x = torch.randn(shape, dtype=torch.float64) + 1
    torch.testing.assert_close(ours(x), ref(x), atol=1e-12, rtol=1e-12)
    x.requires_grad_(True)
    g = torch.randn(shape, dtype=torch.float64)
    (gx,) = torch.autograd.grad((ours(x) * g).sum(), x)
    (gx_ref,) = torch.autograd.grad((ref(x) * g).sum(), x)
    torch.testing.assert_close(gx, gx_ref, atol=1e-12, rtol=1e-12)


def test_float32_matches_torch():
    x = torch.randn(3, 7, 16)
    torch.testing.assert_close(LayerNorm(16)(x), nn.LayerNorm(16)(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(RMSNorm(16)(x), nn.RMSNorm(16, eps=1e-6)(x), atol=1e-5, rtol=1e-5)


def test_what_each_norm_removes():
    """LayerNorm 对每个词元的平移和缩放都不敏感；RMSNorm 只对缩放不敏感。"""
    x = torch.randn(4, 10, dtype=torch.float64)
    shift = torch.randn(4, 1, dtype=torch.float64) * 5
    scale = torch.rand(4, 1, dtype=torch.float64) * 5 + 0.5
    ln, rms = LayerNorm(10, eps=1e-12).double(), RMSNorm(10, eps=1e-12).double()
    torch.testing.assert_close(ln(scale * x + shift), ln(x))
    torch.testing.assert_close(rms(scale * x), rms(x))
    assert not torch.allclose(rms(x + shift), rms(x), atol=1e-3)


def test_tokens_are_independent():
    """归一化只在每个词元自己的特征上做：改一个词元，别的词元不受影响。"""
    x = torch.randn(2, 5, 8)
    x2 = x.clone()
    x2[:, 3] += torch.randn(8)
    for norm in (LayerNorm(8), RMSNorm(8)):
        keep = [0, 1, 2, 4]
        assert torch.equal(norm(x)[:, keep], norm(x2)[:, keep])


def test_parameter_counts():
    assert sum(p.numel() for p in LayerNorm(32).parameters()) == 64
    assert sum(p.numel() for p in LayerNorm(32, bias=False).parameters()) == 32
    assert sum(p.numel() for p in RMSNorm(32).parameters()) == 32


def test_make_norm():
    assert isinstance(make_norm("layer", 4), LayerNorm)
    assert isinstance(make_norm("rms", 4), RMSNorm)
    with pytest.raises(ValueError, match="kind"):
        make_norm("batch", 4)


@pytest.mark.parametrize("cls", [LayerNorm, RMSNorm])
def test_wrong_shapes_raise(cls):
    norm = cls(8)
    with pytest.raises(ValueError, match=r"x 的形状应为 \(\.\.\., d_model\).*d_model = 8.*收到 \(2, 5, 6\)"):
        norm(torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match=r"x 的形状应为.*收到 \(\)"):
        norm(torch.tensor(1.0))
    with pytest.raises(ValueError, match="x 应为浮点张量"):
        norm(torch.ones(2, 8, dtype=torch.long))


@pytest.mark.parametrize("cls", [LayerNorm, RMSNorm])
def test_bad_arguments_raise(cls):
    with pytest.raises(ValueError, match="d_model"):
        cls(0)
    with pytest.raises(ValueError, match="d_model"):
        cls(2.5)
    with pytest.raises(ValueError, match="eps"):
        cls(4, eps=0.0)


def test_runs_on_its_own():
    proc = subprocess.run([sys.executable, "code/normalization.py"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "LayerNorm：三行输出相同（平移、缩放都被抵消）: True" in proc.stdout
    assert "RMSNorm：放大 3 倍后输出不变: True ；加上 10 后输出不变: False" in proc.stdout
