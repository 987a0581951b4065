"""偏好对齐的损失：一条提示、两个回答，一个更好（chosen），一个更差（rejected）。

RLHF（InstructGPT）先用偏好对训练一个奖励模型，再用强化学习让模型追求奖励，同时用 KL 惩罚拴住它别离开 SFT 模型太远。
DPO（Rafailov 等，2023）证明：这个带 KL 约束的目标的最优解可以直接写出来，奖励就藏在策略和参考模型的对数概率之比里，
r(x, y) = β·log(π(y|x) / π_ref(y|x)) + 与 y 无关的项。把它代进 Bradley–Terry 偏好模型
P(y_w ≻ y_l) = σ(r_w − r_l)，就得到只需要对数概率的损失：不用奖励模型，也不用采样。

这里的函数只管「一批对数概率 → 损失」，和模型无关；completion_log_probs 从模型算出这些对数概率。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from shapes import check_tensor, fmt
from torch import Tensor


# --8<-- [start:logps]
def completion_log_probs(logits: Tensor, tokens: Tensor, completion_mask: Tensor) -> Tensor:
    """每条序列里「回答」部分的对数概率之和 (B,)。

    logits (B, T, V) 是模型读 tokens 得到的输出，第 t 个位置预测第 t+1 个词元；tokens (B, T) 是提示接回答；
    completion_mask (B, T) 在回答的词元上为 True（提示和补齐的位置为 False）。
    """
    check_logps_args(logits, tokens, completion_mask)
    log_probs = logits[:, :-1].float().log_softmax(dim=-1)
    picked = log_probs.gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)  # (B, T-1)：每个词元的对数概率
    keep = completion_mask[:, 1:]  # 第一个词元没有谁预测它
    return torch.where(keep, picked, 0.0).sum(dim=-1)  # 用 where 而不是乘法：被屏蔽处即使是 -inf 也不会变成 NaN
# --8<-- [end:logps]


# --8<-- [start:dpo]
def dpo_loss(chosen: Tensor, rejected: Tensor, ref_chosen: Tensor, ref_rejected: Tensor,
             beta: float = 0.1) -> Tensor:
    """DPO 的损失（一批的平均）。四个参数都是 (B,)：策略和参考模型给好回答、差回答的对数概率。

    隐含的奖励 r = β·(log π − log π_ref)；损失 = −log σ(r_好 − r_差)：好回答的奖励比差回答高得越多，损失越小。
    """
    check_pair_args(chosen, rejected, ref_chosen, ref_rejected, beta)
    margin = (chosen - ref_chosen) - (rejected - ref_rejected)  # 两个对数概率比之差
    return -F.logsigmoid(beta * margin).mean()
# --8<-- [end:dpo]


# --8<-- [start:ipo]
def ipo_loss(chosen: Tensor, rejected: Tensor, ref_chosen: Tensor, ref_rejected: Tensor, beta: float,
             chosen_lengths: Tensor, rejected_lengths: Tensor) -> Tensor:
    """IPO（Azar 等，2023）：把对数概率比之差拉向一个固定的间隔 1/(2β)，而不是像 DPO 那样无限推大。

    对数概率比先除以回答的词元数（每个词元平均），这样损失不随回答长短变化。
    """
    check_pair_args(chosen, rejected, ref_chosen, ref_rejected, beta)
    check_lengths(chosen, chosen_lengths, rejected_lengths)
    margin = (chosen - ref_chosen) / chosen_lengths - (rejected - ref_rejected) / rejected_lengths
    return ((margin - 1 / (2 * beta)) ** 2).mean()
# --8<-- [end:ipo]


# ------------------------------------------------------------------ 参数检查


def check_logps_args(logits: object, tokens: object, completion_mask: object) -> None:
    for name, t in (("logits", logits), ("tokens", tokens), ("completion_mask", completion_mask)):
        check_tensor(name, t)
    if logits.dim() != 3:
        raise ValueError(f"logits 的形状应为 (B, T, V)，收到 {fmt(logits.shape)}")
    if tokens.shape != logits.shape[:2]:
        raise ValueError(f"tokens 的形状应为 {fmt(logits.shape[:2])}（和 logits 的前两维相同），"
                         f"收到 {fmt(tokens.shape)}")
    if completion_mask.shape != tokens.shape:
        raise ValueError(f"completion_mask 的形状应和 tokens 相同 {fmt(tokens.shape)}，"
                         f"收到 {fmt(completion_mask.shape)}")
    if not logits.is_floating_point():
        raise ValueError(f"logits 应为浮点张量，收到 {logits.dtype}")
    if tokens.dtype != torch.long:
        raise ValueError(f"tokens 应为 torch.long（int64）的词元编号，收到 {tokens.dtype}：用 tokens.long() 转换")
    if completion_mask.dtype != torch.bool:
        raise ValueError(f"completion_mask 应为 torch.bool，收到 {completion_mask.dtype}：用 mask.bool() 转换")
    if logits.size(1) < 2:
        raise ValueError("序列至少要有 2 个词元：一个提示词元，一个回答词元")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= logits.size(-1)):
        raise ValueError(f"tokens 里的编号应在 0 到 {logits.size(-1) - 1} 之间（词表大小 {logits.size(-1)}）")


def check_pair_args(chosen: object, rejected: object, ref_chosen: object, ref_rejected: object, beta: object) -> None:
    names = ("chosen", "rejected", "ref_chosen", "ref_rejected")
    for name, t in zip(names, (chosen, rejected, ref_chosen, ref_rejected), strict=True):
        check_tensor(name, t)
        if t.dim() != 1 or t.numel() == 0:
            raise ValueError(f"{name} 的形状应为 (B,)，B ≥ 1：每个偏好对一个对数概率，收到 {fmt(t.shape)}")
        if t.shape != chosen.shape:
            raise ValueError(f"{name} 的形状 {fmt(t.shape)} 应和 chosen 的 {fmt(chosen.shape)} 相同")
        if not t.is_floating_point():
            raise ValueError(f"{name} 应为浮点张量（对数概率），收到 {t.dtype}")
    if isinstance(beta, bool) or not isinstance(beta, int | float) or not beta > 0:
        raise ValueError(f"beta 应为正数，收到 {beta!r}")


def check_lengths(chosen: Tensor, *lengths: object) -> None:
    for name, t in zip(("chosen_lengths", "rejected_lengths"), lengths, strict=True):
        check_tensor(name, t)
        if t.shape != chosen.shape:
            raise ValueError(f"{name} 的形状应为 {fmt(chosen.shape)}（每个偏好对一个长度），收到 {fmt(t.shape)}")
        if not (t > 0).all():
            raise ValueError(f"{name} 应都是正数：每个回答至少一个词元")


if __name__ == "__main__":
    # 两个偏好对：策略刚从参考模型复制来时，两者的对数概率相同，DPO 的损失是 ln 2 ≈ 0.6931
    ref_good, ref_bad = torch.tensor([-20.0, -35.0]), torch.tensor([-22.0, -30.0])
    print(f"策略 = 参考模型：DPO 损失 {dpo_loss(ref_good, ref_bad, ref_good, ref_bad).item():.4f}")
    # 策略把好回答的对数概率各提高 2、差回答各降低 2：隐含奖励之差 = β·4，损失变小
    better = dpo_loss(ref_good + 2, ref_bad - 2, ref_good, ref_bad, beta=0.1).item()
    print(f"好回答 +2、差回答 −2（β = 0.1）：DPO 损失 {better:.4f}")
