"""形状检查的小工具，code/ 里的函数都用它们检查输入。

形状不对时抛出 ValueError，消息里写明是哪个参数、应当是什么形状、实际收到了什么。
这样做是因为 PyTorch 的广播很「宽容」：形状对不上时它常常不报错，而是悄悄算出一个形状更大、
内容错误的结果。用的是 raise 而不是 assert：python -O 会跳过 assert，检查就没了。
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import torch
from torch import Tensor


def fmt(shape: Sequence[int]) -> str:
    """把形状写成 (2, 5, 8) 的样子，比 torch.Size([2, 5, 8]) 好读。"""
    return str(tuple(int(s) for s in shape))


def shape_error(name: str, expected: str, got: Sequence[int], hint: str = "") -> ValueError:
    """生成一条统一格式的错误：参数名、应有的形状、收到的形状，再加一句怎么改。"""
    message = f"{name} 的形状应为 {expected}，收到 {fmt(got)}"
    return ValueError(f"{message}。{hint}" if hint else message)


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """shape 能否广播到 target，并且不把 target 变大（维数不增加，每一维也不增加）。"""
    try:
        return tuple(torch.broadcast_shapes(tuple(shape), tuple(target))) == tuple(target)
    except RuntimeError:
        return False


def check_tensor(name: str, t: object) -> None:
    """t 必须是 torch.Tensor。"""
    if not isinstance(t, Tensor):
        raise ValueError(f"{name} 应为 torch.Tensor，收到 {type(t).__name__}")


def check_int(name: str, value: object, minimum: int = 0) -> int:
    """value 必须是不小于 minimum 的整数（Python int 或只含一个整数的张量），返回这个整数。"""
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} 应为整数，收到 {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} 应为不小于 {minimum} 的整数，收到 {number}")
    return number


def check_positive(name: str, value: float) -> None:
    """value 必须是正数（例如位置编码的底数 base）。"""
    if not value > 0:
        raise ValueError(f"{name} 应为正数，收到 {value!r}")


def check_float(name: str, t: Tensor) -> None:
    """t 必须是浮点张量（整数张量做不了 softmax、三角函数之类的运算）。"""
    check_tensor(name, t)
    if not t.is_floating_point():
        raise ValueError(f"{name} 应为浮点张量，收到 dtype={t.dtype}；可以先用 {name}.float() 转换")


def check_same_dtype(name: str, t: Tensor, ref_name: str, ref_dtype: torch.dtype) -> None:
    """t 的 dtype 必须与 ref_dtype 相同，否则矩阵乘法会报一条难懂的错。"""
    if t.dtype != ref_dtype:
        raise ValueError(f"{name} 的 dtype 应与 {ref_name} 相同（{ref_dtype}），收到 {t.dtype}")


def check_bool_mask(name: str, mask: Tensor) -> None:
    """掩码必须是 bool 张量，True 表示屏蔽。"""
    check_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} 应为 bool 张量（True 表示屏蔽），收到 dtype={mask.dtype}。"
            f"0/1 掩码请先用 {name}.bool() 转换，并确认 1 表示屏蔽；"
            "这里不接受 PyTorch 那种加到分数上的浮点掩码"
        )


def check_btd(name: str, x: Tensor, d_model: int) -> None:
    """x 必须是 (B, T, d_model) 的三维浮点张量。"""
    check_float(name, x)
    expected = f"(B, T, d_model)，其中 d_model = {d_model}"
    if x.dim() != 3:
        hint = f"只有一条序列时请先加上批次维：{name}[None]" if x.dim() == 2 else ""
        raise shape_error(name, expected, x.shape, hint)
    if x.size(-1) != d_model:
        raise shape_error(name, expected, x.shape, f"最后一维 {x.size(-1)} 与 d_model = {d_model} 不一致")
