"""code/positional_encoding.py 的测试。"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from positional_encoding import (
    LearnedPositionEmbedding,
    apply_rope,
    rope_frequencies,
    sinusoidal_position_encoding,
)

REPO = Path(__file__).resolve().parents[2]


# ---------- 正弦位置编码 ----------


@pytest.mark.parametrize(("seq_len", "d_model"), [(10, 8), (50, 64), (7, 5), (1, 2)])
def test_sinusoidal_shape_and_range(seq_len, d_model):
    pe = sinusoidal_position_encoding(seq_len, d_model)
    assert pe.shape == (seq_len, d_model)
    assert pe.abs().max() <= 1.0
    # 位置 0：sin(0)=0，cos(0)=1
    assert (pe[0, 0::2] == 0).all() and (pe[0, 1::2] == 1).all()


@pytest.mark.parametrize("base", [10000.0, 500.0])
def test_sinusoidal_entries_match_formula(base):
    seq_len, d = 40, 16
    pe = sinusoidal_position_encoding(seq_len, d, base=base)
    for pos in [0, 1, 5, 17, 39]:
        for i in range(d // 2):
            angle = pos / base ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


# ---------- RoPE ----------


def rope_reference(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """独立的参考实现：把每对 (x[2i], x[2i+1]) 看成复数，乘以 e^{i·pos·θ_i}。"""
    d = x.size(-1)
    theta = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    angles = positions.double()[:, None] * theta
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    rotated = z * torch.polar(torch.ones_like(angles), angles)
    return torch.view_as_real(rotated).reshape(x.shape)


def test_rope_frequencies():
    f = rope_frequencies(8, base=100.0)
    expected = torch.tensor([100.0 ** (-2 * i / 8) for i in range(4)], dtype=f.dtype)
    torch.testing.assert_close(f, expected)


@pytest.mark.parametrize("base", [10000.0, 50.0])
def test_rope_matches_complex_reference(base):
    x = torch.randn(2, 3, 10, 16, dtype=torch.float64)
    positions = torch.arange(10)
    torch.testing.assert_close(apply_rope(x, base=base), rope_reference(x, positions, base))
    custom = torch.tensor([3, 0, 7, 100, 2, 2, 9, 1, 5, 1000])
    torch.testing.assert_close(
        apply_rope(x, custom, base=base), rope_reference(x, custom, base)
    )


def test_rope_preserves_norm():
    x = torch.randn(4, 12, 32, dtype=torch.float64)
    y = apply_rope(x)
    assert y.shape == x.shape
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    # 每一对维度的长度也不变（旋转是逐对进行的）
    def pair_norm(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(*t.shape[:-1], -1, 2).norm(dim=-1)

    torch.testing.assert_close(pair_norm(y), pair_norm(x))


def test_rope_position_zero_is_identity():
    x = torch.randn(3, 5, 8)
    assert torch.equal(apply_rope(x, torch.zeros(5, dtype=torch.long)), x)
    # 默认 positions=0..T-1，第 0 个位置不变，其余位置改变
    y = apply_rope(x)
    assert torch.equal(y[:, 0], x[:, 0])
    assert not torch.allclose(y[:, 1:], x[:, 1:])


def test_rope_score_depends_only_on_relative_position():
    torch.manual_seed(0)
    d = 16
    q = torch.randn(d, dtype=torch.float64)
    k = torch.randn(d, dtype=torch.float64)

    def score(m: int, n: int) -> float:
        qm = apply_rope(q[None, :], torch.tensor([m]))
        kn = apply_rope(k[None, :], torch.tensor([n]))
        return (qm * kn).sum().item()

    for offset in [0, 1, 3, -2, 17]:
        pairs = [(m, m - offset) for m in [20, 25, 60, 500]]
        scores = [score(m, n) for m, n in pairs]
        for s in scores[1:]:
            assert s == pytest.approx(scores[0], abs=1e-9)
    # 不同的相对位置得到不同的分数
    by_offset = [score(30, 30 - off) for off in [0, 1, 2, 5, 10]]
    for i in range(len(by_offset)):
        for j in range(i + 1, len(by_offset)):
            assert abs(by_offset[i] - by_offset[j]) > 1e-6


def test_rope_odd_dim_raises():
    with pytest.raises(ValueError):
        apply_rope(torch.randn(2, 4, 7))


# ---------- 可学习位置嵌入 ----------


def test_learned_adds_position_rows():
    torch.manual_seed(0)
    emb = LearnedPositionEmbedding(max_len=10, d_model=6)
    x = torch.randn(3, 4, 6)
    y = emb(x)
    torch.testing.assert_close(y, x + emb.embedding.weight[:4][None])
    assert emb(torch.randn(2, 10, 6)).shape == (2, 10, 6)  # 恰好等于 max_len 可以


def test_learned_too_long_raises():
    emb = LearnedPositionEmbedding(max_len=8, d_model=4)
    with pytest.raises(ValueError):
        emb(torch.zeros(1, 9, 4))


def test_script_runs():
    result = subprocess.run(
        [sys.executable, "code/positional_encoding.py"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
