"""把随机初始化的 Transformer 块一层层叠起来，看残差流和梯度怎样随深度变化。

这里没有任何训练：所有块都是 PyTorch 的默认初始化，输入是标准正态分布的随机张量，
损失是输出与一个固定随机张量的内积。测的是「刚开始训练的那一刻」，模型各处的数值尺度。
文章中残差连接、Pre-LN 与 Post-LN 的两张图都由本文件计算；GPT-2 那样按 1/√(2L) 缩小残差分支的
初始化（scale_residual_branches）也在这里，用来看它怎样让残差流不再随深度变大。
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from attention import causal_mask
from normalization import make_norm
from shapes import check_int, check_positive
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


# --8<-- [start:scaled-init]
def scale_residual_branches(blocks: nn.ModuleList, factor: float) -> None:
    """把每个块里往残差流上写的两个矩阵（注意力的输出投影、前馈网络的降维矩阵）连同偏置乘以 factor。

    GPT-2 的论文（Radford 等，2019，第 2.3 节）在初始化时把残差层的权重乘以 1/√N，N 是残差层的个数；
    L 个块一共 2L 条残差分支，所以 factor = 1/√(2L)，每条一开始只往传送带上加一点点。
    GPT-2 缩小的是按 N(0, 0.02) 初始化的权重；这里缩小的是 PyTorch 默认初始化的权重，偏置也一起缩小。
    """
    check_residual_blocks(blocks)
    check_positive("factor", factor)
    with torch.no_grad():
        for block in blocks:
            for linear in (block.attn.out, block.ffn.down):
                linear.weight.mul_(factor)
                if linear.bias is not None:
                    linear.bias.mul_(factor)
# --8<-- [end:scaled-init]


def residual_stream_std(layout: str, n_layers: int, scaled: bool = False, d_model: int = 64, n_heads: int = 4,
                        batch: int = 4, seq_len: int = 16, seed: int = 0) -> float:
    """叠 n_layers 个随机初始化的块，返回最后一个块输出的标准差（Pre-LN 末尾的归一化之前）。

    scaled=True 时先用 scale_residual_branches 把残差分支乘以 1/√(2·n_layers)。
    """
    if layout not in ("pre", "residual"):
        raise ValueError(f"layout 只能是 'pre' 或 'residual'（有残差、残差流不被归一化的两种），收到 {layout!r}")
    blocks = make_stack(layout, n_layers, d_model, n_heads, seed)
    if scaled:
        scale_residual_branches(blocks, 1 / (2 * n_layers) ** 0.5)
    x, _ = _inputs((batch, seq_len, d_model), seed, torch.float64)
    mask = causal_mask(seq_len)
    with torch.no_grad():
        for block in blocks:
            x = block(x, mask=mask)
    return x.std().item()


def check_residual_blocks(blocks: nn.ModuleList) -> None:
    """blocks 必须是非空的 TransformerBlock 序列（make_stack 的返回值）。"""
    if not isinstance(blocks, nn.ModuleList) or len(blocks) == 0:
        raise ValueError(f"blocks 应为非空的 nn.ModuleList（如 make_stack 的返回值），收到 {type(blocks).__name__}")
    for i, block in enumerate(blocks):
        if not isinstance(block, TransformerBlock):
            raise ValueError(f"blocks[{i}] 应为 TransformerBlock，收到 {type(block).__name__}")


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
    print("\n残差流最后的标准差：PyTorch 默认初始化，与把残差分支乘以 1/√(2L) 之后")
    for layout in ("pre", "residual"):
        for n in (32, 128):
            plain, scaled = residual_stream_std(layout, n), residual_stream_std(layout, n, scaled=True)
            print(f"{layout:<9}{n:>4} 层   默认 {plain:10.2f}   缩小后 {scaled:7.2f}")
