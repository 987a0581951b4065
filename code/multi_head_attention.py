"""多头注意力：把 d_model 维拆成 n_heads 个头，各自做缩放点积注意力后再拼回。

形状不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import torch
from attention import causal_mask, padding_mask, scaled_dot_product_attention
from shapes import broadcasts_to, check_bool_mask, check_btd, check_int, check_same_dtype, fmt, shape_error
from torch import Tensor, nn


# --8<-- [start:mha]
class MultiHeadAttention(nn.Module):
    """多头自注意力。输入 x: (B, T, d_model)，输出形状相同。"""

    def __init__(self, d_model: int, n_heads: int, bias: bool = True) -> None:
        super().__init__()
        check_head_split(d_model, n_heads)  # d_model 须能被 n_heads 整除
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # 一次算出 Q、K、V
        self.out = nn.Linear(d_model, d_model, bias=bias)  # 拼接各头后的输出投影

    def forward(
        self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False,
        key_padding_mask: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """x: (B, T, d_model)。两种掩码都是 bool 张量，True 为屏蔽，可以同时传：

        mask: 所有样本共用的 (T, T)（如因果掩码），或能广播到 (B, n_heads, T, T) 的四维张量；
        key_padding_mask: (B, T)，标出每个序列的填充位置，与 nn.MultiheadAttention 的同名参数相同。
        二维的 mask 一律当作 (T, T)，填充位置请传给 key_padding_mask。
        need_weights 时另返回各头权重 (B, n_heads, T, T)。
        """
        check_mha_inputs(self, x, mask, key_padding_mask)  # 形状不对就报错，见文件末尾
        B, T, d_model = x.shape
        if key_padding_mask is not None:  # (B, T) -> (B, 1, 1, T)：广播到所有头和查询位置
            pad = key_padding_mask[:, None, None, :]
            mask = pad if mask is None else mask | pad
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


# ---------- 形状检查：不在文章里展示，形状不对时给出看得懂的错误 ----------


def check_head_split(d_model: int, n_heads: int) -> None:
    """d_model 和 n_heads 是正整数，且 d_model 能被 n_heads 整除。"""
    check_int("d_model", d_model, minimum=1)
    check_int("n_heads", n_heads, minimum=1)
    if d_model % n_heads != 0:
        raise ValueError(
            f"d_model = {d_model} 应能被 n_heads = {n_heads} 整除：每个头分到 d_model / n_heads 维，"
            f"{d_model} / {n_heads} 不是整数"
        )


def check_mha_inputs(
    mha: MultiHeadAttention, x: Tensor, mask: Tensor | None, key_padding_mask: Tensor | None
) -> None:
    """检查 MultiHeadAttention.forward 的输入，出错时抛出 ValueError。"""
    check_btd("x", x, mha.d_model)
    check_same_dtype("x", x, "模型参数", mha.qkv.weight.dtype)
    B, T = x.shape[:2]
    if mask is not None:
        check_bool_mask("mask", mask)
        expected = f"(T, T) = {fmt((T, T))}，或能广播到 (B, n_heads, T, T) = {fmt((B, mha.n_heads, T, T))} 的四维张量"
        if mask.dim() == 2 and tuple(mask.shape) != (T, T):
            hint = "二维的 mask 是所有样本共用的 (T, T)"
            if tuple(mask.shape) == (B, T):
                hint += "；这看起来是每个序列的填充位置 (B, T)，请传给 key_padding_mask"
            raise shape_error("mask", expected, mask.shape, hint)
        if mask.dim() == 3:
            raise shape_error("mask", expected, mask.shape,
                              "三维掩码的第一维是样本还是头说不清，请写成四维，例如 (B, 1, T, T) 或 (1, n_heads, T, T)")
        if mask.dim() not in (2, 3, 4) or (mask.dim() == 4 and not broadcasts_to(mask.shape, (B, mha.n_heads, T, T))):
            raise shape_error("mask", expected, mask.shape)
    if key_padding_mask is not None:
        check_bool_mask("key_padding_mask", key_padding_mask)
        if tuple(key_padding_mask.shape) != (B, T):
            raise shape_error("key_padding_mask", f"(B, T) = {fmt((B, T))}，每个序列的填充位置为 True",
                              key_padding_mask.shape)


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

    # 批次里两个序列的真实长度是 5 和 3：填充位置用 key_padding_mask 标出，形状 (B, T)
    lengths = torch.tensor([5, 3])
    key_padding_mask = padding_mask(lengths, T)[:, 0, 0, :]  # (B, 1, 1, T) -> (B, T)
    with torch.no_grad():
        _, w = mha(x, mask=causal_mask(T), key_padding_mask=key_padding_mask, need_weights=True)
    print("第 1 个样本（长度 3）、第 0 个头，因果掩码加填充掩码，后两列应为 0:")
    print(w[1, 0].round(decimals=3))
    try:
        mha(x, mask=key_padding_mask)  # (B, T) 的掩码传错了参数
    except ValueError as e:
        print("把 (B, T) 的填充掩码传给 mask:", e)
