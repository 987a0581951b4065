"""Transformer 块：多头注意力 + 前馈网络，各自套上残差连接和层归一化。

注意力直接用 code/multi_head_attention.py 的 MultiHeadAttention，归一化和前馈网络分别来自
code/normalization.py 与 code/feed_forward.py。本文件只负责把它们按不同的方式拼起来，并数清楚
一个块有多少参数、前向要做多少次乘加。
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from attention import causal_mask
from feed_forward import make_ffn, swiglu_hidden_dim
from multi_head_attention import MultiHeadAttention
from normalization import make_norm
from shapes import broadcasts_to, check_bool_mask, check_btd, check_int, fmt, shape_error
from torch import Tensor, nn

LAYOUTS = ("pre", "post", "residual", "plain")  # 四种拼法，见 TransformerBlock 的说明


# --8<-- [start:block]
class TransformerBlock(nn.Module):
    """一个 Transformer 块。输入 x: (B, T, d_model)，输出形状相同。

    layout 决定每个子层（注意力、前馈网络）怎样接入残差流：
      "pre"      x + f(norm(x))   Pre-LN，GPT-2 之后的主流做法
      "post"     norm(x + f(x))   Post-LN，原始 Transformer 的做法
      "residual" x + f(x)         只有残差、没有归一化（用来做对照）
      "plain"    f(x)             既没有残差也没有归一化（用来做对照）
    norm 为 "layer"（LayerNorm）或 "rms"（RMSNorm）；ffn 为 "gelu" 或 "swiglu"。
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int | None = None, *, layout: str = "pre",
                 norm: str = "layer", ffn: str = "gelu", bias: bool = True, eps: float | None = None) -> None:
        super().__init__()
        check_block_args(d_model, n_heads, layout)
        self.d_model, self.n_heads, self.layout = d_model, n_heads, layout
        self.attn = MultiHeadAttention(d_model, n_heads, bias=bias)
        self.ffn = make_ffn(ffn, d_model, d_ff, bias=bias)
        with_norm = layout in ("pre", "post")
        self.norm1 = make_norm(norm, d_model, eps, bias) if with_norm else nn.Identity()  # 注意力子层用
        self.norm2 = make_norm(norm, d_model, eps, bias) if with_norm else nn.Identity()  # 前馈子层用

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """mask: bool，True 为屏蔽；(T, T)（如因果掩码），或能广播到 (B, n_heads, T, T) 的四维张量
        （如 padding_mask 返回的 (B, 1, 1, T)）。"""
        check_block_input(x, mask, self.d_model, self.n_heads)  # 形状不对就报错，见文件末尾
        x = self.sublayer(x, self.norm1, lambda h: self.attn(h, mask=mask))  # 词元之间交换信息
        x = self.sublayer(x, self.norm2, self.ffn)  # 每个词元各自加工
        return x

    def sublayer(self, x: Tensor, norm: nn.Module, f: Callable[[Tensor], Tensor]) -> Tensor:
        if self.layout == "pre":
            return x + f(norm(x))  # 残差这条路上什么都不做，归一化只作用于子层的输入
        if self.layout == "post":
            return norm(x + f(x))  # 先相加再归一化：残差流本身每层都被归一化一次
        if self.layout == "residual":
            return x + f(x)
        return f(x)
# --8<-- [end:block]


# --8<-- [start:params]
def block_param_count(d_model: int, d_ff: int | None = None, *, layout: str = "pre", norm: str = "layer",
                      ffn: str = "gelu", bias: bool = True) -> dict[str, int]:
    """按公式数一个块的参数，分成注意力、前馈网络、归一化三部分。"""
    check_count_args(d_model, d_ff, layout=layout, norm=norm, ffn=ffn)
    if d_ff is None:
        d_ff = 4 * d_model if ffn == "gelu" else swiglu_hidden_dim(d_model)
    d = d_model
    attention = 4 * d * d + (4 * d if bias else 0)  # W_Q、W_K、W_V、W_O 各 d×d，外加偏置
    if ffn == "gelu":
        feed_forward = 2 * d * d_ff + ((d_ff + d) if bias else 0)  # 升维、降维两个矩阵
    else:
        feed_forward = 3 * d * d_ff + ((2 * d_ff + d) if bias else 0)  # 门、升维、降维三个矩阵
    per_norm = (2 * d if bias else d) if norm == "layer" else d  # LayerNorm：增益 + 偏置；RMSNorm：只有增益
    norms = 2 * per_norm if layout in ("pre", "post") else 0
    return {"attention": attention, "ffn": feed_forward, "norms": norms}


def parameter_breakdown(block: TransformerBlock) -> dict[str, int]:
    """直接从模块里数：每一部分所有参数张量的元素个数之和。"""
    def count(*modules: nn.Module) -> int:
        return sum(p.numel() for m in modules for p in m.parameters())
    return {"attention": count(block.attn), "ffn": count(block.ffn), "norms": count(block.norm1, block.norm2)}
# --8<-- [end:params]


# --8<-- [start:flops]
def block_flops(d_model: int, seq_len: int, d_ff: int | None = None, *, ffn: str = "gelu") -> dict[str, int]:
    """一条长为 T 的序列过一个块（前向）的矩阵乘法浮点运算数。一次乘加算 2 次运算。

    只数矩阵乘法：归一化、softmax、激活函数和偏置都是每个元素几次运算，比矩阵乘法少一两个数量级。
    注意力的打分按完整的 T×T 计算（这里的代码先算完再加掩码）。
    """
    check_count_args(d_model, d_ff, ffn=ffn)
    check_int("seq_len", seq_len, minimum=1)
    if d_ff is None:
        d_ff = 4 * d_model if ffn == "gelu" else swiglu_hidden_dim(d_model)
    d, T = d_model, seq_len
    n_ffn_matrices = 2 if ffn == "gelu" else 3
    return {
        "attention_proj": 2 * T * d * (4 * d),  # Q、K、V 和输出投影：每个词元乘 4 个 d×d 矩阵
        "attention_scores": 2 * (2 * T * T * d),  # Q Kᵀ 与 权重 × V：各 T×T×d 次乘加（各头加起来）
        "ffn": 2 * T * d * d_ff * n_ffn_matrices,
    }
