"""分块注意力与在线 softmax：不存整张 T × T 的分数矩阵，也能算出一模一样的注意力输出。

普通的写法（code/attention.py）先算出全部分数 S = QKᵀ/√d，(T, T)，再按行 softmax、乘 V。
分块的写法（Rabe 和 Staats，2021 用它省内存；FlashAttention，Dao 等，2022 把它做成少读写显存的 GPU 算子）
把 K、V 按 Bc 个一块依次读进来，每行只记三样东西：
到目前为止见过的最大分数 m、按 m 换算过的指数和 l、按 m 换算过的加权和 acc。
新的一块带来更大的分数时，把旧的 l 和 acc 乘上 exp(m_旧 - m_新) 换算过去，最后 acc / l 就是输出。
这样任何时候只需要一块 (T, Bc) 的分数。这里用 PyTorch 写出这个算法本身，量的是「要存多少个数」；
FlashAttention 真正的加速来自把这些块放在 GPU 的片上存储（SRAM）里算，那要专门写的算子。
形状或参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from shapes import check_float, check_int, check_same_dtype, fmt, shape_error
from torch import Tensor


@dataclass
class TileTrace:
    """分块计算的记录（整个批次、所有头一起算，数的是块的个数）。

    blocks：每次真正算了的 (查询起, 查询止, 键起, 键止)；m、l：那一次之后这一块查询的运行最大值和归一化因子，
    各为 (..., 查询块长)；skipped：因果掩码下整块键都在这块查询的未来、直接跳过的次数；
    masked：因果掩码下跨过对角线、真正做了掩码的块数；
    largest_scores：出现过的最大的分数块有几个元素（一个批次、一个头里）。"""

    blocks: list[tuple[int, int, int, int]] = field(default_factory=list)
    m: list[Tensor] = field(default_factory=list)
    l: list[Tensor] = field(default_factory=list)  # noqa: E741  (论文里就叫 l)
    skipped: int = 0
    masked: int = 0
    largest_scores: int = 0


# --8<-- [start:tiled]
def tiled_attention(q: Tensor, k: Tensor, v: Tensor, tile_size: int, causal: bool = False,
                    query_block: int | None = None, trace: TileTrace | None = None) -> Tensor:
    """softmax(QKᵀ/√d) V，但 K、V 每次只取 tile_size 个位置。q: (..., T_q, d)，k: (..., T_k, d)，v: (..., T_k, d_v)。

    查询按 query_block 个一块分开算（None：所有查询一起，一块）。causal=True 时第 i 个查询只看
    第 0 .. i 个键（要求 T_q = T_k）。传入 trace 会记下每一次之后的 m 和 l。
    """
    check_tiled_args(q, k, v, tile_size, causal, query_block, trace)
    T_q, T_k = q.size(-2), k.size(-2)
    br = T_q if query_block is None else query_block
    scale = 1.0 / math.sqrt(q.size(-1))
    # 分数、m、l、acc 至少用 float32 算，真正的算子也这样：float16 只有约三位有效数字，bfloat16 约两位，逐块累加会失准
    dt = torch.promote_types(q.dtype, torch.float32)
    out = torch.empty(*q.shape[:-1], v.size(-1), dtype=q.dtype, device=q.device)  # 和 q 在同一设备上
    for q0 in range(0, T_q, br):
        q1 = min(q0 + br, T_q)
        qb = q[..., q0:q1, :].to(dt)
        m = torch.full(qb.shape[:-1], -math.inf, dtype=dt, device=q.device)  # 运行最大值，(..., 块长)
        l = torch.zeros(qb.shape[:-1], dtype=dt, device=q.device)  # noqa: E741  运行的指数和
        acc = torch.zeros(*qb.shape[:-1], v.size(-1), dtype=dt, device=q.device)  # 运行的加权和，(..., 块长, d_v)
        rows = torch.arange(q0, q1, device=q.device)[:, None]  # 这块查询的位置
        for k0 in range(0, T_k, tile_size):
            k1 = min(k0 + tile_size, T_k)
            if causal and k0 > q1 - 1:  # 这块键全在这块查询的未来：一个分数都用不上，不用读
                if trace is not None:
                    trace.skipped += 1
                continue
            s = (qb @ k[..., k0:k1, :].to(dt).transpose(-2, -1)) * scale  # 这一块的分数，(..., 块长, 键块长)
            if causal and k1 - 1 > q0:  # 块跨过对角线（有的键在某个查询之后）才要掩码；整块都在对角线下方的不用
                s = s.masked_fill(torch.arange(k0, k1, device=q.device)[None, :] > rows, -math.inf)
                if trace is not None:
                    trace.masked += 1
            m_new = torch.maximum(m, s.amax(dim=-1))  # 见过的最大分数
            # 旧的和按新的最大值换算：exp(s - m_旧) · exp(m_旧 - m_新) = exp(s - m_新)
            alpha = torch.exp(m - m_new)  # 第一块时 m = -inf，alpha = 0
            p = torch.exp(s - m_new[..., None])  # 被屏蔽的分数是 -inf，exp 之后是 0
            l = alpha * l + p.sum(dim=-1)  # noqa: E741
            acc = alpha[..., None] * acc + p @ v[..., k0:k1, :].to(dt)
            m = m_new
            if trace is not None:
                trace.blocks.append((q0, q1, k0, k1))
                trace.m.append(m.clone())
                trace.l.append(l.clone())
                trace.largest_scores = max(trace.largest_scores, s.size(-2) * s.size(-1))
        out[..., q0:q1, :] = acc / l[..., None]  # 因果时第 0 个键谁都看得见，l > 0；写进 out 时转回 q 的 dtype
    return out
# --8<-- [end:tiled]


# --8<-- [start:memory]
def attention_memory(T: int, d: int, tile_size: int, query_block: int | None = None) -> dict[str, int]:
    """一个头、一条长为 T 的序列，算注意力时除了 Q、K、V 和输出之外，同一时刻最多要存多少个数。

    普通写法：整张分数矩阵 T × T（softmax 之后的权重可以原地覆盖它，只算一份）。
    分块写法：一块分数 Br × Bc，加上这块查询每行的 m、l（2 Br 个）和运行的加权和 acc（Br × d）。
    Br 是查询块的长度（None 表示所有查询一起，Br = T）。
    """
    for name, value in (("T", T), ("d", d), ("tile_size", tile_size)):
        check_int(name, value, minimum=1)
    br = T if query_block is None else min(check_int("query_block", query_block, minimum=1), T)
    bc = min(tile_size, T)
    return {"full": T * T, "tiled": br * bc + 2 * br + br * d, "tile_scores": br * bc}
# --8<-- [end:memory]


# --8<-- [start:one-row]
def online_softmax_steps(scores: Tensor, tile_size: int) -> list[dict]:
    """一行分数 (T,) 按块做在线 softmax，每块之后记下：处理到第几个键、m、l，以及「现在就停下」时的权重。

    「现在就停下」的权重是 exp(s - m) / l，只在已经处理过的键上有值，其余是 0；最后一块之后它就是 softmax(scores)。
    """
    check_row(scores, tile_size)
    m, l = -math.inf, 0.0  # noqa: E741
    steps = []
    for start in range(0, scores.numel(), tile_size):
        stop = min(start + tile_size, scores.numel())
        block = scores[start:stop]
        m_new = max(m, block.max().item())
        alpha = math.exp(m - m_new)  # 旧的 l 要乘上的系数（第一块时是 0）
        l = alpha * l + torch.exp(block - m_new).sum().item()  # noqa: E741
        m = m_new
        weights = torch.zeros_like(scores)
        weights[:stop] = torch.exp(scores[:stop] - m) / l
        steps.append({"stop": stop, "m": m, "l": l, "alpha": alpha, "weights": weights})
    return steps
# --8<-- [end:one-row]


# ---------- 参数检查：不在文章里展示，输入不对时给出看得懂的错误 ----------


def check_tiled_args(q: Tensor, k: Tensor, v: Tensor, tile_size: int, causal: bool,
                     query_block: int | None, trace: TileTrace | None) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_float(name, t)
        if t.dim() < 2:
            raise shape_error(name, "(..., T, d)，至少两维", t.shape, "只有一个向量时先加上长度维：x[None]")
    check_same_dtype("k", k, "q", q.dtype)
    check_same_dtype("v", v, "q", q.dtype)
    if not q.device == k.device == v.device:
        raise ValueError(f"q、k、v 应在同一个设备上（中间结果都建在 q 的设备上），"
                         f"收到 {q.device}、{k.device}、{v.device}")
    if k.size(-1) != q.size(-1):
        raise shape_error("k", f"(..., T_k, d)，d 与 q 的最后一维 {q.size(-1)} 相同", k.shape)
    if k.shape[:-1] != v.shape[:-1]:
        raise shape_error("v", f"(..., T_k, d_v)，前面的维与 k 的 {fmt(k.shape[:-1])} 相同", v.shape)
    if q.shape[:-2] != k.shape[:-2]:
        raise shape_error("k", f"批次、头这些前面的维与 q 的 {fmt(q.shape[:-2])} 相同", k.shape)
    if q.size(-2) == 0 or k.size(-2) == 0:
        raise ValueError(f"q、k 至少要有一个位置，收到 q {fmt(q.shape)}、k {fmt(k.shape)}")
    if q.size(-1) == 0:
        raise ValueError(f"q、k 的最后一维（每个头的维度 d）至少是 1，收到 q {fmt(q.shape)}：分数要除以 √d")
    if trace is not None and not isinstance(trace, TileTrace):
        raise ValueError(f"trace 应是 TileTrace()（或者不传），收到 {type(trace).__name__}")
    check_int("tile_size", tile_size, minimum=1)
    if query_block is not None:
        check_int("query_block", query_block, minimum=1)
    if not isinstance(causal, bool):
        raise ValueError(f"causal 应是 True 或 False，收到 {causal!r}")
    if causal and q.size(-2) != k.size(-2):
        raise ValueError(f"causal=True 时要求查询和键一样多（自注意力），收到 T_q = {q.size(-2)}、T_k = {k.size(-2)}")


def check_row(scores: Tensor, tile_size: int) -> None:
    """online_softmax_steps 的参数：一行有限的分数（被屏蔽的可以是 -inf），第一块不能全被屏蔽。"""
    check_float("scores", scores)
    if scores.dim() != 1 or scores.numel() == 0:
        raise shape_error("scores", "(T,)，一个查询对所有键的分数", scores.shape)
    check_int("tile_size", tile_size, minimum=1)
    if torch.isnan(scores).any() or (scores == math.inf).any():
        raise ValueError("scores 里有 NaN 或 +inf：分数应是有限的数（被屏蔽的键可以写成 -inf）")
    if (scores[:tile_size] == -math.inf).all():
        raise ValueError("第一块的分数全是 -inf（整块都被屏蔽）：这时 m = -inf，换算的系数 exp(m - m_新) 是 "
                         "exp(-inf + inf)，得到 NaN。见文章「容易写错的地方」里「整行都被屏蔽」那一条")


if __name__ == "__main__":
    torch.manual_seed(0)
    B, H, T, d = 2, 4, 100, 16
    q, k, v = (torch.randn(B, H, T, d, dtype=torch.float64) for _ in range(3))
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for tile in (7, 32, 100):
            trace = TileTrace()
            out = tiled_attention(q, k, v, tile, causal=causal, query_block=tile, trace=trace)
            print(f"因果掩码 {causal!s:<5} 每块 {tile:>3} 个：算了 {len(trace.blocks)} 块，跳过 {trace.skipped} 块，"
                  f"和 PyTorch 的 scaled_dot_product_attention 最大相差 {(out - ref).abs().max().item():.1e}")
    for T in (1024, 8192, 32768):
        mem = attention_memory(T, d=64, tile_size=64)
        print(f"T = {T:>6}，d = 64，每块 64 个键：整张分数矩阵 {mem['full']:>13,} 个数，"
              f"分块时 {mem['tiled']:>10,} 个数（{mem['full'] / mem['tiled']:.0f} 倍）")
    steps = online_softmax_steps(torch.tensor([1.0, 3.0, 0.5, 4.0, 2.0]), tile_size=2)
    for s in steps:
        print(f"处理到第 {s['stop']} 个键：m = {s['m']:.3f}，l = {s['l']:.4f}，旧的 l 乘了 {s['alpha']:.4f}")
    print("最后的权重：", steps[-1]["weights"].numpy().round(4), " softmax：",
          torch.softmax(torch.tensor([1.0, 3.0, 0.5, 4.0, 2.0]), -1).numpy().round(4))
