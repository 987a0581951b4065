"""两种层归一化：LayerNorm（减均值、除标准差）与 RMSNorm（只除均方根）。

两者都只在最后一维（每个词元自己的 d_model 个数）上做统计，不跨词元、不跨样本，
所以训练和推理的行为完全一样，批次大小也不影响结果。
"""

from __future__ import annotations

import torch
from shapes import check_float, check_int, check_positive, shape_error
from torch import Tensor, nn


# --8<-- [start:layer-norm]
class LayerNorm(nn.Module):
    """对最后一维做 (x - 均值) / sqrt(方差 + eps)，再乘增益 gain、加偏置 bias。"""

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        check_norm_args(d_model, eps)
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d_model))  # 初始为 1：一开始不改变尺度
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        check_last_dim("x", x, self.gain.numel())
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # 除以 d，不是 d - 1
        y = (x - mean) / torch.sqrt(var + self.eps)  # 每个词元：均值 0、方差 1
        y = y * self.gain
        return y + self.bias if self.bias is not None else y
# --8<-- [end:layer-norm]


# --8<-- [start:rms-norm]
class RMSNorm(nn.Module):
    """对最后一维做 x / sqrt(mean(x²) + eps)，再乘增益 gain。不减均值，也没有偏置。"""

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        check_norm_args(d_model, eps)
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        check_last_dim("x", x, self.gain.numel())
        wide = x.to(torch.promote_types(x.dtype, torch.float32))  # 半精度先升到 float32：1e4 的平方放不进 float16
        rms = torch.sqrt(wide.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # 均方根
        return (wide / rms).to(x.dtype) * self.gain
# --8<-- [end:rms-norm]


def make_norm(kind: str, d_model: int, eps: float | None = None, bias: bool = True) -> nn.Module:
    """按名字建一个归一化层：kind 为 "layer"（LayerNorm）或 "rms"（RMSNorm）。"""
    if kind == "layer":
        return LayerNorm(d_model, eps=1e-5 if eps is None else eps, bias=bias)
    if kind == "rms":
        return RMSNorm(d_model, eps=1e-6 if eps is None else eps)
    raise ValueError(f"kind 只能是 'layer'（LayerNorm）或 'rms'（RMSNorm），收到 {kind!r}")


# ---------- 参数检查：不在文章里展示，出错时给出看得懂的消息 ----------


def check_norm_args(d_model: int, eps: float) -> None:
    check_int("d_model", d_model, minimum=1)
    check_positive("eps", eps)


def check_last_dim(name: str, x: Tensor, d_model: int) -> None:
    """x 是浮点张量，形状 (..., d_model)：归一化只看最后一维。"""
    check_float(name, x)
    if x.dim() == 0 or x.size(-1) != d_model:
        raise shape_error(
            name, f"(..., d_model)，最后一维 d_model = {d_model}", x.shape,
            "归一化在最后一维上做，它必须等于建层时给的 d_model",
        )


if __name__ == "__main__":
    torch.manual_seed(0)

    def show(t: Tensor) -> str:
        return "[" + ", ".join(f"{v:7.3f}" for v in t.tolist()) + "]"

    # 同一个 6 维向量的三个版本：原样、放大 3 倍、整体加 10
    base = torch.randn(6)
    x = torch.stack([base, 3 * base, base + 10])
    names = ["原样   ", "乘以 3 ", "加上 10"]
    ln, rms = LayerNorm(6), RMSNorm(6)
    with torch.no_grad():
        y_ln, y_rms = ln(x), rms(x)
    for name, row, a, b in zip(names, x, y_ln, y_rms, strict=True):
        print(f"{name} 输入 {show(row)}")
        print(f"        LayerNorm {show(a)}   RMSNorm {show(b)}")
    print("LayerNorm：三行输出相同（平移、缩放都被抵消）:",
          torch.allclose(y_ln[0], y_ln[1], atol=1e-4) and torch.allclose(y_ln[0], y_ln[2], atol=1e-4))
    print("RMSNorm：放大 3 倍后输出不变:", torch.allclose(y_rms[0], y_rms[1], atol=1e-4),
          "；加上 10 后输出不变:", torch.allclose(y_rms[0], y_rms[2], atol=1e-4))
    print("参数量（d_model = 6）：LayerNorm", sum(p.numel() for p in ln.parameters()),
          "（增益 + 偏置），RMSNorm", sum(p.numel() for p in rms.parameters()), "（只有增益）")
