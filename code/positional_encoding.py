"""三种位置编码：正弦位置编码、旋转位置编码（RoPE）、可学习的位置嵌入。"""

from __future__ import annotations

import torch
from torch import Tensor, nn


# --8<-- [start:sinusoidal]
def sinusoidal_position_encoding(
    seq_len: int, d_model: int, base: float = 10000.0
) -> Tensor:
    """正弦位置编码 (seq_len, d_model)。

    PE[pos, 2i]   = sin(pos / base^(2i/d_model))
    PE[pos, 2i+1] = cos(pos / base^(2i/d_model))
    维度越靠后频率越低：前几维变化很快，后几维变化很慢。
    """
    pos = torch.arange(seq_len, dtype=torch.float64)[:, None]  # (seq_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # 0, 2, 4, ...
    angles = pos / base ** (two_i / d_model)  # (seq_len, ceil(d_model/2))
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)  # 偶数维用 sin
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # 奇数维用 cos（d 为奇数时少一列）
    return pe.float()
# --8<-- [end:sinusoidal]


# --8<-- [start:rope]
def rope_frequencies(d: int, base: float = 10000.0) -> Tensor:
    """每一对维度 (2i, 2i+1) 的旋转角速度 base^(-2i/d)，形状 (d/2,)。"""
    if d % 2 != 0:
        raise ValueError(f"RoPE 要求最后一维是偶数，收到 d={d}")
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    return base ** (-two_i / d)


def apply_rope(
    x: Tensor, positions: Tensor | None = None, base: float = 10000.0
) -> Tensor:
    """对 x (..., T, d) 施加旋转位置编码，返回同形状张量。

    把最后一维看成 d/2 个二维向量 (x[2i], x[2i+1])，第 pos 个位置的第 i 对
    逆时针旋转 pos * base^(-2i/d) 弧度。positions 默认是 0..T-1。
    """
    T, d = x.shape[-2], x.shape[-1]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    freqs = rope_frequencies(d, base).to(x.device)  # (d/2,)
    angles = positions.to(torch.float64)[..., None] * freqs  # (..., T, d/2)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # 每一对的第一、第二个分量
    # 二维旋转：(a, b) -> (a cosθ - b sinθ, a sinθ + b cosθ)
    rot_even = x_even * cos - x_odd * sin
    rot_odd = x_even * sin + x_odd * cos
    # 再把两个分量交错放回原来的位置：(..., d/2, 2) -> (..., d)
    return torch.stack((rot_even, rot_odd), dim=-1).flatten(-2)
# --8<-- [end:rope]


# --8<-- [start:learned]
class LearnedPositionEmbedding(nn.Module):
    """可学习的位置嵌入：每个位置一行参数，最多只能表示 max_len 个位置。"""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, T, d_model)，返回 x 加上位置 0..T-1 的嵌入。"""
        T = x.size(1)
        if self.max_len < T:
            raise ValueError(
                f"序列长度 {T} 超过了最大长度 {self.max_len}：没有为这些位置训练过嵌入"
            )
        positions = torch.arange(T, device=x.device)
        return x + self.embedding(positions)  # (T, d_model) 广播到 (B, T, d_model)
# --8<-- [end:learned]


if __name__ == "__main__":
    torch.manual_seed(0)

    pe = sinusoidal_position_encoding(seq_len=50, d_model=16)
    print("正弦位置编码形状:", tuple(pe.shape))
    print("位置 0..3 的前 6 维:")
    print(pe[:4, :6].round(decimals=3))

    d = 8
    q, k = torch.randn(d), torch.randn(d)

    def score(m: int, n: int) -> float:
        """位置 m 的 q 与位置 n 的 k 在旋转后的点积。"""
        qm = apply_rope(q[None, :], torch.tensor([m]))
        kn = apply_rope(k[None, :], torch.tensor([n]))
        return (qm * kn).sum().item()

    print("RoPE：点积只取决于相对位置 m - n")
    for m, n in [(3, 1), (10, 8), (100, 98), (5, 1)]:
        print(f"  m={m:>3}, n={n:>3}, m-n={m - n}: {score(m, n):+.6f}")
    x = torch.randn(1, 6, d)
    print("旋转前的范数:", [f"{v:.4f}" for v in x.norm(dim=-1)[0].tolist()])
    print("旋转后的范数:", [f"{v:.4f}" for v in apply_rope(x).norm(dim=-1)[0].tolist()])

    learned = LearnedPositionEmbedding(max_len=8, d_model=d)
    print("可学习位置嵌入输出形状:", tuple(learned(torch.zeros(2, 8, d)).shape))
    try:
        learned(torch.zeros(2, 9, d))
    except ValueError as e:
        print("长度 9 的输入:", e)
