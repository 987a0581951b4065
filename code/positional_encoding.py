"""三种位置编码：正弦位置编码、旋转位置编码（RoPE）、可学习的位置嵌入。

形状不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import torch
from shapes import broadcasts_to, check_btd, check_float, check_int, check_positive, check_tensor, fmt, shape_error
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
    check_sinusoidal_args(seq_len, d_model, base)
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
    check_rope_dim(d, base)  # 维度两两配对，d 须为偶数
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    return base ** (-two_i / d)


def apply_rope(
    x: Tensor, positions: Tensor | None = None, base: float = 10000.0
) -> Tensor:
    """对 x (..., T, d) 施加旋转位置编码，返回同形状张量。

    把最后一维看成 d/2 个二维向量 (x[2i], x[2i+1])，第 pos 个位置的第 i 对
    逆时针旋转 pos * base^(-2i/d) 弧度。
    positions: 默认是 0..T-1；可以是所有序列共用的 (T,)，也可以与 x 去掉最后一维后维数相同、
    能广播到 x.shape[:-1]，例如 x 为 (B, H, T, d) 时每个序列各自的位置写成 (B, 1, T)。
    """
    check_rope_shapes(x, positions)  # 形状不对就报错，见文件末尾
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
        check_learned_args(max_len, d_model)  # 两者都须为正整数
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, T, d_model)，返回 x 加上位置 0..T-1 的嵌入。"""
        check_btd("x", x, self.embedding.embedding_dim)  # x 须为 (B, T, d_model)
        T = x.size(1)
        if self.max_len < T:
            raise ValueError(
                f"x 的序列长度 T = {T} 超过了 max_len = {self.max_len}：没有为这些位置训练过嵌入"
            )
        positions = torch.arange(T, device=x.device)
        return x + self.embedding(positions)  # (T, d_model) 广播到 (B, T, d_model)
# --8<-- [end:learned]


# ---------- 形状检查：不在文章里展示，形状不对时给出看得懂的错误 ----------


def check_sinusoidal_args(seq_len: int, d_model: int, base: float) -> None:
    """seq_len 是非负整数，d_model 是正整数，base 是正数。"""
    check_int("seq_len", seq_len)
    check_int("d_model", d_model, minimum=1)
    check_positive("base", base)


def check_learned_args(max_len: int, d_model: int) -> None:
    """max_len 和 d_model 都是正整数。"""
    check_int("max_len", max_len, minimum=1)
    check_int("d_model", d_model, minimum=1)


def check_rope_dim(d: int, base: float) -> None:
    """RoPE 把维度两两配对旋转，所以 d 必须是正偶数。"""
    check_int("d", d, minimum=2)
    if d % 2 != 0:
        raise ValueError(f"RoPE 要求最后一维 d 是偶数（维度两两配对），收到 d = {d}")
    check_positive("base", base)


def check_rope_shapes(x: Tensor, positions: Tensor | None) -> None:
    """检查 apply_rope 的输入：x 为 (..., T, d)，positions 为 (T,) 或与 x.shape[:-1] 维数相同且能广播过去。"""
    check_float("x", x)
    if x.dim() < 2:
        raise shape_error("x", "(..., T, d)，至少两维", x.shape, "一个向量请写成 x[None]，形状 (1, d)")
    if x.size(-1) % 2 != 0:
        raise shape_error("x", "(..., T, d)，d 为偶数（维度两两配对）", x.shape)
    if positions is None:
        return
    check_tensor("positions", positions)
    if positions.dtype == torch.bool or positions.is_complex():
        raise ValueError(f"positions 应为整数或浮点张量，收到 dtype={positions.dtype}")
    T, lead = x.size(-2), x.shape[:-1]
    expected = f"(T,) = {fmt((T,))}，或与 x 去掉最后一维同样是 {len(lead)} 维、能广播到 {fmt(lead)}"
    if positions.dim() == 1:
        ok = positions.size(0) == T
    else:
        ok = positions.dim() == len(lead) and broadcasts_to(positions.shape, lead)
    if not ok:
        hint = ""
        if positions.dim() == 2 and x.dim() == 4:
            hint = "x 为 (B, H, T, d) 时，每个序列各自的位置 (B, T) 请写成 positions[:, None]，形状 (B, 1, T)"
        raise shape_error("positions", expected, positions.shape, hint)


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

    # x 为 (B, H, T, d)，每个序列各自的位置 (B, T) 要写成 (B, 1, T)，直接传 (B, T) 会报错
    x = torch.randn(2, 2, 5, d)
    positions = torch.tensor([[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]])
    print("positions[:, None] 的结果形状:", tuple(apply_rope(x, positions[:, None]).shape))
    try:
        apply_rope(x, positions)
    except ValueError as e:
        print("(B, T) 的位置配 (B, H, T, d) 的 x:", e)
