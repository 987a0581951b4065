"""code/tiled_attention.py：分块注意力和在线 softmax，与 PyTorch 的 scaled_dot_product_attention 逐项对照。

序列长、块长（整除与不整除序列长、比序列还长）、查询块长、因果与否、float64 与 float32 都试一遍；
记录下来的 m、l 和手算的整行最大值、指数和对照；存储的计数和真正算出的最大分数块对照。
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from tiled_attention import TileTrace, attention_memory, online_softmax_steps, tiled_attention

REPO = Path(__file__).resolve().parents[2]
LENGTHS = (1, 7, 64, 100)
TILES = (1, 3, 16, 33, 64)


def qkv(T: int, dtype: torch.dtype, seed: int = 0, batch: tuple[int, ...] = (2, 3), d: int = 16):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*batch, T, d, generator=gen, dtype=dtype) for _ in range(3))


@pytest.mark.parametrize("T", LENGTHS)
@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("query_block", [None, "same"])
def test_equals_sdpa_float64(T, tile, causal, query_block) -> None:
    q, k, v = qkv(T, torch.float64, seed=T + tile)
    out = tiled_attention(q, k, v, tile, causal=causal, query_block=tile if query_block == "same" else None)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert (out - ref).abs().max().item() < 1e-12


@pytest.mark.parametrize("T", LENGTHS)
@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("causal", [False, True])
def test_equals_sdpa_float32(T, tile, causal) -> None:
    q, k, v = qkv(T, torch.float32, seed=T * tile)
    out = tiled_attention(q, k, v, tile, causal=causal, query_block=tile)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert out.dtype == torch.float32
    assert (out - ref).abs().max().item() < 1e-6


def test_cross_attention_with_different_lengths_and_value_size() -> None:
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(2, 9, 8, generator=gen, dtype=torch.float64)
    k = torch.randn(2, 20, 8, generator=gen, dtype=torch.float64)
    v = torch.randn(2, 20, 5, generator=gen, dtype=torch.float64)
    out = tiled_attention(q, k, v, 6, query_block=4)
    assert out.shape == (2, 9, 5)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v), atol=1e-12, rtol=0)


def test_large_scores_do_not_overflow() -> None:
    """分数上千时 exp 会溢出（float64 里 exp 过了 709 就是 inf）；减去运行最大值之后不会。

    float64 里和 PyTorch 的结果只差舍入。float32 里分数上千，每个分数本身只准到约 1e-4，两种实现各有各的舍入
    （哪一位不同还随 CPU 的指令集变），所以和 float64 的精确结果比：分块的误差不超过 PyTorch 自己 float32 误差的 2 倍。
    """
    q, k, v = qkv(40, torch.float64, seed=7)
    q, k = q * 30, k * 30
    assert ((q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])).abs().max() > 709  # 不减最大值，exp 就溢出
    exact = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out = tiled_attention(q, k, v, 8, causal=True)
    assert torch.isfinite(out).all()
    assert (out - exact).abs().max() < 1e-12
    q32, k32, v32 = q.float(), k.float(), v.float()
    out32 = tiled_attention(q32, k32, v32, 8, causal=True)
    assert torch.isfinite(out32).all()
    ours = (out32.double() - exact).abs().max().item()
    theirs = (F.scaled_dot_product_attention(q32, k32, v32, is_causal=True).double() - exact).abs().max().item()
    assert ours <= 2 * theirs + 1e-6, (ours, theirs)


def test_trace_ends_with_the_row_max_and_sum() -> None:
    """最后一块之后，m 是整行分数的最大值，l 是 Σ exp(s - m)：按定义另算一遍。"""
    q, k, v = qkv(23, torch.float64, seed=1, batch=(2,))
    trace = TileTrace()
    tiled_attention(q, k, v, 5, trace=trace)
    assert [b[2:] for b in trace.blocks] == [(0, 5), (5, 10), (10, 15), (15, 20), (20, 23)]
    s = q @ k.transpose(-2, -1) / math.sqrt(16)
    m = s.amax(dim=-1)
    assert torch.allclose(trace.m[-1], m, atol=1e-12, rtol=0)
    assert torch.allclose(trace.l[-1], torch.exp(s - m[..., None]).sum(dim=-1), atol=1e-12, rtol=0)
    # m 不减；m 不变的那一步，l 不减
    for (m0, l0), (m1, l1) in zip(zip(trace.m, trace.l, strict=True), zip(trace.m[1:], trace.l[1:], strict=True),
                                  strict=False):
        assert (m1 >= m0).all()
        assert (l1[m1 == m0] >= l0[m1 == m0]).all()


@pytest.mark.parametrize(("T", "tile"), [(100, 32), (100, 7), (64, 16), (50, 1)])
def test_causal_skips_the_blocks_above_the_diagonal(T, tile) -> None:
    """查询和键都每 tile 个一块：第 i 块查询只需要第 0..i 块键，n 块里算 n(n+1)/2 块。"""
    q, k, v = qkv(T, torch.float64, batch=(1,))
    trace = TileTrace()
    tiled_attention(q, k, v, tile, causal=True, query_block=tile, trace=trace)
    n = math.ceil(T / tile)
    assert len(trace.blocks) == n * (n + 1) // 2
    assert trace.skipped == n * n - n * (n + 1) // 2


@pytest.mark.parametrize(("T", "tile", "query_block"), [(100, 32, None), (100, 32, 32), (64, 100, None), (9, 4, 2)])
def test_memory_count_is_what_the_loop_holds(T, tile, query_block) -> None:
    d = 8
    q, k, v = qkv(T, torch.float64, batch=(1,), d=d)
    trace = TileTrace()
    tiled_attention(q, k, v, tile, query_block=query_block, trace=trace)
    mem = attention_memory(T, d, tile, query_block)
    assert trace.largest_scores == mem["tile_scores"]
    br = T if query_block is None else query_block
    assert mem["tiled"] == mem["tile_scores"] + 2 * br + br * d
    assert mem["full"] == T * T


def test_memory_numbers() -> None:
    assert attention_memory(32768, 64, 64) == {"full": 2**30, "tiled": 32768 * 64 * 2 + 2 * 32768,
                                               "tile_scores": 32768 * 64}
    assert attention_memory(4096, 64, 64, 64)["tiled"] == 64 * 64 + 128 + 64 * 64


def test_online_softmax_steps_by_hand() -> None:
    """[1, 3, 0.5, 4, 2]，每块 2 个：m = 3, 4, 4；l 按换算公式手算。"""
    s = torch.tensor([1.0, 3.0, 0.5, 4.0, 2.0], dtype=torch.float64)
    steps = online_softmax_steps(s, 2)
    assert [st["stop"] for st in steps] == [2, 4, 5]
    assert [st["m"] for st in steps] == [3.0, 4.0, 4.0]
    l1 = math.exp(-2) + 1
    l2 = l1 * math.exp(-1) + math.exp(-3.5) + 1
    l3 = l2 + math.exp(-2)
    assert [st["l"] for st in steps] == pytest.approx([l1, l2, l3], abs=1e-12)
    assert [st["alpha"] for st in steps] == pytest.approx([0.0, math.exp(-1), 1.0])
    assert torch.allclose(steps[-1]["weights"], torch.softmax(s, -1), atol=1e-15, rtol=0)
    assert steps[0]["weights"][2:].eq(0).all()


@pytest.mark.parametrize("causal", [False, True])
def test_works_on_the_device_of_q(causal: bool) -> None:
    """out、m、l、acc 和位置都建在 q 所在的设备上（以前建在 CPU 上，CUDA 的输入会出错）。
    这里用 meta 设备代替 GPU：只有形状、没有数，不是 CPU，在没有 GPU 的机器上也能试。"""
    q, k, v = (torch.empty(2, 3, 10, 8, device="meta", dtype=torch.float16) for _ in range(3))
    trace = TileTrace()
    out = tiled_attention(q, k, v[..., :5], 4, causal=causal, query_block=3, trace=trace)
    assert out.device.type == "meta" and out.dtype == torch.float16 and out.shape == (2, 3, 10, 5)
    assert all(m.device.type == "meta" for m in trace.m + trace.l)


def test_q_k_v_must_share_a_device() -> None:
    q, k, v = qkv(4, torch.float32)
    with pytest.raises(ValueError, match="同一个设备"):
        tiled_attention(q, k.to("meta"), v, 2)
    with pytest.raises(ValueError, match="同一个设备"):
        tiled_attention(q.to("meta"), k.to("meta"), v, 2)


@pytest.mark.parametrize(("call", "words"), [
    (lambda: tiled_attention(*qkv(4, torch.float64), 0), "tile_size"),
    (lambda: tiled_attention(*qkv(4, torch.float64), 2, query_block=0), "query_block"),
    (lambda: tiled_attention(torch.randn(4), torch.randn(4), torch.randn(4), 2), "(..., T, d)"),
    (lambda: tiled_attention(torch.randn(3, 8), torch.randn(5, 4), torch.randn(5, 4), 2), "k"),
    (lambda: tiled_attention(torch.randn(3, 8), torch.randn(5, 8), torch.randn(4, 8), 2), "v"),
    (lambda: tiled_attention(torch.randn(3, 8), torch.randn(5, 8), torch.randn(5, 8), 2, causal=True), "T_q"),
    (lambda: tiled_attention(torch.randn(3, 8), torch.randn(3, 8).double(), torch.randn(3, 8), 2), "dtype"),
    (lambda: tiled_attention(torch.ones(3, 8, dtype=torch.long), torch.randn(3, 8), torch.randn(3, 8), 2), "浮点"),
    (lambda: tiled_attention(torch.randn(2, 3, 8), torch.randn(4, 3, 8), torch.randn(4, 3, 8), 2), "前面的维"),
    (lambda: tiled_attention(*qkv(4, torch.float64), 2, causal=1), "causal"),
    (lambda: attention_memory(0, 64, 64), "T"),
    (lambda: online_softmax_steps(torch.randn(3, 4), 2), "scores"),
])
def test_bad_input_raises_a_readable_error(call, words) -> None:
    with pytest.raises(ValueError) as info:
        call()
    assert words in str(info.value)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_keeps_its_statistics_in_float32(dtype) -> None:
    """bfloat16 / float16 的输入：分数、m、l、累加和都按 float32 算，只有输出转回输入的 dtype（真正的算子也这样）。
    误差因此和把精确结果舍入到这个 dtype 差不多。以前全按输入的 dtype 累加：bfloat16 时 T = 1024、每块 16 个，
    误差是舍入误差的十倍上下（7.5e-3 对 7.1e-4）。"""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 1024, 64, generator=gen).to(dtype) for _ in range(3))
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double())
    trace = TileTrace()
    out = tiled_attention(q, k, v, 16, trace=trace)
    assert out.dtype == dtype
    assert trace.m[0].dtype == trace.l[0].dtype == torch.float32
    rounding = (exact.to(dtype).double() - exact).abs().max().item()
    assert (out.double() - exact).abs().max().item() <= 2 * rounding


@pytest.mark.parametrize(("T", "tile"), [(100, 10), (100, 7), (64, 16), (5, 1), (9, 4)])
def test_only_blocks_across_the_diagonal_are_masked(T, tile) -> None:
    """查询和键都每 tile 个一块：只有对角线上的块跨过对角线、要掩码，而且只在块里至少有两个位置时（只有一个位置的
    那块，唯一的键就是查询自己，看得见）；对角线下方的整块不用（以前每个算了的块都掩码）。"""
    q, k, v = qkv(T, torch.float64, batch=(1,))
    trace = TileTrace()
    out = tiled_attention(q, k, v, tile, causal=True, query_block=tile, trace=trace)
    n = math.ceil(T / tile)
    diagonal_with_two_or_more = sum(1 for q0 in range(0, T, tile) if min(q0 + tile, T) - q0 >= 2)
    assert trace.masked == diagonal_with_two_or_more and len(trace.blocks) == n * (n + 1) // 2
    assert (out - F.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max() < 1e-12


def test_masking_with_queries_all_at_once() -> None:
    """所有查询一块（从第 0 个查询开始）时，每块键里都有排在第 0 个查询之后的键：4 块都要掩码，一块也不能跳过。"""
    q, k, v = qkv(10, torch.float64, batch=(1,))
    trace = TileTrace()
    tiled_attention(q, k, v, 3, causal=True, trace=trace)
    assert trace.masked == len(trace.blocks) == 4


def test_empty_batch_or_value_size_gives_an_empty_result() -> None:
    """批次是 0 条、或值向量是 0 维：结果是形状对的空张量，和 PyTorch 一样。"""
    for shapes in (((0, 3, 4), (0, 3, 4), (0, 3, 4)), ((1, 3, 4), (1, 3, 4), (1, 3, 0))):
        q, k, v = (torch.randn(*s) for s in shapes)
        for causal in (False, True):
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            assert tiled_attention(q, k, v, 2, causal=causal).shape == ref.shape


def test_online_softmax_steps_accepts_masked_keys_after_the_first_block() -> None:
    """被屏蔽的键写成 -inf：只要第一块里有能看的键，结果就是 softmax，被屏蔽的权重是 0。"""
    s = torch.tensor([1.0, 2.0, -math.inf, -math.inf, 0.5], dtype=torch.float64)
    steps = online_softmax_steps(s, 2)
    assert torch.allclose(steps[-1]["weights"], torch.softmax(s, -1), atol=1e-15, rtol=0)
    assert steps[1]["weights"][2:4].eq(0).all()


@pytest.mark.parametrize(("call", "words"), [
    (lambda: tiled_attention(3.0, torch.randn(3, 4), torch.randn(3, 4), 2), "q 应为 torch.Tensor"),
    (lambda: tiled_attention(*qkv(4, torch.float64), "2"), "tile_size 应为整数"),
    (lambda: tiled_attention(*qkv(4, torch.float64), 2.0), "tile_size 应为整数"),
    (lambda: tiled_attention(*qkv(4, torch.float64), 2, query_block=2.0), "query_block 应为整数"),
    (lambda: tiled_attention(*qkv(4, torch.float64), 2, causal=None), "causal 应是 True 或 False"),
    (lambda: tiled_attention(torch.randn(1, 0, 4), torch.randn(1, 0, 4), torch.randn(1, 0, 4), 2), "至少要有一个位置"),
    (lambda: tiled_attention(torch.randn(1, 3, 0), torch.randn(1, 3, 0), torch.randn(1, 3, 4), 2), "至少是 1"),
    (lambda: tiled_attention(*qkv(4, torch.float64), 2, trace=[]), "trace 应是 TileTrace()"),
    (lambda: attention_memory("4", 64, 64), "T 应为整数"),
    (lambda: attention_memory(4, 64, 64, 0), "query_block 应为不小于 1"),
    (lambda: online_softmax_steps(3.0, 2), "scores 应为 torch.Tensor"),
    (lambda: online_softmax_steps(torch.tensor([1, 2, 3]), 2), "scores 应为浮点张量"),
    (lambda: online_softmax_steps(torch.tensor([]), 2), "scores 的形状应为 (T,)"),
    (lambda: online_softmax_steps(torch.randn(3), "2"), "tile_size 应为整数"),
    (lambda: online_softmax_steps(torch.tensor([math.nan, 1.0]), 1), "NaN 或 +inf"),
    (lambda: online_softmax_steps(torch.tensor([math.inf, 1.0]), 1), "NaN 或 +inf"),
    (lambda: online_softmax_steps(torch.tensor([-math.inf, -math.inf, 1.0]), 2), "第一块的分数全是 -inf"),
])
def test_careless_input_gets_a_readable_error(call, words) -> None:
    """以前：d = 0 是 ZeroDivisionError，trace=[] 是 AttributeError，NaN 和整块 -inf 悄悄得到 NaN。"""
    with pytest.raises(ValueError) as info:
        call()
    assert words in str(info.value)


def test_runs_on_its_own() -> None:
    out = subprocess.run([sys.executable, str(REPO / "code" / "tiled_attention.py")], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert "scaled_dot_product_attention" in out and "最后的权重" in out
