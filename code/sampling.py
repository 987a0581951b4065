"""从 logits 选出下一个词元：贪心、温度、top-k、top-p，以及重复惩罚。

模型在最后一个位置输出 logits (B, V)：词表里每个词元一个分数。这里的函数只管「拿到分数之后怎么选」，
和模型是什么结构无关。约定：被过滤掉的词元，logit 改成 -inf，softmax 之后概率严格为 0。
参数或形状不对时函数抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math

import torch
from shapes import check_float, check_int, check_tensor, shape_error
from torch import Tensor


# --8<-- [start:temperature]
def apply_temperature(logits: Tensor, temperature: float) -> Tensor:
    """logits / T。T < 1 让分布更尖，T > 1 让分布更平，T = 1 不变；词元之间的大小顺序永远不变。

    logits: (..., V)。T 必须大于 0：T 趋于 0 的极限是贪心解码，请直接用 greedy()。
    """
    check_logits(logits)
    check_temperature(temperature)
    return logits / temperature
# --8<-- [end:temperature]


# --8<-- [start:top-k]
def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """只保留分数最高的 k 个词元，其余的 logit 改成 -inf。logits: (..., V)，返回形状相同。

    与第 k 名分数相同的词元一起保留（所以可能多于 k 个）：并列的词元谁排在前面是任意的，
    这样结果不取决于排序的偶然。k 不小于 V 时全部保留。
    """
    check_logits(logits)
    k = check_int("k", k, minimum=1)
    if k >= logits.size(-1):
        return logits.clone()
    kth = logits.topk(k, dim=-1).values[..., -1:]  # 第 k 名的分数，(..., 1)
    return logits.masked_fill(logits < kth, float("-inf"))
# --8<-- [end:top-k]


# --8<-- [start:top-p]
def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """top-p（核采样）：按概率从高到低取词元，取到累计概率第一次达到 p 为止，其余的 logit 改成 -inf。

    logits: (..., V)，返回形状相同；0 < p <= 1。一个词元被保留，当且仅当比它概率更高的那些词元
    加起来还不到 p——所以概率最高的词元总会留下，跨过 p 的那一个也留下，与它概率相同的词元一起留下。
    p = 1 时全部保留。
    """
    check_logits(logits)
    check_top_p(p)
    if p >= 1.0:
        return logits.clone()
    probs = torch.softmax(logits, dim=-1)
    sorted_probs, _ = probs.sort(dim=-1, descending=True)
    # 排在每个词元前面的概率之和（不含它自己）：累加和整体右移一位
    ahead = torch.cat([torch.zeros_like(sorted_probs[..., :1]), sorted_probs.cumsum(dim=-1)[..., :-1]], dim=-1)
    n_keep = (ahead < p).sum(dim=-1, keepdim=True)  # 至少为 1：第一个词元前面是 0
    smallest_kept = sorted_probs.gather(-1, n_keep - 1)  # 留下的词元里最小的概率
    return logits.masked_fill(probs < smallest_kept, float("-inf"))
# --8<-- [end:top-p]


# --8<-- [start:penalty]
def apply_repetition_penalty(logits: Tensor, previous: Tensor, penalty: float) -> Tensor:
    """重复惩罚：前文出现过的词元，正的 logit 除以 penalty，负的乘以 penalty。

    CTRL 论文的原始写法是一律除以 penalty；负的分数除以它反而变大，所以这里按正负号分开处理。

    logits: (B, V)；previous: (B, T) 的整数张量，已经出现过的词元（提示和已生成的部分）。
    penalty > 1 压低重复，= 1 不变。出现一次和出现十次受到同样的惩罚。
    """
    check_penalty_args(logits, previous, penalty)
    seen = logits.gather(-1, previous)  # 出现过的词元的分数 (B, T)，重复出现的会取到同一个值
    seen = torch.where(seen > 0, seen / penalty, seen * penalty)
    return logits.scatter(-1, previous, seen)
# --8<-- [end:penalty]


# --8<-- [start:sample]
def next_token_probs(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
                     top_p: float | None = None) -> Tensor:
    """按 温度 → top-k → top-p 的顺序处理 logits (..., V)，返回最终用来采样的概率分布 (..., V)。

    被过滤掉的词元概率为 0，留下的按各自的概率重新归一化（softmax 自动做到这一点）。
    """
    logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return torch.softmax(logits, dim=-1)


def sample(logits: Tensor, generator: torch.Generator | None = None, temperature: float = 1.0,
           top_k: int | None = None, top_p: float | None = None) -> Tensor:
    """从 next_token_probs 给出的分布里，每行抽一个词元。logits: (B, V)，返回 (B,) 的词元编号。

    generator 是 torch.Generator：同一个种子抽出同样的结果，便于复现。
    """
    check_batch_logits(logits)
    check_generator(generator)
    probs = next_token_probs(logits, temperature, top_k, top_p)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)


def greedy(logits: Tensor) -> Tensor:
    """贪心解码：每行取分数最高的词元。logits: (B, V)，返回 (B,)；并列时取编号最小的那个。"""
    check_batch_logits(logits)
    return logits.argmax(dim=-1)
# --8<-- [end:sample]


# ---------- 参数检查：不在文章里展示，输入不对时给出看得懂的错误 ----------


def check_logits(logits: Tensor) -> None:
    """logits 是至少一维的浮点张量 (..., V)，V >= 1，不含 NaN，每行至少有一个有限的分数。"""
    check_float("logits", logits)
    if logits.dim() == 0 or logits.size(-1) == 0:
        raise shape_error("logits", "(..., V)，最后一维是词表，V 至少为 1", logits.shape)
    if torch.isnan(logits).any():
        raise ValueError("logits 里有 NaN：先检查模型的输出（例如除以 0、溢出）")
    if logits.numel() and (logits == float("-inf")).all(dim=-1).any():
        raise ValueError("logits 的某一行全是 -inf：至少要留一个词元可选")


def check_batch_logits(logits: Tensor) -> None:
    """sample、greedy 的输入：(B, V)。"""
    check_logits(logits)
    if logits.dim() != 2:
        hint = "只有一行时请先加上批次维：logits[None]" if logits.dim() == 1 else (
            "模型输出的 (B, T, V) 里，下一个词元只看最后一个位置：logits[:, -1]" if logits.dim() == 3 else "")
        raise shape_error("logits", "(B, V)，每行是一条序列在最后一个位置的分数", logits.shape, hint)


def check_temperature(temperature: float) -> None:
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise ValueError(f"temperature 应为正数，收到 {temperature!r}")
    if not (temperature > 0 and math.isfinite(temperature)):
        hint = "；温度为 0 的极限是贪心解码，请用 greedy()" if temperature == 0 else ""
        raise ValueError(f"temperature 应为有限的正数，收到 {temperature!r}{hint}")


def check_top_p(p: float) -> None:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
        hint = "；p = 0 什么都留不下，只要概率最高的词元请用 greedy()" if p == 0 else ""
        raise ValueError(f"p 应在 0 和 1 之间（0 < p <= 1），收到 {p!r}{hint}")


def check_generator(generator: torch.Generator | None) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator 应为 torch.Generator 或 None，收到 {type(generator).__name__}")


def check_penalty_args(logits: Tensor, previous: Tensor, penalty: float) -> None:
    check_batch_logits(logits)
    check_tensor("previous", previous)
    B, V = logits.shape
    if previous.dim() != 2 or previous.size(0) != B:
        hint = "只有一条序列时请写成 previous[None]" if previous.dim() == 1 else ""
        raise shape_error("previous", f"(B, T)，B = {B} 与 logits 相同", previous.shape, hint)
    if previous.dtype == torch.bool or previous.is_floating_point() or previous.is_complex():
        raise ValueError(f"previous 应为整数张量（词元编号），收到 dtype={previous.dtype}")
    if previous.numel() and (previous.min() < 0 or previous.max() >= V):
        raise ValueError(f"previous 里的词元编号应在 0 到 V - 1 = {V - 1} 之间，"
                         f"收到最小 {int(previous.min())}、最大 {int(previous.max())}")
    if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not (
            penalty > 0 and math.isfinite(penalty)):
        raise ValueError(f"penalty 应为有限的正数（1 表示不惩罚，大于 1 压低重复），收到 {penalty!r}")


if __name__ == "__main__":
    # 一个编出来的例子：5 个候选词元的分数
    words = ["好", "热", "冷", "闷", "晴"]
    logits = torch.tensor([[2.0, 1.5, 0.5, 0.0, -1.0]])
    for t in (0.5, 1.0, 2.0):
        probs = next_token_probs(logits, temperature=t)[0]
        print(f"温度 {t}: " + "  ".join(f"{w} {p:.3f}" for w, p in zip(words, probs.tolist(), strict=True)))
    kept_k = torch.isfinite(top_k_filter(logits, 2))[0]
    kept_p = torch.isfinite(top_p_filter(logits, 0.8))[0]
    print("top-k (k=2) 留下:", [w for w, keep in zip(words, kept_k.tolist(), strict=True) if keep])
    print("top-p (p=0.8) 留下:", [w for w, keep in zip(words, kept_p.tolist(), strict=True) if keep])
    print("贪心:", words[int(greedy(logits)[0])])

    gen = torch.Generator().manual_seed(0)
    draws = sample(logits.expand(10_000, -1), gen)
    freq = torch.bincount(draws, minlength=len(words)) / draws.numel()
    print("抽 10000 次的频率:", [round(f, 3) for f in freq.tolist()])
    print("目标概率:         ", [round(p, 3) for p in next_token_probs(logits)[0].tolist()])

    penalized = apply_repetition_penalty(logits, torch.tensor([[0, 0, 3]]), 1.5)
    print("「好」「闷」出现过，重复惩罚 1.5 之后的分数:", penalized[0].tolist())
    try:
        apply_temperature(logits, 0)
    except ValueError as e:
        print("温度为 0 时:", e)
