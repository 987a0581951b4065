"""GRPO（Shao 等，2024，DeepSeekMath）的两个核心：组内归一化的优势，和带截断比率、KL 惩罚的逐词元损失。

每条提示采样一组（G 条）回答，用验证器给每条打分。一条回答好不好，只和同一组的兄弟比：
优势 A = (r − 组内平均) / (组内标准差 + ε)。这样不需要另训一个价值模型（PPO 需要）来估计「平均能得几分」。
然后沿用 PPO 的截断比率：新旧策略的概率比 ρ 被限制在 [1 − ε, 1 + ε] 里，一步不会走太远；
再加上对参考模型（SFT 模型）的 KL 惩罚，用 DeepSeekMath 的 k3 估计：exp(q − p) − (q − p) − 1，
q、p 是参考模型和策略的对数概率。

这里的函数只管「一批对数概率和奖励 → 优势、损失」，和模型无关。参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import torch
from shapes import check_tensor, fmt
from torch import Tensor


# --8<-- [start:advantages]
def group_advantages(rewards: Tensor, scale: bool = True, eps: float = 1e-4) -> Tensor:
    """rewards (P, G)：P 条提示、每条 G 个回答的奖励。返回同形状的优势：减去组内平均，再除以组内标准差。

    一组回答得分全相同时，标准差是 0，优势全是 0：这组提示这一步什么也学不到。scale=False 时不除标准差（Dr. GRPO）。
    """
    check_rewards(rewards, eps)
    centered = rewards - rewards.mean(dim=1, keepdim=True)
    if not scale:
        return centered
    return centered / (rewards.std(dim=1, keepdim=True) + eps)  # 无偏标准差（除以 G − 1）
# --8<-- [end:advantages]


# --8<-- [start:loss]
def grpo_loss(logps: Tensor, old_logps: Tensor, ref_logps: Tensor, advantages: Tensor, mask: Tensor,
              beta: float = 0.02, clip: float = 0.2, per_sequence: bool = True) -> Tensor:
    """GRPO 的损失。logps、old_logps、ref_logps、mask 都是 (B, T)：每条回答每个词元的对数概率
    （当前策略、采样时的策略、参考模型）和「是回答的词元」；advantages (B,) 每条回答一个。

    per_sequence=True：先在每条回答里对词元求平均，再对回答求平均（GRPO 原文）。这样长回答的每个词元分到的权重更小，
    Dr. GRPO（Liu 等，2025）指出这会带来长度偏差；per_sequence=False 时改为所有词元加起来除以 B·T（Dr. GRPO 的写法）。
    """
    check_grpo_args(logps, old_logps, ref_logps, advantages, mask, beta, clip)
    ratio = torch.exp(logps - old_logps)  # 新旧策略的概率比 ρ
    a = advantages.unsqueeze(1)  # (B, 1)：一条回答的每个词元共用它的优势
    surrogate = torch.min(ratio * a, ratio.clamp(1 - clip, 1 + clip) * a)  # 截断：取更保守的那个
    kl = torch.exp(ref_logps - logps) - (ref_logps - logps) - 1  # k3 估计，总是 ≥ 0
    per_token = -(surrogate - beta * kl)
    per_token = torch.where(mask, per_token, 0.0)
    if per_sequence:
        return (per_token.sum(dim=1) / mask.sum(dim=1).clamp(min=1)).mean()
    return per_token.sum() / mask.numel()
# --8<-- [end:loss]


# ------------------------------------------------------------------ 参数检查


def check_rewards(rewards: object, eps: object) -> None:
    check_tensor("rewards", rewards)
    if rewards.dim() != 2 or rewards.size(0) == 0:
        raise ValueError(f"rewards 的形状应为 (P, G)：P 条提示、每条 G 个回答，收到 {fmt(rewards.shape)}")
    if rewards.size(1) < 2:
        raise ValueError(f"每组至少要有 2 个回答才能互相比较，收到 G = {rewards.size(1)}")
    if not rewards.is_floating_point():
        raise ValueError(f"rewards 应为浮点张量，收到 {rewards.dtype}：用 rewards.float() 转换")
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards 里有 NaN 或无穷大：验证器应给每个回答一个有限的分数")
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not eps > 0:
        raise ValueError(f"eps 应为正数（防止除以 0），收到 {eps!r}")


def check_grpo_args(logps: object, old_logps: object, ref_logps: object, advantages: object, mask: object,
                    beta: object, clip: object) -> None:
    for name, t in (("logps", logps), ("old_logps", old_logps), ("ref_logps", ref_logps), ("mask", mask)):
        check_tensor(name, t)
        if t.dim() != 2 or 0 in t.shape:
            raise ValueError(f"{name} 的形状应为 (B, T)，B、T ≥ 1，收到 {fmt(t.shape)}")
        if t.shape != logps.shape:
            raise ValueError(f"{name} 的形状 {fmt(t.shape)} 应和 logps 的 {fmt(logps.shape)} 相同")
    for name, t in (("logps", logps), ("old_logps", old_logps), ("ref_logps", ref_logps)):
        if not t.is_floating_point():
            raise ValueError(f"{name} 应为浮点张量（对数概率），收到 {t.dtype}")
    if mask.dtype != torch.bool:
        raise ValueError(f"mask 应为 torch.bool，收到 {mask.dtype}：用 mask.bool() 转换")
    check_tensor("advantages", advantages)
    if advantages.shape != logps.shape[:1]:
        raise ValueError(f"advantages 的形状应为 ({logps.size(0)},)：每条回答一个，收到 {fmt(advantages.shape)}")
    for name, value in (("beta", beta), ("clip", clip)):
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"{name} 应为不小于 0 的数，收到 {value!r}")
    if not clip < 1:
        raise ValueError(f"clip 应小于 1（比率限制在 [1 − clip, 1 + clip]），收到 {clip}")


if __name__ == "__main__":
    # 两条提示，各采样 4 个回答，奖励是验证器的分数：第二组全对，优势全是 0，这一组学不到东西
    rewards = torch.tensor([[0.25, 1.0, 0.5, 0.25], [1.0, 1.0, 1.0, 1.0]])
    print("奖励：", rewards.tolist())
    print("优势：", [[round(a, 3) for a in row] for row in group_advantages(rewards).tolist()])
