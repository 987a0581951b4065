"""在自己的唐诗模型上跑 GRPO：每步取几组藏头，每组采样一批诗，验证器打分，组内比较，更新策略。

一步的流程（train_grpo 的循环）：
1. 从训练集的藏头里取 P 组，每组按温度 T 采样 G 首诗（rollout）；
2. 验证器给每首打分（reward）：默认 = 对上的句首数 / 4 + 0.25 × 格式正确；
3. 组内归一化得到优势（code/grpo.py 的 group_advantages）；
4. 当前策略、参考模型（出发时的模型，冻住）各算一遍每个词元的对数概率，用 grpo_loss 求损失，走一步。

每批样本只走一步梯度，所以采样时的策略就是当前策略：比率 ρ 在这一步恒为 1，截断不起作用，
梯度和 REINFORCE 加基线相同（再加 KL 惩罚）。多走几步（PPO 那样）时截断才会起作用。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from acrostic import POEM_TOKENS, acrostic_prompt, check_heads_list, check_tokenizer
from capable_sft import capable_model
from evaluation import (
    check_temperature_generator,
    evaluate_model,
    held_out_heads,
    model_comparison,
    plain_rates,
    revive_rates,
    sample_poems,
)
from grpo import group_advantages, grpo_loss
from lora_train import finetuned_model, finetuning
from shapes import check_int, check_tensor, fmt
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer
from torch import Tensor
from verifiers import verify

REWARDS = ("heads+form", "form")  # 奖励的两种写法：正常的，和只看格式的「坏奖励」（用来演示钻奖励的空子）


# --8<-- [start:settings]
@dataclass
class GRPOSettings:
    """GRPO 的超参数。"""

    steps: int = 60  # 每步约 0.75 CPU 秒（单线程）：60 步不到一分钟
    prompts: int = 8  # 每步几组藏头（P）
    group: int = 8  # 每组采样几首（G）：组内互相比较
    temperature: float = 1.0  # 采样的温度：太低时一组诗几乎一样，优势全是 0
    lr: float = 1e-3
    beta: float = 0.02  # KL 惩罚的系数；0 表示不拉住策略
    clip: float = 0.2  # PPO 的截断范围（每批只走一步时不起作用，见文件开头）
    max_grad_norm: float = 1.0
    per_sequence: bool = True  # True：GRPO 原文的逐条平均；False：Dr. GRPO 的写法
    reward: str = "heads+form"
    seed: int = 0
# --8<-- [end:settings]


@dataclass
class GRPOHistory:
    """每步一个数：这一批的平均奖励、平均句首命中数（0–4）、格式正确的比例、到参考模型的 KL（k3，逐词元平均）、
    回答的平均长度（词元，含结尾的换行），以及优势全为 0（一组分数全同）的组数。"""

    reward: list[float] = field(default_factory=list)
    heads: list[float] = field(default_factory=list)
    form: list[float] = field(default_factory=list)
    kl: list[float] = field(default_factory=list)
    length: list[float] = field(default_factory=list)
    flat_groups: list[int] = field(default_factory=list)


# --8<-- [start:reward]
def reward(heads: str, text: str, kind: str = "heads+form") -> float:
    """验证器的分数就是奖励。heads+form：句首对上几个算几分（每个 1/4），格式对再加 0.25；form：只看格式。"""
    check_reward_kind(kind)
    v = verify(heads, text)  # code/verifiers.py：格式、句首、押韵
    if kind == "form":
        return float(v.form)
    return v.heads / 4 + 0.25 * v.form
# --8<-- [end:reward]


@dataclass
class Rollout:
    """一批采样的结果。tokens (B, T_prompt + N)：提示接回答；mask (B, T_prompt + N)：回答里到第一个换行
    （含）为止的词元；texts：解码到第一个换行为止的诗；prompt_len：提示的词元数（各条相同）。"""

    tokens: Tensor
    mask: Tensor
    texts: list[str]
    prompt_len: int


# --8<-- [start:rollout]
@torch.no_grad()
def rollout(model: TinyTransformer, tok: CharTokenizer, heads: Sequence[str], group: int, temperature: float,
            generator: torch.Generator, max_new_tokens: int = POEM_TOKENS) -> Rollout:
    """每组藏头采样 group 首（同一组的 group 首排在一起）。"""
    check_rollout_args(model, tok, heads, group, temperature, generator, max_new_tokens)
    s = sample_poems(model, tok, heads, group, temperature, generator, chunk=len(heads) * group,
                     max_new_tokens=max_new_tokens)  # code/evaluation.py：评测用的同一个采样
    prompts = torch.tensor([tok.encode(acrostic_prompt(h)) for h in heads]).repeat_interleave(group, dim=0)
    tokens = torch.cat([prompts, s.tokens], dim=1)
    mask = torch.cat([torch.zeros_like(prompts, dtype=torch.bool), s.mask], dim=1)  # 提示不算回答
    return Rollout(tokens, mask, s.texts, prompts.size(1))
# --8<-- [end:rollout]


# --8<-- [start:token-logps]
def token_log_probs(model: torch.nn.Module, tokens: Tensor) -> Tensor:
    """tokens (B, T) 里每个词元在模型下的对数概率 (B, T)；第 0 个词元没有谁预测它，记为 0。"""
    check_token_args(model, tokens)
    logits = model(tokens[:, :-1]).float()  # 第 t 个位置预测第 t+1 个词元
    picked = logits.log_softmax(dim=-1).gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)
    return torch.cat([torch.zeros_like(picked[:, :1]), picked], dim=1)
# --8<-- [end:token-logps]


# --8<-- [start:train]
def train_grpo(start: TinyTransformer, tok: CharTokenizer, train_heads: Sequence[str], s: GRPOSettings,
               on_step: Callable[[int, TinyTransformer], None] | None = None
               ) -> tuple[TinyTransformer, GRPOHistory]:
    """从 start 出发（复制一份来训练；start 本身冻住当参考模型），跑 s.steps 步 GRPO。"""
    check_train_args(start, tok, train_heads, s)
    torch.manual_seed(s.seed)
    policy, ref = copy.deepcopy(start), start
    ref.eval()
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr)
    gen = torch.Generator().manual_seed(s.seed)  # 取哪几组藏头、采样，都由它决定
    history = GRPOHistory()
    for step in range(s.steps):
        picks = torch.randint(0, len(train_heads), (s.prompts,), generator=gen).tolist()
        heads = [train_heads[i] for i in picks]
        batch = rollout(policy, tok, heads, s.group, s.temperature, gen)
        rewards = torch.tensor([reward(heads[i // s.group], t, s.reward) for i, t in enumerate(batch.texts)])
        advantages = group_advantages(rewards.view(s.prompts, s.group)).flatten()  # 和组里的兄弟比
        policy.train()
        logps = token_log_probs(policy, batch.tokens)
        with torch.no_grad():
            ref_logps = token_log_probs(ref, batch.tokens)
        old_logps = logps.detach()  # 每批只走一步：采样时的策略就是现在的策略
        loss = grpo_loss(logps, old_logps, ref_logps, advantages, batch.mask, beta=s.beta, clip=s.clip,
                         per_sequence=s.per_sequence)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), s.max_grad_norm)
        opt.step()
        policy.eval()
        record(history, batch, heads, s, rewards, logps.detach(), ref_logps)
        if on_step is not None:
            on_step(step + 1, policy)
    return policy, history
# --8<-- [end:train]


def record(history: GRPOHistory, batch: Rollout, heads: list[str], s: GRPOSettings, rewards: Tensor,
           logps: Tensor, ref_logps: Tensor) -> None:
    """把这一步的几个数记进 history（见 GRPOHistory）。"""
    verdicts = [verify(heads[i // s.group], t) for i, t in enumerate(batch.texts)]
    diff = torch.where(batch.mask, ref_logps - logps, 0.0)
    kl = (diff.exp() - diff - 1).sum() / batch.mask.sum()
    groups = rewards.view(s.prompts, s.group)
    history.reward.append(rewards.mean().item())
    history.heads.append(sum(v.heads for v in verdicts) / len(verdicts))
    history.form.append(sum(v.form for v in verdicts) / len(verdicts))
    history.kl.append(kl.item())
    history.length.append(batch.mask.sum().item() / batch.mask.size(0))
    history.flat_groups.append(int((groups.max(dim=1).values == groups.min(dim=1).values).sum()))


# --8<-- [start:runs]
# 四次 GRPO：出发的模型 × 奖励。capable：《评测》一文里学会了藏头的 SFT 模型（种子 0）；
# weak：第二阶段只训练了 80 步的全参数 SFT（只学会了格式和句首的先验）；form-only：只奖励格式、不要 KL 的「坏奖励」
RUNS = {
    "capable-0": ("capable", GRPOSettings(seed=0)),
    "capable-1": ("capable", GRPOSettings(seed=1)),  # 同样出发，换一个种子：看结果有多稳
    "weak": ("weak", GRPOSettings(seed=0)),
    "form-only": ("capable", GRPOSettings(seed=0, reward="form", beta=0.0)),
}
# --8<-- [end:runs]
STARTS = {"capable": "capable-0", "weak": "full"}  # 出发的模型在《评测》一文的比较里叫什么
BUILD_ARTIFACTS = {"grpo-runs": ("grpo_runs", "save_grpo_runs")}
GRPO_ENV = "LLM_ARTIFACT_GRPO_RUNS"


def start_model(start: str) -> tuple[TinyTransformer, CharTokenizer]:
    """出发的模型：capable 是 capable_sft 种子 0 的模型，weak 是第二阶段的全参数 SFT。"""
    if start not in STARTS:
        raise ValueError(f"start 应是 {'、'.join(STARTS)} 之一，收到 {start!r}")
    return capable_model(0) if start == "capable" else finetuned_model(finetuning(verbose=False), "full")


def grpo_runs() -> dict[str, Any]:
    """RUNS 里的每一次 GRPO：训练记录、在验证集藏头上的成绩（和《评测》一文同样的评估）、训练后的参数。

    出发时的成绩直接取《评测》一文的比较结果（同一个模型、同一套评估），不再算一遍。"""
    before = model_comparison(verbose=False)
    runs: dict[str, Any] = {}
    for name, (start, s) in RUNS.items():
        model, tok = start_model(start)
        train_heads, held, _ = held_out_heads(tok)
        policy, history = train_grpo(model, tok, train_heads, s)
        runs[name] = {"start": start, "settings": asdict(s), "history": asdict(history),
                      "after": evaluate_model(policy, tok, held), "state": policy.state_dict()}
    return {"runs": runs, "before": {start: before["runs"][key] for start, key in STARTS.items()},
            "heads": before["heads"], "train_head_sets": before["train_head_sets"]}


def save_grpo_runs(path: str | Path, result: dict[str, Any]) -> None:
    """存下 grpo_runs() 的结果（成绩里的 Rate 存成整数对；不存用时：同样的输入得到同样的文件）。"""
    check_runs_result(result)
    torch.save(plain_rates(result), path)


def load_grpo_runs(path: str | Path) -> dict[str, Any]:
    """读回 save_grpo_runs 存的文件。"""
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise ValueError(f"path 应是 save_grpo_runs 存下的文件，但找不到 {path!r}")
    result = revive_rates(torch.load(path, weights_only=True))
    check_runs_result(result)
    return result


def grpo_results(verbose: bool = True) -> dict[str, Any]:
    """grpo_runs() 的结果：构建网站时缓存了的就直接读取，没有就现场训练（约 4 分钟）。"""
    path = os.environ.get(GRPO_ENV)
    if path and Path(path).is_file():
        return load_grpo_runs(path)
    if verbose:
        print("没有现成的结果，现场跑四次 GRPO（没有缓存的 SFT 模型时先训练它们）……")
    return grpo_runs()


def policy_model(result: dict[str, Any], name: str) -> tuple[TinyTransformer, CharTokenizer]:
    """按结果重建一次 GRPO 训练后的模型（name 取 RUNS 的名字）。"""
    check_runs_result(result)
    if name not in result["runs"]:
        raise ValueError(f"name 应是 {'、'.join(result['runs'])} 之一，收到 {name!r}")
    model, tok = start_model(result["runs"][name]["start"])
    model.load_state_dict(result["runs"][name]["state"])
    model.eval()
    return model, tok


# ---------- 参数检查：不在文章里展示 ----------


RESULT_KEYS = ("runs", "before", "heads", "train_head_sets")
RUN_KEYS = ("start", "settings", "history", "after", "state")


def check_runs_result(result: object) -> None:
    source = "grpo_runs() 或 load_grpo_runs(path) 的返回值"
    if not isinstance(result, dict) or any(key not in result for key in RESULT_KEYS):
        hint = "；存下的文件请先用 load_grpo_runs(path) 读回" if isinstance(result, (str, Path)) else ""
        raise ValueError(f"result 应是 {source}：一个含 {'、'.join(RESULT_KEYS)} 的字典{hint}")
    runs = result["runs"]
    if not isinstance(runs, dict) or not runs:
        raise ValueError("result['runs'] 应是「名字 → 一次 GRPO 的结果」的非空字典")
    for name, run in runs.items():
        if not isinstance(run, dict) or any(key not in run for key in RUN_KEYS):
            raise ValueError(f"result['runs'][{name!r}] 应含 {'、'.join(RUN_KEYS)}")


def check_reward_kind(kind: object) -> None:
    if kind not in REWARDS:
        raise ValueError(f"奖励的写法应是 {'、'.join(REWARDS)} 之一，收到 {kind!r}")


def check_model(model: object) -> None:
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer（例如微调好的唐诗 GPT），收到 {type(model).__name__}")


def check_pair(model: object, tok: object) -> None:
    check_model(model)
    check_tokenizer(tok)
    if model.cfg.vocab_size != tok.vocab_size:
        raise ValueError(f"模型的词表大小 {model.cfg.vocab_size} 和分词器的 {tok.vocab_size} 不同：不是配套的一对")
    if "\n" not in tok.char_to_id:
        raise ValueError("分词器的词表里没有换行：GRPO 靠换行判断一首诗写完了")


def check_rollout_args(model: object, tok: object, heads: object, group: object, temperature: object,
                       generator: object, max_new_tokens: object) -> None:
    check_pair(model, tok)
    if isinstance(heads, str) or not isinstance(heads, Sequence) or not heads:
        raise ValueError("heads 应是藏头的非空列表，例如 ['春夏秋冬']（一个字符串也要放进列表）")
    check_heads_list(list(heads), tok)
    check_int("group", group, minimum=2)  # 一组至少两首才能互相比较
    check_temperature_generator(temperature, generator)  # code/evaluation.py：和评测的采样同一个检查
    check_int("max_new_tokens", max_new_tokens, minimum=1)


def check_token_args(model: object, tokens: object) -> None:
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model 应为 torch.nn.Module，收到 {type(model).__name__}")
    check_tensor("tokens", tokens)
    if tokens.dim() != 2 or tokens.size(1) < 2 or tokens.size(0) == 0:
        raise ValueError(f"tokens 的形状应为 (B, T)，B ≥ 1、T ≥ 2（提示接回答），收到 {fmt(tokens.shape)}")
    if tokens.dtype != torch.long:
        raise ValueError(f"tokens 应是词元编号（torch.long），收到 {tokens.dtype}")


def check_positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or math.isinf(value) \
            or value <= 0:
        raise ValueError(f"{name} 应为有限的正数，收到 {value!r}")


def check_settings(s: object) -> None:
    if not isinstance(s, GRPOSettings):
        raise ValueError(f"s 应为 GRPOSettings，收到 {type(s).__name__}")
    check_int("steps", s.steps, minimum=1)
    check_int("prompts", s.prompts, minimum=1)
    check_int("group", s.group, minimum=2)
    check_int("seed", s.seed)
    for name in ("temperature", "lr", "max_grad_norm"):
        check_positive(name, getattr(s, name))
    for name in ("beta", "clip"):
        value = getattr(s, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
            raise ValueError(f"{name} 应为不小于 0 的有限数，收到 {value!r}")
    if not s.clip < 1:
        raise ValueError(f"clip 应小于 1（比率限制在 [1 − clip, 1 + clip]），收到 {s.clip}")
    if not isinstance(s.per_sequence, bool):
        raise ValueError(f"per_sequence 应为 True 或 False，收到 {s.per_sequence!r}")
    check_reward_kind(s.reward)


def check_train_args(start: object, tok: object, train_heads: object, s: object) -> None:
    check_settings(s)
    check_pair(start, tok)
    if isinstance(train_heads, str) or not isinstance(train_heads, Sequence) or not train_heads:
        raise ValueError("train_heads 应是训练用的藏头列表（非空），例如 build_sft_data(训练集的诗, tok).heads")
    check_heads_list(list(train_heads), tok)


if __name__ == "__main__":
    # 只看奖励怎么算：同一组藏头的三首「诗」
    for text in ("春风吹柳绿，夏日照荷红。秋月明千里，冬雪满长空。", "春风吹柳绿，山日照荷红。", "春风吹柳绿"):
        print(f"{reward('春夏秋冬', text):.2f}  {reward('春夏秋冬', text, 'form'):.0f}  {text}")
