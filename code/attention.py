"""缩放点积注意力与两种常用掩码（因果掩码、填充掩码）。

约定：掩码是 bool 张量，True 表示「屏蔽」——该位置不允许被关注。
形状不对时函数抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math

import torch
from shapes import (
    broadcasts_to,
    check_bool_mask,
    check_float,
    check_int,
    check_same_dtype,
    check_tensor,
    fmt,
    shape_error,
)
from torch import Tensor


# --8<-- [start:sdpa]
def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor,
    mask: Tensor | None = None, scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    """计算 softmax(q k^T * scale) v，返回 (输出, 注意力权重)。

    q: (..., T_q, d_k)，k: (..., T_k, d_k)，v: (..., T_k, d_v)，k、v 的批次维 ... 可广播到 q 的。
    mask: bool 张量，True 表示屏蔽；须能广播到分数的形状 (..., T_q, T_k)，且不能把它变大。
    scale: 默认 1/sqrt(d_k)；传入 1.0 即不缩放。
    整行都被屏蔽的查询得到全 0 权重和全 0 输出，不会产生 NaN。只屏蔽键的填充掩码不会屏蔽整行
    （除非序列长度为 0）；左侧填充再加因果掩码就会：开头的填充位置只能看到自己和更前面的填充位置。
    """
    check_sdpa_shapes(q, k, v, mask)  # 形状不对就报错，见文件末尾
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    scores = q @ k.transpose(-2, -1) * scale  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))  # exp(-inf) = 0
        # 整行全是 -inf 时 softmax 会得到 NaN：先把这些行的分数改成 0，算完再把权重清零
        scores = scores.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return weights @ v, weights
# --8<-- [end:sdpa]


# --8<-- [start:causal-mask]
def causal_mask(seq_len: int, device: torch.device | str | None = None) -> Tensor:
    """因果掩码 (T, T)：对角线以上（未来位置）为 True，即第 i 个词只能看到 0..i。"""
    check_int("seq_len", seq_len)
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=1)
# --8<-- [end:causal-mask]


# --8<-- [start:padding-mask]
def padding_mask(lengths: Tensor, max_len: int) -> Tensor:
    """填充掩码 (B, 1, 1, max_len)：每个序列超出真实长度的键位置为 True。

    lengths: (B,) 的整数张量，每个值在 0 到 max_len 之间。
    两个长度为 1 的维度分别留给「注意力头」和「查询位置」做广播，所以它配合四维的 q (B, 头数, T, d_k)；
    q 是三维的 (B, T, d_k) 时用 mask[:, 0]，形状 (B, 1, max_len)。
    """
    check_lengths(lengths, max_len)
    positions = torch.arange(max_len, device=lengths.device)  # (max_len,)
    mask = positions[None, :] >= lengths[:, None]  # (B, max_len)
    return mask[:, None, None, :]
# --8<-- [end:padding-mask]


# ---------- 形状检查：不在文章里展示，形状不对时给出看得懂的错误 ----------


def check_sdpa_shapes(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> None:
    """检查 scaled_dot_product_attention 的输入，出错时抛出 ValueError。"""
    for name, t, expected in (("q", q, "(..., T_q, d_k)"), ("k", k, "(..., T_k, d_k)"), ("v", v, "(..., T_k, d_v)")):
        check_float(name, t)
        if t.dim() < 2:
            raise shape_error(name, expected + "，至少两维", t.shape)
    check_same_dtype("k", k, "q", q.dtype)
    check_same_dtype("v", v, "q", q.dtype)
    batch, t_q, d_k = q.shape[:-2], q.size(-2), q.size(-1)
    t_k = k.size(-2)
    if k.size(-1) != d_k:
        raise shape_error("k", f"(..., T_k, d_k)，d_k = q 的最后一维 = {d_k}", k.shape)
    if v.size(-2) != t_k:
        raise shape_error("v", f"(..., T_k, d_v)，T_k = k 的倒数第二维 = {t_k}", v.shape)
    for name, t in (("k", k), ("v", v)):
        if not broadcasts_to(t.shape[:-2], batch):
            expected = f"(..., T_k, {'d_k' if name == 'k' else 'd_v'})，批次维 ... 能广播到 q 的批次维 {fmt(batch)}"
            raise shape_error(name, expected, t.shape)
    if mask is None:
        return
    check_bool_mask("mask", mask)
    scores = (*batch, t_q, t_k)
    if not broadcasts_to(mask.shape, scores):
        if not broadcasts_to(mask.shape[-2:], (t_q, t_k)):
            hint = f"最后两维应为 (T_q, T_k) = {fmt((t_q, t_k))}（某一维也可以是 1）"
        else:
            hint = f"前面的维应与 q 的批次维 {fmt(batch)} 右对齐、相同或为 1"
        if mask.dim() > len(scores):
            hint = ("mask 的维数比分数多，广播会把结果变大、把不同样本混在一起。"
                    "padding_mask 返回 (B, 1, 1, T)，配合四维的 q (B, 头数, T, d_k)；q 是三维时请用 mask[:, 0]")
        expected = f"{fmt(scores)} 或能广播到它的形状（分数的形状：q 的批次维 + (T_q, T_k)）"
        raise shape_error("mask", expected, mask.shape, hint)


def check_lengths(lengths: Tensor, max_len: int) -> None:
    """检查 padding_mask 的输入：lengths 是 (B,) 的整数张量，值在 0..max_len 之间。"""
    max_len = check_int("max_len", max_len)
    check_tensor("lengths", lengths)
    if lengths.dim() != 1:
        raise shape_error("lengths", "(B,)，每个序列一个长度", lengths.shape)
    if lengths.dtype == torch.bool or lengths.is_floating_point() or lengths.is_complex():
        raise ValueError(f"lengths 应为整数张量，收到 dtype={lengths.dtype}")
    if lengths.numel() and (lengths.min() < 0 or lengths.max() > max_len):
        raise ValueError(
            f"lengths 的每个值应在 0 到 max_len = {max_len} 之间，收到 {lengths.tolist()}："
            "比 max_len 长的部分不在张量里，掩码会漏掉它"
        )


if __name__ == "__main__":
    torch.manual_seed(0)
    B, T, d_k = 2, 4, 8
    q, k, v = torch.randn(B, T, d_k), torch.randn(B, T, d_k), torch.randn(B, T, d_k)

    out, w = scaled_dot_product_attention(q, k, v, mask=causal_mask(T))
    print("输出形状:", tuple(out.shape), " 权重形状:", tuple(w.shape))
    print("第 0 个样本的因果注意力权重（上三角应为 0）:")
    print(w[0].round(decimals=3))
    print("每行权重之和:", w[0].sum(dim=-1).round(decimals=6).tolist())

    # 填充掩码形状为 (B, 1, 1, T)，要配合 (B, 头数, T, d_k) 的四维输入，这里只有 1 个头
    lengths = torch.tensor([4, 2])
    q4, k4, v4 = q[:, None], k[:, None], v[:, None]  # (B, 1, T, d_k)
    _, w_pad = scaled_dot_product_attention(q4, k4, v4, mask=padding_mask(lengths, T))
    print("第 1 个样本真实长度为 2，后两列是填充位置，权重应为 0:")
    print(w_pad[1, 0].round(decimals=3))

    # 三维的 q 直接配 (B, 1, 1, T) 的填充掩码，广播会得到 (B, B, T, T)：函数会报错，而不是悄悄算错
    try:
        scaled_dot_product_attention(q, k, v, mask=padding_mask(lengths, T))
    except ValueError as e:
        print("三维 q 配四维填充掩码:", e)
