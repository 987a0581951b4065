"""缩放点积注意力与两种常用掩码（因果掩码、填充掩码）。

约定：掩码是 bool 张量，True 表示“屏蔽”——该位置不允许被关注。
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


# --8<-- [start:sdpa]
def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor,
    mask: Tensor | None = None, scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    """计算 softmax(q k^T * scale) v，返回 (输出, 注意力权重)。

    q: (..., T_q, d_k)，k: (..., T_k, d_k)，v: (..., T_k, d_v)。
    mask: 可广播到 (..., T_q, T_k) 的 bool 张量，True 表示屏蔽。
    scale: 默认 1/sqrt(d_k)；传入 1.0 即不缩放。
    整行都被屏蔽的查询（例如批次里的填充位置）得到全 0 权重和全 0 输出，不会产生 NaN。
    """
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
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=1)
# --8<-- [end:causal-mask]


# --8<-- [start:padding-mask]
def padding_mask(lengths: Tensor, max_len: int) -> Tensor:
    """填充掩码 (B, 1, 1, max_len)：每个序列超出真实长度的键位置为 True。

    两个长度为 1 的维度分别留给“注意力头”和“查询位置”做广播。
    """
    positions = torch.arange(max_len, device=lengths.device)  # (max_len,)
    mask = positions[None, :] >= lengths[:, None]  # (B, max_len)
    return mask[:, None, None, :]
# --8<-- [end:padding-mask]


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
