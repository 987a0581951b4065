"""把随机初始化的 Transformer 块一层层叠起来，看残差流和梯度怎样随深度变化。

这里没有任何训练：所有块都是 PyTorch 的默认初始化，输入是标准正态分布的随机张量，
损失是输出与一个固定随机张量的内积。测的是「刚开始训练的那一刻」，模型各处的数值尺度。
文章中残差连接、Pre-LN 与 Post-LN 的两张图都由本文件计算。
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from attention import causal_mask
from normalization import make_norm
from shapes import check_int
from torch import Tensor, nn
from transformer_block import LAYOUTS, TransformerBlock


def make_stack(layout: str, n_layers: int, d_model: int = 64, n_heads: int = 4, seed: int = 0,
               dtype: torch.dtype = torch.float64) -> nn.ModuleList:
    """n_layers 个同样拼法的块，用 seed 固定随机初始化。"""
    check_int("n_layers", n_layers, minimum=1)
    torch.manual_seed(seed)
    return nn.ModuleList(TransformerBlock(d_model, n_heads, layout=layout) for _ in range(n_layers)).to(dtype)


def _inputs(shape: tuple[int, ...], seed: int, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """随机输入 x 和定义损失用的随机方向 g（损失 = Σ 输出 · g）。"""
    generator = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(shape, generator=generator, dtype=dtype)
    g = torch.randn(shape, generator=generator, dtype=dtype)
    return x, g


@dataclass
class DepthProfile:
    """std[l]：第 l 层块的输入（l = 0 是最初的输入，l = n_layers 是最后的输出）的标准差；
    grad[l]：损失对它的梯度范数，除以损失对最后输出的梯度范数。"""

    layout: str
    std: list[float]
    grad: list[float]


# --8<-- [start:profile]
def depth_profile(layout: str, n_layers: int = 32, d_model: int = 64, n_heads: int = 4,
                  batch: int = 4, seq_len: int = 16, seed: int = 0) -> DepthProfile:
    """前向时记下每层输入的标准差，反向时记下梯度流到每一层时的大小。"""
    blocks = make_stack(layout, n_layers, d_model, n_heads, seed)
    x, g = _inputs((batch, seq_len, d_model), seed, torch.float64)
    mask = causal_mask(seq_len)
    states = [x.requires_grad_()]
    for block in blocks:
        x = block(x, mask=mask)
        x.retain_grad()  # 中间结果默认不保存梯度，这里要看它
        states.append(x)
    (x * g).sum().backward()
    top = states[-1].grad.norm().item()
    return DepthProfile(
        layout,
        std=[s.detach().std().item() for s in states],
        grad=[s.grad.norm().item() / top for s in states],
    )
# --8<-- [end:profile]


def last_layer_gradient(layout: str, n_layers: int, d_model: int = 64, n_heads: int = 4,
                        batch: int = 4, seq_len: int = 16, seed: int = 0) -> float:
    """损失对最后一个块里前馈网络降维矩阵的梯度范数。

    只比较 "pre" 与 "post"：Pre-LN 的堆叠末尾照惯例再加一个归一化，Post-LN 的输出本来就归一化过了。
    """
    if layout not in ("pre", "post"):
        raise ValueError(f"layout 只能是 'pre' 或 'post'，收到 {layout!r}")
    blocks = make_stack(layout, n_layers, d_model, n_heads, seed)
    x, g = _inputs((batch, seq_len, d_model), seed, torch.float64)
    mask = causal_mask(seq_len)
    for block in blocks:
        x = block(x, mask=mask)
    if layout == "pre":
        x = make_norm("layer", d_model).to(x.dtype)(x)
    ((x * g).sum() / (batch * seq_len)).backward()  # 按词元数取平均，和常见的损失一样
    return blocks[-1].ffn.down.weight.grad.norm().item()


if __name__ == "__main__":
    torch.set_num_threads(1)
    print("32 层随机初始化的块，每隔 8 层看一次（第 0 层是输入，第 32 层是输出）")
    print(f"{'拼法':<9}{'残差流的标准差':<34}梯度范数（相对输出处）")
    for layout in LAYOUTS:
        p = depth_profile(layout)
        std = " ".join(f"{v:7.3g}" for v in p.std[::8])
        grad = " ".join(f"{v:9.3g}" for v in p.grad[::8])
        print(f"{layout:<9}{std}   {grad}")
    print("\n最后一个块的前馈网络权重的梯度范数，随总层数的变化：")
    depths = [1, 4, 16]
    print("层数        " + "".join(f"{n:>8}" for n in depths))
    for layout in ("post", "pre"):
        print(f"{layout:<12}" + "".join(f"{last_layer_gradient(layout, n):8.3f}" for n in depths))