# --8<-- [end:flops]


# ---------- 参数检查：不在文章里展示 ----------


def check_block_args(d_model: int, n_heads: int, layout: str) -> None:
    check_int("d_model", d_model, minimum=1)
    check_int("n_heads", n_heads, minimum=1)
    if d_model % n_heads != 0:
        raise ValueError(f"d_model = {d_model} 应能被 n_heads = {n_heads} 整除：每个头分到 d_model / n_heads 维")
    if layout not in LAYOUTS:
        raise ValueError(f"layout 只能是 {'、'.join(repr(s) for s in LAYOUTS)} 之一，收到 {layout!r}")


def check_count_args(d_model: int, d_ff: int | None = None, layout: str = "pre", norm: str = "layer",
                     ffn: str = "gelu") -> None:
    """block_param_count、block_flops 的参数：名字写错时报错，而不是悄悄按另一种配置去数。
    d_ff 为 None（按 ffn 取默认的隐藏维度）或正整数：0 或负数会数出 0 个、负数个参数。"""
    check_int("d_model", d_model, minimum=1)
    if d_ff is not None and (isinstance(d_ff, bool) or not isinstance(d_ff, int) or d_ff < 1):
        raise ValueError(f"d_ff 应为 None（按 ffn 取默认的隐藏维度）或正整数（前馈网络的隐藏维度），收到 {d_ff!r}")
    for name, value, allowed in (("layout", layout, LAYOUTS), ("norm", norm, ("layer", "rms")),
                                 ("ffn", ffn, ("gelu", "swiglu"))):
        if value not in allowed:
            raise ValueError(f"{name} 只能是 {'、'.join(repr(a) for a in allowed)} 之一，收到 {value!r}")


def check_block_input(x: Tensor, mask: Tensor | None, d_model: int, n_heads: int) -> None:
    """x: (B, T, d_model)；mask: None、(T, T)，或能广播到 (B, n_heads, T, T) 且不把它变大的四维 bool 张量。"""
    check_btd("x", x, d_model)
    if mask is None:
        return
    check_bool_mask("mask", mask)
    B, T, _ = x.shape
    target = (B, n_heads, T, T)
    if mask.dim() == 2 and tuple(mask.shape) != (T, T):
        raise shape_error("mask", f"(T, T) = {fmt((T, T))}", mask.shape,
                          "二维掩码按 (查询, 键) 理解；要按样本屏蔽填充位置，请用 padding_mask 返回的 (B, 1, 1, T)")
    expected = f"(T, T) 或能广播到 (B, n_heads, T, T) = {fmt(target)} 的四维张量"
    if mask.dim() == 3:
        raise shape_error("mask", expected, mask.shape,
                          "三维掩码的第一维是样本还是头说不清，请写成四维，例如 (B, 1, T, T)")
    if mask.dim() not in (2, 4) or not broadcasts_to(mask.shape, target):
        raise shape_error("mask", expected, mask.shape)


if __name__ == "__main__":
    torch.manual_seed(0)
    B, T, d_model, n_heads = 2, 6, 32, 4
    x = torch.randn(B, T, d_model)
    block = TransformerBlock(d_model, n_heads)  # 默认：Pre-LN、LayerNorm、GELU
    with torch.no_grad():
        y = block(x, mask=causal_mask(T))
    print("输入形状:", tuple(x.shape), " 输出形状:", tuple(y.shape), "（块不改变形状，可以一层层叠上去）")

    # 因果掩码下，改动最后一个词元不影响前面的输出
    x2 = x.clone()
    x2[:, -1] += 1.0
    with torch.no_grad():
        y2 = block(x2, mask=causal_mask(T))
    print("改动最后一个词元，前面位置的输出不变:", torch.allclose(y[:, :-1], y2[:, :-1]))

    print("\nGPT-2 small 那样的块（d_model = 768，12 个头，LayerNorm + GELU，带偏置）:")
    gpt2 = TransformerBlock(768, 12)
    counted = parameter_breakdown(gpt2)
    formula = block_param_count(768)
    for part in ("attention", "ffn", "norms"):
        print(f"  {part:<9} 从模块数出 {counted[part]:>10,}   按公式 {formula[part]:>10,}")
    total = sum(counted.values())
    print(f"  合计 {total:,}，其中前馈网络占 {counted['ffn'] / total:.1%}")

    print("\nLlama 那样的块（RMSNorm + SwiGLU，无偏置）:")
    llama = TransformerBlock(768, 12, layout="pre", norm="rms", ffn="swiglu", bias=False)
    counted = parameter_breakdown(llama)
    print(f"  SwiGLU 隐藏维度 {llama.ffn.up.out_features}，参数合计 {sum(counted.values()):,}")

    flops = block_flops(768, 1024)
    per_token = sum(flops.values()) / 1024
    print(f"\n长 1024 的序列过一个 GPT-2 small 块：每个词元约 {per_token / 1e6:.1f} M 次浮点运算（只数矩阵乘法），"
          f"其中注意力打分占 {flops['attention_scores'] / sum(flops.values()):.1%}")

    try:
        block(x[0])  # 忘了批次维
    except ValueError as e:
        print("\n输入少了批次维时的报错:", e)
