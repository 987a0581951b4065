"""《现代的块：RMSNorm、SwiGLU、RoPE 与 GQA》的配套代码。

单独运行本文件会打印一个小例子：python code/llama_block.py
"""

from __future__ import annotations

import torch
from torch import Tensor


# --8<-- [start:main]
def main_idea(x: Tensor) -> Tensor:
    """在这里实现文章讲解的核心计算。模板示例：对最后一维做 softmax。"""
    shifted = x - x.max(dim=-1, keepdim=True).values  # 先减去最大值，数值更稳定
    weights = shifted.exp()
    return weights / weights.sum(dim=-1, keepdim=True)
# --8<-- [end:main]


if __name__ == "__main__":
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    y = main_idea(x)
    print("输入：", x.tolist())
    print("输出：", y.round(decimals=4).tolist())
    print("每行之和：", y.sum(dim=-1).tolist())
