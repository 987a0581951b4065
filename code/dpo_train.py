"""在自己的藏头诗模型上做偏好对齐：用模型自己写的诗造偏好对，训练奖励模型（RLHF 的第一步），再用 DPO 直接调策略。

流程（dpo_experiment）：
1. 出发点是「学会了」的 SFT 模型（code/capable_sft.py 的 capable_model）；
2. 造偏好对（build_pairs）：训练集的每组藏头，让模型按温度 1 写 n 首，验证器打分（poem_score），
   分数最高的一首当「好回答」（chosen），最低的当「差回答」（rejected）；n 首分数全相同的一组没有高下，丢掉；
3. 奖励模型（RewardModel）：GPT 的主干接一个输出标量的头，按 Bradley–Terry 模型训练：P(好 ≻ 差) = σ(r_好 − r_差)；
   在留出的偏好对上看它排对了几成；
4. DPO（train_dpo）：复制一份 SFT 模型当策略，原模型冻住当参考模型，
   用 code/preference.py 的 dpo_loss（或 ipo_loss）训练；
5. 评估（evaluate_policy）：验证集的藏头（训练时没见过），温度 1 采样和贪心各写一遍，验证器检查句首、格式、押韵。

结果是一个构建产物（BUILD_ARTIFACTS）：构建网站时算一次，图和测试读缓存。实验的三部分互不相干（PARTS：种子 0 的
DPO 和 IPO、种子 0 的 β 扫描、种子 1 的 DPO），构建时各是一个产物、各在自己的进程里算（两个核上并排），再合起来。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import copy
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from acrostic import (
    POEM_TOKENS,
    acrostic_prompt,
    build_sft_data,
    check_heads_list,
    head_hits,
    well_formed,
    write_acrostics,
)
from capable_sft import SEEDS, capable_model
from evaluation import check_model_tok, check_poem_sample_args, sample_poems
from lora_train import poem_lists
from preference import completion_log_probs, dpo_loss, ipo_loss
from shapes import check_int, check_tensor, fmt
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer
from torch import Tensor, nn
from verifiers import Verdict, distinct_share, verify

LOSSES = ("dpo", "ipo")


# --8<-- [start:settings]
@dataclass
class DPOSettings:
    """偏好对、奖励模型、DPO 和评估的超参数。"""

    prompts: int = 768  # 用训练集里多少组藏头造偏好对（随机取，种子 seed）
    samples: int = 4  # 每组藏头采样几首，从中挑最好、最差的一首
    temperature: float = 1.0  # 采样的温度
    held_share: float = 0.2  # 留出这么多偏好对，只用来评估奖励模型和 DPO 的隐含奖励
    loss: str = "dpo"  # "dpo" 或 "ipo"
    beta: float = 0.1  # DPO 的 β：越大，策略越被拴在参考模型附近
    steps: int = 60
    batch_size: int = 32  # 每步几个偏好对
    lr: float = 3e-4
    clip: float = 1.0  # 梯度裁剪
    rm_steps: int = 60  # 奖励模型训练的步数
    rm_lr: float = 1e-3
    eval_samples: int = 2  # 评估时每组验证集藏头按温度 1 采样几首
    seed: int = 0
# --8<-- [end:settings]


# --8<-- [start:score]
def poem_score(heads: str, text: str, rhyme: bool = True) -> float:
    """验证器给一首诗的分数：对上的句首数（0–4）+ 格式对加 0.5 + 押韵再加 0.25。

    藏头是任务本身，所以一个句首（1 分）比格式和押韵加起来（0.75）还重：句首数不同时，永远是句首多的那首更好；
    句首数相同时，格式、押韵才分出高下，这样能用的偏好对更多。押韵只加 0.25：它按今天的读音判断，是有偏差的近似
    （code/verifiers.py），而且格式不对时一定不押韵。rhyme=False 时不查押韵（动手实验用：不装 pypinyin 也能跑）。
    """
    v = judge(heads, text, rhyme)  # 格式、句首、押韵，参数不对时会报错
    return v.heads + 0.5 * v.form + 0.25 * v.rhyme
# --8<-- [end:score]


def judge(heads: str, text: str, rhyme: bool = True) -> Verdict:
    """verifiers.verify；rhyme=False 时不查押韵（押韵一律记作不押），也就用不到 pypinyin 的读音词典。"""
    check_rhyme(rhyme)
    if rhyme:
        return verify(heads, text)  # code/verifiers.py
    return Verdict(form=well_formed(text), heads=head_hits(heads, text), rhyme=False)


@dataclass
class Pairs:
    """偏好对。prompt (N, P)：提示的词元；chosen、rejected (N, C)：好、差回答的词元；chosen_mask、rejected_mask (N, C)：
    回答里算数的词元（到第一个换行为止）。heads、各自的诗和分数每对一项。
    n_prompts：用了几组藏头；ties：其中几组 n 首分数全相同，没有造出偏好对。"""

    prompt: Tensor
    chosen: Tensor
    rejected: Tensor
    chosen_mask: Tensor
    rejected_mask: Tensor
    heads: list[str]
    chosen_text: list[str]
    rejected_text: list[str]
    chosen_score: list[float]
    rejected_score: list[float]
    n_prompts: int
    ties: int

    def __len__(self) -> int:
        return len(self.heads)

    def subset(self, index: Sequence[int]) -> Pairs:
        """其中几个偏好对（index 是编号的列表）。"""
        check_index(index, len(self))
        rows = torch.tensor(list(index), dtype=torch.long)
        pick = lambda xs: [xs[i] for i in index]  # noqa: E731
        return Pairs(self.prompt[rows], self.chosen[rows], self.rejected[rows], self.chosen_mask[rows],
                     self.rejected_mask[rows], pick(self.heads), pick(self.chosen_text), pick(self.rejected_text),
                     pick(self.chosen_score), pick(self.rejected_score), self.n_prompts, self.ties)


# --8<-- [start:pairs]
def build_pairs(model: TinyTransformer, tok: CharTokenizer, heads: Sequence[str], n: int, temperature: float,
                generator: torch.Generator, rhyme: bool = True) -> Pairs:
    """模型自己的诗造偏好对：每组藏头采样 n 首，最高分的当 chosen，最低分的当 rejected；全同分的一组丢掉。"""
    check_poem_sample_args(model, tok, heads, n, temperature, generator, 1, POEM_TOKENS)
    check_rhyme(rhyme)
    if n < 2:
        raise ValueError(f"n 应至少为 2：每组藏头至少要采样两首才比得出好坏，收到 {n}")
    s = sample_poems(model, tok, heads, n, temperature, generator)
    prompt = torch.tensor([tok.encode(acrostic_prompt(h)) for h in heads])
    keep, best, worst, ties = [], [], [], 0
    for i, h in enumerate(heads):
        scores = [poem_score(h, s.texts[i * n + j], rhyme) for j in range(n)]
        if max(scores) == min(scores):
            ties += 1  # n 首一样好（或一样差）：没有偏好可学
            continue
        keep.append(i)
        best.append(i * n + scores.index(max(scores)))  # 并列时取先采到的那首
        worst.append(i * n + scores.index(min(scores)))
    b, w = torch.tensor(best, dtype=torch.long), torch.tensor(worst, dtype=torch.long)
    return Pairs(prompt[keep], s.tokens[b], s.tokens[w], s.mask[b], s.mask[w], [heads[i] for i in keep],
                 [s.texts[j] for j in best], [s.texts[j] for j in worst],
                 [poem_score(heads[i], s.texts[j], rhyme) for i, j in zip(keep, best, strict=True)],
                 [poem_score(heads[i], s.texts[j], rhyme) for i, j in zip(keep, worst, strict=True)], len(heads), ties)
# --8<-- [end:pairs]


def pair_sequences(pairs: Pairs, which: str) -> tuple[Tensor, Tensor]:
    """提示接好回答（which="chosen"）或差回答（"rejected"）：tokens (N, P + C) 和回答的掩码 (N, P + C)。"""
    check_pairs(pairs)
    if which not in ("chosen", "rejected"):
        raise ValueError(f"which 应是 'chosen' 或 'rejected'，收到 {which!r}")
    answer, answer_mask = getattr(pairs, which), getattr(pairs, f"{which}_mask")
    tokens = torch.cat([pairs.prompt, answer], dim=1)
    mask = torch.cat([torch.zeros_like(pairs.prompt, dtype=torch.bool), answer_mask], dim=1)
    return tokens, mask


# --8<-- [start:reward-model]
class RewardModel(nn.Module):
    """奖励模型：一个 GPT 主干（复制 backbone，去掉输出词表的那一层），在回答的最后一个词元上接一个线性层，输出一个数。

    InstructGPT（Ouyang 等，2022）的奖励模型也从 SFT 模型初始化、去掉输出词表的那一层，输出一个标量；
    读在哪个位置是我们的选择：最后一个词元已经看过整个提示和回答。
    """

    def __init__(self, backbone: TinyTransformer) -> None:
        super().__init__()
        if not isinstance(backbone, TinyTransformer):
            raise ValueError(f"backbone 应为 TinyTransformer（例如 SFT 模型），收到 {type(backbone).__name__}")
        self.body = copy.deepcopy(backbone)
        self.body.unembed = nn.Identity()  # 不再输出每个词的分数：body(tokens) 直接给出最后一层的隐状态
        self.head = nn.Linear(backbone.cfg.d_model, 1)

    def forward(self, tokens: Tensor, mask: Tensor) -> Tensor:
        """tokens (B, T)：提示接回答；mask (B, T)：回答的词元。返回每条的奖励 (B,)：读在回答的最后一个词元上。"""
        check_sequences(tokens, mask)
        hidden = self.body(tokens)  # (B, T, d_model)
        last = mask.size(1) - 1 - mask.flip(1).int().argmax(dim=1)  # 每行最后一个为 True 的位置
        return self.head(hidden[torch.arange(tokens.size(0)), last]).squeeze(-1)


def reward_model_loss(r_chosen: Tensor, r_rejected: Tensor) -> Tensor:
    """Bradley–Terry：P(好 ≻ 差) = σ(r_好 − r_差)，损失是它的负对数，对一批求平均。"""
    check_rewards(r_chosen, r_rejected)
    return -F.logsigmoid(r_chosen - r_rejected).mean()
# --8<-- [end:reward-model]


@dataclass
class RewardHistory:
    """奖励模型每步的损失和这一批的排序准确率（好回答的奖励比差回答高的比例）。"""

    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)


@torch.no_grad()
def pair_accuracy(rm: RewardModel, pairs: Pairs) -> float:
    """奖励模型在这些偏好对上排对的比例：r_好 > r_差。"""
    if not isinstance(rm, RewardModel):
        raise ValueError(f"rm 应为 RewardModel，收到 {type(rm).__name__}")
    check_pairs(pairs)
    rm.eval()
    r_c, r_r = rm(*pair_sequences(pairs, "chosen")), rm(*pair_sequences(pairs, "rejected"))
    return (r_c > r_r).float().mean().item()


# --8<-- [start:train-reward]
def train_reward_model(start: TinyTransformer, pairs: Pairs, s: DPOSettings) -> tuple[RewardModel, RewardHistory]:
    """从 start（SFT 模型）初始化奖励模型，在 pairs 上按 Bradley–Terry 训练 s.rm_steps 步。"""
    check_train_args(start, pairs, s)
    torch.manual_seed(s.seed)  # 标量头的初始值
    rm = RewardModel(start)
    opt = torch.optim.AdamW(rm.parameters(), lr=s.rm_lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(s.seed)  # 取哪几对
    chosen, chosen_mask = pair_sequences(pairs, "chosen")
    rejected, rejected_mask = pair_sequences(pairs, "rejected")
    history = RewardHistory()
    rm.train()
    for _ in range(s.rm_steps):
        pick = torch.randint(0, len(pairs), (s.batch_size,), generator=gen)
        r_c, r_r = rm(chosen[pick], chosen_mask[pick]), rm(rejected[pick], rejected_mask[pick])
        loss = reward_model_loss(r_c, r_r)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(rm.parameters(), s.clip)
        opt.step()
        history.loss.append(loss.item())
        history.accuracy.append((r_c > r_r).float().mean().item())
    rm.eval()
    return rm, history
# --8<-- [end:train-reward]


def pair_log_probs(model: TinyTransformer, pairs: Pairs) -> tuple[Tensor, Tensor]:
    """模型给每个偏好对的好回答、差回答的对数概率（回答里每个词元的对数概率之和），各 (N,)。"""
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer，收到 {type(model).__name__}")
    check_pairs(pairs)
    out = []
    for which in ("chosen", "rejected"):
        tokens, mask = pair_sequences(pairs, which)
        out.append(completion_log_probs(model(tokens), tokens, mask))  # code/preference.py
    return out[0], out[1]


@dataclass
class DPOHistory:
    """每步一个数（这一批偏好对上的平均）：损失；隐含奖励之差 β·[(log π − log π_ref)(好) − (…)(差)]；
    隐含奖励排对的比例；策略给好、差回答的对数概率，和它们相对参考模型的变化（log π − log π_ref）。"""

    loss: list[float] = field(default_factory=list)
    margin: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    chosen_logp: list[float] = field(default_factory=list)
    rejected_logp: list[float] = field(default_factory=list)
    chosen_shift: list[float] = field(default_factory=list)
    rejected_shift: list[float] = field(default_factory=list)


# --8<-- [start:train-dpo]
def train_dpo(start: TinyTransformer, pairs: Pairs, s: DPOSettings) -> tuple[TinyTransformer, DPOHistory]:
    """复制 start 当策略来训练，start 本身冻住当参考模型；按 s.loss（dpo 或 ipo）训练 s.steps 步。"""
    check_train_args(start, pairs, s)
    torch.manual_seed(s.seed)
    policy, ref = copy.deepcopy(start), start.eval()
    with torch.no_grad():
        ref_chosen, ref_rejected = pair_log_probs(ref, pairs)  # 参考模型不变：一次算好所有偏好对
    chosen, chosen_mask = pair_sequences(pairs, "chosen")
    rejected, rejected_mask = pair_sequences(pairs, "rejected")
    lengths = pairs.chosen_mask.sum(1).float(), pairs.rejected_mask.sum(1).float()  # IPO 用：回答的词元数
    opt = torch.optim.AdamW(policy.parameters(), lr=s.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(s.seed)
    history = DPOHistory()
    for _ in range(s.steps):
        pick = torch.randint(0, len(pairs), (s.batch_size,), generator=gen)
        policy.train()
        logp_c = completion_log_probs(policy(chosen[pick]), chosen[pick], chosen_mask[pick])
        logp_r = completion_log_probs(policy(rejected[pick]), rejected[pick], rejected_mask[pick])
        if s.loss == "dpo":
            loss = dpo_loss(logp_c, logp_r, ref_chosen[pick], ref_rejected[pick], s.beta)
        else:
            loss = ipo_loss(logp_c, logp_r, ref_chosen[pick], ref_rejected[pick], s.beta,
                            lengths[0][pick], lengths[1][pick])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), s.clip)
        opt.step()
        with torch.no_grad():  # 记录：隐含奖励 r = β·(log π − log π_ref)
            shift_c, shift_r = logp_c - ref_chosen[pick], logp_r - ref_rejected[pick]
            history.loss.append(loss.item())
            history.margin.append((s.beta * (shift_c - shift_r)).mean().item())
            history.accuracy.append((shift_c > shift_r).float().mean().item())
            history.chosen_logp.append(logp_c.mean().item())
            history.rejected_logp.append(logp_r.mean().item())
            history.chosen_shift.append(shift_c.mean().item())
            history.rejected_shift.append(shift_r.mean().item())
    policy.eval()
    return policy, history
# --8<-- [end:train-dpo]


@torch.no_grad()
def implicit_accuracy(policy: TinyTransformer, ref: TinyTransformer, pairs: Pairs) -> float:
    """DPO 的隐含奖励在这些偏好对上排对的比例：(log π − log π_ref)(好) > (…)(差)。"""
    if not isinstance(ref, TinyTransformer):
        raise ValueError(f"ref 应为 TinyTransformer（参考模型），收到 {type(ref).__name__}")
    policy.eval()
    c, r = pair_log_probs(policy, pairs)
    rc, rr = pair_log_probs(ref, pairs)
    return ((c - rc) > (r - rr)).float().mean().item()


# --8<-- [start:token-shifts]
@torch.no_grad()
def head_token_shifts(policy: TinyTransformer, ref: TinyTransformer, pairs: Pairs,
                      tok: CharTokenizer) -> dict[str, dict[str, float]]:
    """DPO 把每个词元的对数概率改了多少（log π − log π_ref，奈特），按词元在诗里的位置分三类求平均：
    right：句首，写的正是要求的字；wrong：句首，写的不是要求的字；other：其余的词元。
    wrong 的那些位置上，再看要求的那个字（没写出来的那个）的对数概率变了多少：required。
    返回 {"chosen": {...}, "rejected": {...}}，每类还有词元数 n_right、n_wrong、n_other。"""
    check_shift_args(policy, ref, pairs, tok)
    ends = {tok.char_to_id[c] for c in "，。" if c in tok.char_to_id}
    P = pairs.prompt.size(1)
    out = {}
    for which in ("chosen", "rejected"):
        tokens, mask = pair_sequences(pairs, which)
        lp, lq = policy(tokens).log_softmax(-1)[:, P - 1:-1], ref(tokens).log_softmax(-1)[:, P - 1:-1]
        answer, keep = tokens[:, P:], mask[:, P:]  # 第 P-1+k 个位置的分布预测回答的第 k 个词元
        shift = (lp - lq).gather(-1, answer.unsqueeze(-1)).squeeze(-1)  # (N, C)：写出的词元
        sums = {"right": [], "wrong": [], "other": [], "required": []}
        for i, heads in enumerate(pairs.heads):
            row = answer[i].tolist()
            starts = [0] + [k + 1 for k, t in enumerate(row) if t in ends]  # 句首：开头和每个句末标点之后
            starts = [k for k in starts[:len(heads)] if k < len(row) and keep[i, k]]
            for k in range(len(row)):
                if not keep[i, k]:
                    continue
                if k not in starts:
                    sums["other"].append(shift[i, k].item())
                    continue
                want = tok.char_to_id[heads[starts.index(k)]]
                if row[k] == want:
                    sums["right"].append(shift[i, k].item())
                else:
                    sums["wrong"].append(shift[i, k].item())
                    sums["required"].append((lp[i, k, want] - lq[i, k, want]).item())
        out[which] = {name: sum(xs) / len(xs) if xs else 0.0 for name, xs in sums.items()}
        out[which].update({f"n_{name}": len(xs) for name, xs in sums.items() if name != "required"})
    return out
# --8<-- [end:token-shifts]


# --8<-- [start:evaluate]
def tally(heads: Sequence[str], texts: Sequence[str], rhyme: bool = True) -> dict[str, int]:
    """验证器的计数：诗的首数 n、对上的句首数 lines（满分 4n）、四句全对的首数 all4、格式对的 form、押韵的 rhyme
    （rhyme=False 时不查押韵，记作 0）。"""
    check_tally_args(heads, texts)
    check_rhyme(rhyme)
    verdicts = [judge(h, t, rhyme) for h, t in zip(heads, texts, strict=True)]
    return {"n": len(verdicts), "lines": sum(v.heads for v in verdicts), "all4": sum(v.all_heads for v in verdicts),
            "form": sum(v.form for v in verdicts), "rhyme": sum(v.rhyme for v in verdicts)}


@torch.no_grad()
def sequence_kl(policy: TinyTransformer, ref: TinyTransformer, tokens: Tensor, mask: Tensor) -> float:
    """沿策略自己写的回答，每一步两个模型的下一词分布之间的 KL(π‖π_ref)，对回答的词元求和，再对各条求平均（奈特）。"""
    if not isinstance(policy, TinyTransformer) or not isinstance(ref, TinyTransformer):
        raise ValueError("policy 和 ref 都应为 TinyTransformer")
    check_sequences(tokens, mask)
    logp, logq = policy(tokens).log_softmax(-1), ref(tokens).log_softmax(-1)
    kl = (logp.exp() * (logp - logq)).sum(-1)[:, :-1]  # 第 t 个位置的分布决定第 t+1 个词元
    return torch.where(mask[:, 1:], kl, 0.0).sum(1).mean().item()


def evaluate_policy(model: TinyTransformer, ref: TinyTransformer, tok: CharTokenizer, heads: Sequence[str],
                    s: DPOSettings, rhyme: bool = True) -> dict[str, Any]:
    """验证集的藏头上：温度 1 每组采样 s.eval_samples 首、贪心写一首，各自的验证器计数（tally）和不同的诗占多少；
    贪心时每句开头那一步给要求的字的平均概率（head_prob）；还有采样的诗上到参考模型的 KL（sequence_kl）。
    写出的诗也存下（poems：同一组藏头的几首排在一起；greedy_poems：每组一首），别人可以自己重新数。
    采样的种子固定，所以各个模型的差别只来自模型。"""
    check_evaluate_args(model, ref, tok, heads, s)
    check_rhyme(rhyme)
    gen = torch.Generator().manual_seed(1000 + s.seed)  # 和造偏好对的采样错开
    sampled = sample_poems(model, tok, heads, s.eval_samples, 1.0, gen)
    greedy_texts, head_probs = write_acrostics(model, tok, list(heads))  # code/acrostic.py：贪心，外加句首概率
    many = [h for h in heads for _ in range(s.eval_samples)]
    prompts = torch.tensor([tok.encode(acrostic_prompt(h)) for h in many])
    tokens = torch.cat([prompts, sampled.tokens], dim=1)
    mask = torch.cat([torch.zeros_like(prompts, dtype=torch.bool), sampled.mask], dim=1)
    return {"sampled": {**tally(many, sampled.texts, rhyme), "distinct": distinct_share(sampled.texts)},
            "greedy": {**tally(list(heads), greedy_texts, rhyme), "distinct": distinct_share(greedy_texts),
                       "head_prob": head_probs.mean().item()},
            "kl": 0.0 if model is ref else sequence_kl(model, ref, tokens, mask),  # 和自己比，KL 就是 0
            "poems": sampled.texts, "greedy_poems": greedy_texts}
# --8<-- [end:evaluate]


# --8<-- [start:experiment]
BETAS = (0.03, 0.1, 0.3, 1.0)  # β 的扫描：只在种子 0 上做
IPO_BETA = 1.0  # IPO 把每个词元平均的对数概率比之差拉向 1/(2β) = 0.5


def run_seed(seed: int, s: DPOSettings, betas: Sequence[float] = (), ipo: bool = False,
             sweep_only: bool = False) -> dict[str, Any]:
    """一个种子的全部：造偏好对、奖励模型、DPO，ipo=True 时再加 IPO，再加 betas 里其余 β 的 DPO；各自在验证集上评估。
    sweep_only=True 时只训练 betas 里其余 β 的 DPO（偏好对照样造，同一个种子造出的一样），结果里只有 runs。"""
    check_run_args(seed, s, betas, ipo)
    if not isinstance(sweep_only, bool):
        raise ValueError(f"sweep_only 应为 True 或 False（是否只做 β 的扫描），收到 {sweep_only!r}")
    s = replace(s, seed=seed)
    start, tok = capable_model(seed)  # code/capable_sft.py：同一个种子的 SFT 模型
    train_poems, held_poems = poem_lists()
    train_heads, held_heads = build_sft_data(train_poems, tok).heads, build_sft_data(held_poems, tok).heads
    gen = torch.Generator().manual_seed(seed)
    picked = [train_heads[i] for i in torch.randperm(len(train_heads), generator=gen)[:s.prompts].tolist()]
    clock = time.process_time()
    pairs = build_pairs(start, tok, picked, s.samples, s.temperature, gen)
    n_held = round(len(pairs) * s.held_share)
    train_pairs, held_pairs = pairs.subset(range(n_held, len(pairs))), pairs.subset(range(n_held))
    out: dict[str, Any] = {}
    if not sweep_only:
        out.update({"pairs": pairs, "n_train_pairs": len(train_pairs), "n_held_pairs": n_held,
                    "before": evaluate_policy(start, start, tok, held_heads, s)})
        rm, rm_history = train_reward_model(start, train_pairs, s)
        out["reward_model"] = {"history": rm_history, "held_accuracy": pair_accuracy(rm, held_pairs),
                               "train_accuracy": pair_accuracy(rm, train_pairs)}
    runs = {} if sweep_only else {"dpo": s, **({"ipo": replace(s, loss="ipo", beta=IPO_BETA)} if ipo else {})}
    runs.update({f"dpo-beta-{b}": replace(s, beta=b) for b in betas if b != s.beta})
    out["runs"] = {}
    for name, settings in runs.items():
        policy, history = train_dpo(start, train_pairs, settings)
        out["runs"][name] = {"beta": settings.beta, "loss": settings.loss, "history": history,
                             "held_pair_accuracy": implicit_accuracy(policy, start, held_pairs),
                             "after": evaluate_policy(policy, start, tok, held_heads, s),
                             "state": policy.state_dict() if (name == "dpo" and seed == SEEDS[0]) else None}
    out["cpu_seconds"] = time.process_time() - clock  # 只用来打印，不存进文件
    return out


# 实验的三部分，互不相干：每个种子一份 run_seed；IPO 和 β 的扫描只在第一个种子上做，β 的扫描单独成一部分
PARTS = {"seed-0": {"seed": SEEDS[0], "ipo": True},  # DPO 和 IPO，外加偏好对、奖励模型、SFT 模型的评估
         "betas": {"seed": SEEDS[0], "sweep": True},  # 只训练 BETAS 里其余 β 的 DPO
         "seed-1": {"seed": SEEDS[1]}}


def dpo_part(part: str, s: DPOSettings | None = None) -> dict[str, Any]:
    """PARTS 里的一部分（设置 s，默认是文章的设置 PUBLISHED）。"""
    if part not in PARTS:
        raise ValueError(f"part 应是 {'、'.join(PARTS)} 之一，收到 {part!r}")
    spec, s = PARTS[part], PUBLISHED if s is None else s
    if spec.get("sweep", False):
        return run_seed(spec["seed"], s, BETAS, sweep_only=True)
    return run_seed(spec["seed"], s, ipo=spec.get("ipo", False))


def dpo_experiment(s: DPOSettings | None = None) -> dict[str, Any]:
    """文章的全部数字：三部分（PARTS）合起来，种子 0 的 runs 里接上 β 的扫描。
    设置是文章的设置（PUBLISHED）时，构建网站时算好的部分直接读取（part_result）。"""
    s = PUBLISHED if s is None else s
    check_settings(s)
    _, tok = capable_model(SEEDS[0])
    part = {name: part_result(name, s) for name in PARTS}
    first = {**part["seed-0"], "runs": {**part["seed-0"]["runs"], **part["betas"]["runs"]}}
    first["cpu_seconds"] = part["seed-0"].get("cpu_seconds", 0.0) + part["betas"].get("cpu_seconds", 0.0)
    return {"settings": s, "chars": tok.chars, "seeds": {SEEDS[0]: first, SEEDS[1]: part["seed-1"]}}
# --8<-- [end:experiment]


PUBLISHED = DPOSettings()  # 文章的设置：构建时按它算好各部分
# 每一部分是一个产物（第三项是传给 dpo_part 的参数），preference-dpo 读它们、合起来
BUILD_ARTIFACTS = {"dpo-seed-0": ("dpo_part", "save_part", "seed-0"),
                   "dpo-betas": ("dpo_part", "save_part", "betas"),
                   "dpo-seed-1": ("dpo_part", "save_part", "seed-1"),
                   "preference-dpo": ("dpo_experiment", "save_dpo")}
DPO_ENV = "LLM_ARTIFACT_PREFERENCE_DPO"
PART_ENVS = {"seed-0": "LLM_ARTIFACT_DPO_SEED_0", "betas": "LLM_ARTIFACT_DPO_BETAS",
             "seed-1": "LLM_ARTIFACT_DPO_SEED_1"}  # 构建时指向各部分缓存的文件
PAIR_TENSORS = ("prompt", "chosen", "rejected", "chosen_mask", "rejected_mask")


def part_result(part: str, s: DPOSettings) -> dict[str, Any]:
    """dpo_part(part, s)：s 是文章的设置、构建网站时又已算好这一部分，就读缓存的文件。"""
    path = os.environ.get(PART_ENVS[part]) if part in PART_ENVS else None  # 不认识的名字由 dpo_part 报错
    if s == PUBLISHED and path and Path(path).is_file():
        return load_part(path)
    return dpo_part(part, s)


def plain_seed_run(run: dict[str, Any]) -> dict[str, Any]:
    """一个种子（或一部分）的结果里的数据类换成字典，用时去掉：torch.save 存的就是它。"""
    record = {k: v for k, v in run.items() if k != "cpu_seconds"}
    if "pairs" in run:
        record["pairs"] = asdict(run["pairs"])
    if "reward_model" in run:
        record["reward_model"] = {**run["reward_model"], "history": asdict(run["reward_model"]["history"])}
    record["runs"] = {name: {**r, "history": asdict(r["history"])} for name, r in run["runs"].items()}
    return record


def revive_seed_run(run: dict[str, Any]) -> dict[str, Any]:
    """plain_seed_run 的反面：字典换回数据类。"""
    if "pairs" in run:
        run["pairs"] = Pairs(**run["pairs"])
    if "reward_model" in run:
        run["reward_model"]["history"] = RewardHistory(**run["reward_model"]["history"])
    for r in run["runs"].values():
        r["history"] = DPOHistory(**r["history"])
    return run


def save_part(path: str | Path, part: dict[str, Any]) -> None:
    """存下 dpo_part 的结果（不存用时）。"""
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应是文件路径（str 或 pathlib.Path），收到 {type(path).__name__}")
    if not isinstance(part, dict) or "runs" not in part:
        raise ValueError("part 应是 dpo_part() 的返回值（一个有 runs 的字典）")
    torch.save(plain_seed_run(part), path)


def load_part(path: str | Path) -> dict[str, Any]:
    """读回 save_part 存的文件。"""
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise ValueError(f"path 应是 save_part 存下的文件，但找不到 {path!r}")
    data = torch.load(path, weights_only=True)
    if not isinstance(data, dict) or not isinstance(data.get("runs"), dict):
        raise ValueError(f"{path} 不是 save_part 存下的文件：应是一个有 runs 的字典")
    return revive_seed_run(data)


def save_dpo(path: str | Path, result: dict[str, Any]) -> None:
    """存下偏好对、训练记录、评估结果，以及种子 0 的 DPO 策略的参数（不存用时：同样的输入得到同样的文件）。"""
    check_result(result)
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应是文件路径（str 或 pathlib.Path），收到 {type(path).__name__}")
    seeds = {seed: plain_seed_run(run) for seed, run in result["seeds"].items()}
    torch.save({"settings": asdict(result["settings"]), "chars": list(result["chars"]), "seeds": seeds}, path)


def load_dpo(path: str | Path) -> dict[str, Any]:
    """读回 save_dpo 存的文件。"""
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path 应是文件路径（str 或 pathlib.Path），收到 {type(path).__name__}")
    if not Path(path).is_file():
        raise ValueError(f"path 应是 save_dpo 存下的文件，但找不到 {path}")
    data = torch.load(path, weights_only=True)
    for run in data["seeds"].values():
        revive_seed_run(run)
    data["settings"] = DPOSettings(**data["settings"])
    check_result(data)
    return data


def dpo_results(verbose: bool = True) -> dict[str, Any]:
    """dpo_experiment() 的结果：构建网站时缓存了的就直接读取，没有就现场计算。"""
    path = os.environ.get(DPO_ENV)
    if path and Path(path).is_file():
        return load_dpo(path)
    if verbose:
        print("没有现成的结果，现场计算（采样造偏好对、奖励模型、DPO、IPO、β 的扫描）……")
    return dpo_experiment()


def dpo_model(result: dict[str, Any]) -> tuple[TinyTransformer, CharTokenizer]:
    """按结果重建种子 0 的 DPO 策略（eval 模式）和分词器。"""
    check_result(result)
    model, tok = capable_model(SEEDS[0])
    if tok.chars != result["chars"]:
        raise ValueError("SFT 模型的词表和 DPO 结果的不同：结果是用另一个模型得到的")
    model.load_state_dict(result["seeds"][SEEDS[0]]["runs"]["dpo"]["state"])
    model.eval()
    return model, tok


# ---------- 参数检查：不在文章里展示 ----------


def check_settings(s: object) -> None:
    if not isinstance(s, DPOSettings):
        raise ValueError(f"s 应为 DPOSettings，收到 {type(s).__name__}")
    check_int("prompts", s.prompts, minimum=1)
    check_int("samples", s.samples, minimum=2)  # 至少两首才比得出好坏
    for name in ("steps", "batch_size", "rm_steps", "eval_samples"):
        check_int(name, getattr(s, name), minimum=1)
    check_int("seed", s.seed)
    for name in ("temperature", "beta", "lr", "clip", "rm_lr"):
        value = getattr(s, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
            raise ValueError(f"{name} 应为有限的正数，收到 {value!r}")
    if isinstance(s.held_share, bool) or not isinstance(s.held_share, int | float) or not 0 < s.held_share < 1:
        raise ValueError(f"held_share 应在 0 和 1 之间（留出一部分偏好对做评估），收到 {s.held_share!r}")
    if s.loss not in LOSSES:
        raise ValueError(f"loss 应是 {'、'.join(LOSSES)} 之一，收到 {s.loss!r}")


def check_index(index: object, size: int) -> None:
    if isinstance(index, str) or not isinstance(index, Sequence | range) or not len(index):
        raise ValueError(f"index 应是偏好对编号的非空列表，收到 {index!r}")
    for i in index:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < size:
            raise ValueError(f"index 里的编号应是 0 到 {size - 1} 之间的整数，收到 {i!r}")


def check_pairs(pairs: object) -> None:
    if not isinstance(pairs, Pairs):
        raise ValueError(f"pairs 应为 Pairs（build_pairs 的结果），收到 {type(pairs).__name__}")
    if len(pairs) == 0:
        raise ValueError("pairs 里一个偏好对也没有：每组藏头的几首诗分数都相同，试试多采样几首（samples）")


def check_sequences(tokens: object, mask: object) -> None:
    check_tensor("tokens", tokens)
    check_tensor("mask", mask)
    if tokens.dim() != 2 or tokens.size(0) == 0 or tokens.dtype != torch.long:
        raise ValueError(f"tokens 应为 (B, T) 的 torch.long 词元编号，B ≥ 1，收到 {fmt(tokens.shape)} {tokens.dtype}")
    if mask.shape != tokens.shape or mask.dtype != torch.bool:
        raise ValueError(f"mask 应为和 tokens 同形状 {fmt(tokens.shape)} 的 torch.bool，"
                         f"收到 {fmt(mask.shape)} {mask.dtype}")
    if not mask.any(dim=1).all():
        raise ValueError("mask 的每一行至少要有一个 True：每条都要有回答的词元")


def check_rewards(r_chosen: object, r_rejected: object) -> None:
    for name, t in (("r_chosen", r_chosen), ("r_rejected", r_rejected)):
        check_tensor(name, t)
        if t.dim() != 1 or t.numel() == 0 or not t.is_floating_point():
            raise ValueError(f"{name} 应为 (B,) 的浮点张量，B ≥ 1：每个偏好对一个奖励，收到 {fmt(t.shape)} {t.dtype}")
    if r_chosen.shape != r_rejected.shape:
        raise ValueError(f"r_chosen {fmt(r_chosen.shape)} 和 r_rejected {fmt(r_rejected.shape)} 的形状应相同")


def check_train_args(start: object, pairs: object, s: object) -> None:
    check_settings(s)
    if not isinstance(start, TinyTransformer):
        raise ValueError(f"start 应为 TinyTransformer（例如 capable_model() 的 SFT 模型），收到 {type(start).__name__}")
    check_pairs(pairs)
    if int(pairs.prompt.max()) >= start.cfg.vocab_size:
        raise ValueError(f"偏好对里的词元编号超出了 start 的词表（{start.cfg.vocab_size}）：偏好对是用另一个模型造的")


def check_shift_args(policy: object, ref: object, pairs: object, tok: object) -> None:
    check_model_tok(policy, tok)
    if not isinstance(ref, TinyTransformer) or ref.cfg != policy.cfg:
        raise ValueError("ref 应为和 policy 同样结构的 TinyTransformer（参考模型，例如 DPO 出发时的 SFT 模型）")
    check_pairs(pairs)
    if int(pairs.prompt.max()) >= policy.cfg.vocab_size:
        raise ValueError(f"偏好对里的词元编号超出了 policy 的词表（{policy.cfg.vocab_size}）：偏好对是用另一个模型造的")
    for h in pairs.heads:
        if any(c not in tok.char_to_id for c in h):
            raise ValueError(f"藏头「{h}」里有分词器词表之外的字：偏好对和分词器不配套")


def check_rhyme(rhyme: object) -> None:
    if not isinstance(rhyme, bool):
        raise ValueError(f"rhyme 应为 True 或 False（查不查押韵），收到 {rhyme!r}")


def check_tally_args(heads: object, texts: object) -> None:
    for name, xs in (("heads", heads), ("texts", texts)):
        if isinstance(xs, str) or not isinstance(xs, Sequence) or not xs:
            raise ValueError(f"{name} 应是非空的列表，收到 {xs!r}")
    if len(heads) != len(texts):
        raise ValueError(f"heads 有 {len(heads)} 项、texts 有 {len(texts)} 项：应一一对应")


def check_evaluate_args(model: object, ref: object, tok: object, heads: object, s: object) -> None:
    check_settings(s)
    check_model_tok(model, tok)
    if not isinstance(ref, TinyTransformer) or ref.cfg != model.cfg:
        raise ValueError("ref 应为和 model 同样结构的 TinyTransformer（参考模型，算 KL 用）")
    if isinstance(heads, str) or not isinstance(heads, Sequence) or not heads:
        raise ValueError(f"heads 应是验证集藏头的非空列表，收到 {heads!r}")
    check_heads_list(list(heads), tok)


def check_run_args(seed: object, s: object, betas: object, ipo: object) -> None:
    check_settings(s)
    if not isinstance(ipo, bool):
        raise ValueError(f"ipo 应为 True 或 False（要不要再训练一次 IPO），收到 {ipo!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed not in SEEDS:
        raise ValueError(f"seed 应是 {'、'.join(map(str, SEEDS))} 之一（capable_sft 训练过的种子），收到 {seed!r}")
    if isinstance(betas, str) or not isinstance(betas, Sequence):
        raise ValueError(f"betas 应是 β 的列表，收到 {betas!r}")
    for b in betas:
        if isinstance(b, bool) or not isinstance(b, int | float) or not 0 < b < math.inf:
            raise ValueError(f"betas 里的 β 应为有限的正数，收到 {b!r}")


def check_result(result: object) -> None:
    source = "dpo_experiment() 或 load_dpo(path) 的返回值"
    if not isinstance(result, dict):
        raise ValueError(f"result 应是 {source}（一个字典），收到 {type(result).__name__}")
    missing = [key for key in ("settings", "chars", "seeds") if key not in result]
    if missing:
        raise ValueError(f"result 应是 {source}，缺少 {missing}")
    if not isinstance(result["settings"], DPOSettings):
        raise ValueError(f"result['settings'] 应为 DPOSettings，收到 {type(result['settings']).__name__}")
    seeds = result["seeds"]
    if not isinstance(seeds, dict) or not seeds:
        raise ValueError("result['seeds'] 应是「种子 → 结果」的非空字典")
    for seed, run in seeds.items():
        need = ("pairs", "before", "reward_model", "runs")
        if not isinstance(run, dict) or any(k not in run for k in need):
            raise ValueError(f"result['seeds'][{seed}] 应有 {'、'.join(need)}")


if __name__ == "__main__":
    from verifiers import wilson_interval

    torch.set_num_threads(1)  # 和构建网站时一样单线程：结果逐位可复现
    result = dpo_experiment()
    for seed, run in result["seeds"].items():
        p = run["pairs"]
        print(f"种子 {seed}：{p.n_prompts} 组藏头 → {len(p)} 个偏好对（{p.ties} 组同分丢掉），"
              f"奖励模型在留出的 {run['n_held_pairs']} 对上排对 {run['reward_model']['held_accuracy']:.1%}；"
              f"用时 {run.get('cpu_seconds', 0.0):.0f} CPU 秒（读缓存的部分记 0）")
        rows = {"SFT": run["before"], **{name: r["after"] for name, r in run["runs"].items()}}
        for name, ev in rows.items():
            smp, grd = ev["sampled"], ev["greedy"]
            lo, hi = wilson_interval(smp["lines"], 4 * smp["n"])
            print(f"  {name:<14} 采样句首 {smp['lines'] / (4 * smp['n']):.1%}（{lo:.1%}–{hi:.1%}） "
                  f"四句全对 {smp['all4'] / smp['n']:.1%}  格式 {smp['form'] / smp['n']:.1%}  "
                  f"押韵 {smp['rhyme'] / smp['n']:.1%}  | 贪心句首 {grd['lines'] / (4 * grd['n']):.1%}  "
                  f"KL {ev['kl']:.2f}")
