"""前馈网络（FFN）：对每个词元各自做「升维 → 非线性 → 降维」，两种写法：GELU 与 SwiGLU。

注意力负责在词元之间搬运信息；前馈网络不看别的词元，只对每个位置的向量单独加工。
"""

from __future__ import annotations

import math

import torch
from normalization import check_last_dim
from shapes import check_int
from torch import Tensor, nn
from torch.nn import functional as F


# --8<-- [start:gelu-ffn]
class FeedForward(nn.Module):
    """经典的前馈网络：Linear(d_model → d_ff) → GELU → Linear(d_ff → d_model)，d_ff 默认 4 * d_model。"""

    def __init__(self, d_model: int, d_ff: int | None = None, bias: bool = True) -> None:
        super().__init__()
        d_ff = 4 * d_model if d_ff is None else d_ff
        check_ffn_args(d_model, d_ff)
        self.up = nn.Linear(d_model, d_ff, bias=bias)  # 升维：给非线性留出空间
        self.down = nn.Linear(d_ff, d_model, bias=bias)  # 降维：回到残差流的宽度

    def forward(self, x: Tensor) -> Tensor:
        check_last_dim("x", x, self.up.in_features)
        return self.down(F.gelu(self.up(x)))  # 精确的 GELU：x * Φ(x)
# --8<-- [end:gelu-ffn]


# --8<-- [start:swiglu]
def swiglu_hidden_dim(d_model: int, multiple_of: int = 1) -> int:
    """SwiGLU 的隐藏维度：约 8/3 * d_model，使三个矩阵的参数量与 d_ff = 4 * d_model 的两个矩阵相同。

    multiple_of 把结果向上取整到它的倍数（例如 256），矩阵乘法在硬件上更快。
    """
    check_int("d_model", d_model, minimum=1)
    check_int("multiple_of", multiple_of, minimum=1)
    hidden = math.ceil(8 * d_model / 3)
    return multiple_of * math.ceil(hidden / multiple_of)


class SwiGLU(nn.Module):
    """门控前馈网络：down(SiLU(gate(x)) * up(x))。多一个矩阵，所以隐藏维度取约 8/3 * d_model。"""

    def __init__(self, d_model: int, d_ff: int | None = None, bias: bool = False) -> None:
        super().__init__()
        d_ff = swiglu_hidden_dim(d_model) if d_ff is None else d_ff
        check_ffn_args(d_model, d_ff)
        self.gate = nn.Linear(d_model, d_ff, bias=bias)  # 门：过了 SiLU 之后可正可负，也可以大于 1
        self.up = nn.Linear(d_model, d_ff, bias=bias)  # 算「放进去什么」
        self.down = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        check_last_dim("x", x, self.up.in_features)
        return self.down(F.silu(self.gate(x)) * self.up(x))  # SiLU(z) = z * sigmoid(z)
# --8<-- [end:swiglu]


def make_ffn(kind: str, d_model: int, d_ff: int | None = None, bias: bool = True) -> nn.Module:
    """按名字建前馈网络：kind 为 "gelu"（FeedForward）或 "swiglu"（SwiGLU）。"""
    if kind == "gelu":
        return FeedForward(d_model, d_ff, bias=bias)
    if kind == "swiglu":
        return SwiGLU(d_model, d_ff, bias=bias)
    raise ValueError(f"kind 只能是 'gelu' 或 'swiglu'，收到 {kind!r}")


# ---------- 参数检查：不在文章里展示 ----------


def check_ffn_args(d_model: int, d_ff: int) -> None:
    check_int("d_model", d_model, minimum=1)
    check_int("d_ff", d_ff, minimum=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    d_model = 768
    gelu_ffn, swiglu = FeedForward(d_model), SwiGLU(d_model, bias=False)
    x = torch.randn(2, 5, d_model)
    with torch.no_grad():
        print("输入形状:", tuple(x.shape), " GELU FFN 输出:", tuple(gelu_ffn(x).shape),
              " SwiGLU 输出:", tuple(swiglu(x).shape))
    n_gelu = sum(p.numel() for n, p in gelu_ffn.named_parameters() if n.endswith("weight"))
    n_swiglu = sum(p.numel() for p in swiglu.parameters())
    print(f"d_model = {d_model}：GELU FFN 的 d_ff = {gelu_ffn.up.out_features}，两个矩阵共 {n_gelu:,} 个权重")
    print(f"              SwiGLU 的 d_ff = {swiglu.up.out_features}，三个矩阵共 {n_swiglu:,} 个权重")
    print("每个词元各自计算：改动第 0 个词元，其他词元的输出不变:", end=" ")
    x2 = x.clone()
    x2[:, 0] += 1.0
    with torch.no_grad():
        print(torch.equal(gelu_ffn(x)[:, 1:], gelu_ffn(x2)[:, 1:]))
    z = torch.linspace(-3, 3, 7)
    for name, values in (("z", z), ("GELU(z)", F.gelu(z)), ("ReLU(z)", F.relu(z)), ("SiLU(z)", F.silu(z))):
        print(f"{name:<8}", " ".join(f"{v:6.2f}" for v in values.tolist()))
