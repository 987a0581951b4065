"""code/inference_cost.py：存法（WeightFormat）的检查、两种数法（bits_per_weight 与 matrix_bytes）是否一致，
以及粗心的输入（类型、范围）得到看得懂的 ValueError 或正确的结果。字节数、算术强度本身的测试在 test_quantize.py。
"""

from __future__ import annotations

import math

import pytest
import torch
from inference_cost import (
    FORMATS,
    WeightFormat,
    cost_table,
    decode_cost,
    llama_matrices,
    matrix_bytes,
    ridge_point,
    tang_matrices,
    tokens_per_second_bound,
)
from llama import LLAMA2_7B

# ---------- 浮点格式不带缩放因子（以前 WeightFormat("x", 16, group_size=32) 被接受，两种数法不一致） ----------


@pytest.mark.parametrize("bits", [16, 32])
def test_float_formats_refuse_a_group_size(bits) -> None:
    """以前：bits_per_weight() 说 17（或 33）比特，matrix_bytes 却按 16（32）比特数，两边悄悄不一致。"""
    with pytest.raises(ValueError, match=f"{bits} 比特是浮点格式，不带缩放因子，group_size 应为 None"):
        WeightFormat("x", bits, group_size=32)


@pytest.mark.parametrize("bits", [9, 12, 15, 17, 24, 64, 1000])
def test_bits_are_an_integer_format_or_fp16_or_fp32(bits) -> None:
    """以前 12、64、1000 比特都被接受：12 比特按带缩放因子的整数格式数，64 比特按浮点格式数，没有一种是真的。"""
    with pytest.raises(ValueError, match="bits 应为 1 到 8（带缩放因子的整数格式）或 16、32"):
        WeightFormat("x", bits)


@pytest.mark.parametrize("fmt", [*(f for f in FORMATS if f.group_size is not None or f.bits >= 16),
                                 WeightFormat("int4-g128", 4, group_size=128, scale_bytes=2),
                                 WeightFormat("int3-g64", 3, group_size=64),
                                 WeightFormat("int2-g16", 2, group_size=16)])
def test_bits_per_weight_agrees_with_matrix_bytes(fmt) -> None:
    """有组大小（或是浮点格式）时，平均每个权重的比特数 × 权重个数 = matrix_bytes 数出的字节 × 8。
    （每行一个缩放因子的 int8 不在这里：摊到每个权重上是多少要看 d_in，bits_per_weight 不算它，见下一个测试。）"""
    shapes = [(256, 512), (128, 1024)]
    n = sum(o * i for o, i in shapes)
    assert matrix_bytes(shapes, fmt) * 8 == fmt.bits_per_weight() * n


def test_per_channel_scales_are_counted_by_matrix_bytes() -> None:
    int8 = WeightFormat("int8", 8)
    assert matrix_bytes([(3, 100)], int8) == 300 + 3 * 4
    assert int8.bits_per_weight() == 8  # 每行一个的缩放因子不在这里，文档字符串说了


# ---------- 粗心的输入：看得懂的 ValueError ----------


@pytest.mark.parametrize(("call", "words"), [
    (lambda: WeightFormat(4, 4), "name 应是非空的字符串"),
    (lambda: WeightFormat("int4", "4"), "bits 应为整数"),
    (lambda: WeightFormat("int4", True), "bits 应为整数"),
    (lambda: WeightFormat("int4", 4, group_size="32"), "group_size 应为 None"),
    (lambda: WeightFormat("int4", 4, group_size=True), "group_size 应为 None"),
    (lambda: WeightFormat("int4", 4, group_size=32, scale_bytes=2.0), "scale_bytes 应为整数"),
    (lambda: matrix_bytes(((4, 4),), FORMATS[0]), "shapes 应是 [(d_out, d_in), ...] 的非空列表"),
    (lambda: matrix_bytes([[4, 4]], FORMATS[0]), "shapes[0] 应是 (d_out, d_in) 两个整数"),
    (lambda: matrix_bytes([(4.0, 4)], FORMATS[0]), "shapes[0] 的 d_out 应为整数"),
    (lambda: matrix_bytes([(4, 0)], FORMATS[0]), "shapes[0] 的 d_in 应为不小于 1"),
    (lambda: matrix_bytes([(4, 4)], "fp16"), "fmt 应为 WeightFormat"),
    (lambda: decode_cost([(4, 4)], FORMATS[0], "2"), "batch_size 应为整数"),
    (lambda: decode_cost([(4, 4)], FORMATS[0], 2.0), "batch_size 应为整数"),
    (lambda: ridge_point("312e12"), "peak_flops 应为有限的正数"),
    (lambda: ridge_point(-1.0), "peak_flops 应为有限的正数"),
    (lambda: ridge_point(float("nan")), "peak_flops 应为有限的正数"),
    (lambda: ridge_point(312e12, torch.tensor(2039e9)), "bandwidth 应为有限的正数"),
    (lambda: tokens_per_second_bound(True), "nbytes 应为有限的正数"),
    (lambda: cost_table(0), "batch_size 应为不小于 1"),
    (lambda: cost_table("1"), "batch_size 应为整数"),
    (lambda: tang_matrices("poem_config(3009)"), "cfg 应为 TinyConfig"),
    (lambda: llama_matrices("LLAMA2_7B"), "cfg 应为 MiniLlamaConfig"),
])
def test_careless_input_gets_a_readable_error(call, words) -> None:
    with pytest.raises(ValueError) as info:
        call()
    assert words in str(info.value)


def test_integer_tensors_count_as_integers() -> None:
    """只含一个整数的张量（例如从配置里取出的 torch.tensor(4096)）当作整数，结果和写 Python 整数时相同。"""
    assert matrix_bytes([(torch.tensor(8), torch.tensor(64))], FORMATS[3]) == matrix_bytes([(8, 64)], FORMATS[3])
    assert decode_cost([(8, 64)], FORMATS[1], torch.tensor(3))["flops"] == 2 * 3 * 8 * 64


def test_the_tables_formats_and_bytes_still_hold() -> None:
    """FORMATS 的四种存法都通过了检查；Llama 2 7B 按 fp16 是每个权重 2 字节（第一行的数不变）。"""
    n = sum(o * i for o, i in llama_matrices(LLAMA2_7B))
    assert matrix_bytes(llama_matrices(LLAMA2_7B), FORMATS[1]) == 2 * n
    assert math.isclose(ridge_point(), 312e12 / 2039e9)
