"""多头注意力：把 d_model 维拆成 n_heads 个头，各自做缩放点积注意力后再拼回。"""

from __future__ import annotations

import torch
from attention import causal_mask, scaled_dot_product_attention
from torch import Tensor, nn


# --8<-- [start:mha]
class MultiHeadAttention(nn.Module):
    """多头自注意力。输入 x: (B, T, d_model)，输出形状相同。"""

    def __init__(self, d_model: int, n_heads: int, bias: bool = True) -> None:
        super().__init__()
        assert d_model % n_heads == 0, f"d_model={d_model} 须能被 n_heads={n_heads} 整除"
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # 一次算出 Q、K、V
        self.out = nn.Linear(d_model, d_model, bias=bias)  # 拼接各头后的输出投影

    def forward(
        self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]:
        """mask 可广播到 (B, n_heads, T, T)，True 为屏蔽；need_weights 时另返回各头权重。"""
        B, T, d_model = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)  # 各 (B, T, d_model)
        # 拆头：(B, T, d_model) -> (B, T, n_heads, d_head) -> (B, n_heads, T, d_head)
        q, k, v = (t.view(B, T, self.n_heads, self.d_head).transpose(1, 2)
                   for t in (q, k, v))
        y, weights = scaled_dot_product_attention(q, k, v, mask=mask)  # (B, n_heads, T, d_head)
        # 合头：transpose 只改步长、不搬数据，结果在内存中不连续；
        # view 要求内存连续，所以先用 contiguous() 复制成连续的一块
        y = y.transpose(1, 2).contiguous().view(B, T, d_model)
        y = self.out(y)
        return (y, weights) if need_weights else y
# --8<-- [end:mha]


if __name__ == "__main__":
    torch.manual_seed(0)
    B, T, d_model, n_heads = 2, 5, 16, 4
    mha = MultiHeadAttention(d_model, n_heads)
    x = torch.randn(B, T, d_model)

    with torch.no_grad():
        y, w = mha(x, mask=causal_mask(T), need_weights=True)
    print("输入形状:", tuple(x.shape), " 输出形状:", tuple(y.shape))
    print("注意力权重形状 (B, 头数, T, T):", tuple(w.shape))
    print("第 0 个样本、第 0 个头的因果注意力权重:")
    print(w[0, 0].round(decimals=3))
    n_params = sum(p.numel() for p in mha.parameters())
    expected = 4 * d_model**2 + 4 * d_model
    print(f"参数量: {n_params}（4 * d_model^2 + 4 * d_model = {expected}）")
