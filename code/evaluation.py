"""评测：在验证集的藏头上，用验证器（code/verifiers.py）给模型写的诗打分，比较课程里训练过的每一个模型。

- 每组藏头按温度 1 采样写 n 首（几个采样种子各写几首），另外贪心解码写一首；
- 每首诗过三个验证器：格式、藏头（逐句）、押韵；一批诗再看多样性；
- 比例都带 Wilson 区间；pass@k 用 Chen 等（2021）的无偏估计；
- 地板：什么都不看、只按先验猜句首，能蒙对多少；对照：把模型写的诗拿去和「别的提示」的藏头比；
- 污染：验证集的诗在训练集里有没有只差一两个字的异文。
比较的结果是一个构建产物（BUILD_ARTIFACTS）：构建网站时算一次，图、实验和测试读缓存。
参数不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from acrostic import (
    N_LINES,
    POEM_TOKENS,
    acrostic_prompt,
    check_heads,
    check_heads_list,
    check_tokenizer,
    line_heads,
    usable,
)
from capable_sft import SEEDS as CAPABLE_SEEDS
from capable_sft import capable_model
from gpt_from_scratch import load_poems, split_poems
from kv_cache import KVCache, forward_with_cache, generate
from lora_train import base_model, finetuned_model, finetuning
from shapes import fmt
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer
from torch import Tensor
from verifiers import char_diversity, distinct_share, verify, wilson_interval

# --8<-- [start:settings]
TEMPERATURE = 1.0  # 按模型自己的分布采样，不削尖也不摊平
SAMPLE_SEEDS = (0, 1, 2, 3)  # 四个采样种子：看得出采样本身带来的起伏
PER_SEED = 2  # 每个种子给每组藏头写 2 首：一共 8 首
KS = (1, 2, 4, 8)  # pass@k 的 k：不超过每组写的首数
VARIANT_PLACES = 2  # 和训练集的某首诗字数相同、至多 2 处不同，就算「异文」（第一阶段一文的算法）
# --8<-- [end:settings]

# 比较的模型：名字 → 在图表里的说法
MODEL_LABELS = {"base": "第一阶段唐诗 GPT", "lora-1": "SFT LoRA r=1", "lora-4": "SFT LoRA r=4",
                "lora-8": "SFT LoRA r=8", "full": "SFT 全参数 80 步",
                **{f"capable-{s}": f"SFT 全参数 500 步（种子 {s}）" for s in CAPABLE_SEEDS}}


# --8<-- [start:sample]
@dataclass
class Samples:
    """sample_poems 的结果。tokens (B, N)：生成的词元（不含提示）；mask (B, N)：到第一个换行（含）为止的词元；
    texts：解码到第一个换行为止的诗。同一组藏头的几首排在一起。"""

    tokens: Tensor
    mask: Tensor
    texts: list[str]


def draw(probs: Tensor, generator: torch.Generator) -> Tensor:
    """从 probs (B, V) 的每一行各抽一个词元，返回 (B,)：逆变换采样。

    每行抽一个 [0, 总和) 里的均匀随机数 u，取累积概率第一个超过 u 的词元：落在第 i 个词元上的机会正好是它的概率。
    和 code/sampling.py 的 sample（torch.multinomial）是同一个分布，只是同一个种子抽出的词元不同；
    一次抽几千行时它在 CPU 上快得多（测试逐个词元核对频率；`python -m bench.sampler` 并排量两种写法）。"""
    check_draw_args(probs, generator)
    cdf = probs.cumsum(dim=-1)  # 加上一个 0 不改变和：概率为 0 的词元占不到区间，抽不到
    u = torch.rand(probs.size(0), 1, generator=generator, dtype=cdf.dtype) * cdf[:, -1:]
    picked = torch.searchsorted(cdf, u, right=True).squeeze(-1)
    over = picked == probs.size(-1)
    if over.any():  # u 乘出来恰好等于总和（舍入，极少见）：越过了最后一个词元，退回到这一行最后一个概率不为 0 的
        picked[over] = probs.size(-1) - 1 - (probs[over].flip(-1) > 0).int().argmax(dim=-1)
    return picked


@torch.no_grad()
def sample_tokens(model: TinyTransformer, prompts: Tensor, max_new_tokens: int, temperature: float,
                  generator: torch.Generator) -> Tensor:
    """接着 prompts (B, P) 按温度采样 max_new_tokens 个词元，返回 (B, max_new_tokens)。

    和 code/kv_cache.py 的 generate 一样带 KV 缓存，但不留每一步的分数（几千条一起写时那要占上 GB），抽样用 draw。"""
    check_sample_tokens_args(model, prompts, max_new_tokens, temperature, generator)
    model.eval()
    cache = KVCache.for_model(model, prompts.size(0))
    new, out = prompts, []
    for _ in range(max_new_tokens):
        logits = forward_with_cache(model, new, cache)[:, -1]  # 只要最后一个位置 (B, V)
        new = draw(torch.softmax(logits / temperature, dim=-1), generator)[:, None]
        out.append(new)
    return torch.cat(out, dim=1)


@torch.no_grad()
def sample_poems(model: TinyTransformer, tok: CharTokenizer, heads: Sequence[str], n: int, temperature: float,
                 generator: torch.Generator, chunk: int = 256, max_new_tokens: int = POEM_TOKENS) -> Samples:
    """每组藏头按温度 temperature 采样 n 首（每次最多 chunk 条一起生成，省内存）。

    第二、三篇的 DPO 和 GRPO 也用它。同一个 generator、不同的 chunk，随机数分给各条的方式不同，写出的诗也不同。"""
    check_poem_sample_args(model, tok, heads, n, temperature, generator, chunk, max_new_tokens)
    prompts = torch.tensor([tok.encode(acrostic_prompt(h)) for h in heads]).repeat_interleave(n, dim=0)
    new = torch.cat([sample_tokens(model, prompts[i:i + chunk], max_new_tokens, temperature, generator)
                     for i in range(0, prompts.size(0), chunk)])
    is_newline = (new == tok.char_to_id["\n"]).int()
    mask = (is_newline.cumsum(dim=1) - is_newline) == 0  # 第一个换行之后的词元不算：诗已经写完了
    return Samples(new, mask, [tok.decode(row).split("\n")[0] for row in new.tolist()])


def sample_acrostics(model: TinyTransformer, tok: CharTokenizer, heads: list[str], n: int, seed: int,
                     temperature: float = TEMPERATURE) -> list[list[str]]:
    """每组藏头按温度采样写 n 首诗（到第一个换行为止）：结果的第 i 项是第 i 组藏头的 n 首。

    一个 torch.Generator 管住全部随机数：同一个 seed 得到同样的诗。"""
    check_sample_args(model, tok, heads, n, seed, temperature)
    texts = sample_poems(model, tok, heads, n, temperature, torch.Generator().manual_seed(seed),
                         chunk=len(heads) * n).texts  # 一次生成全部
    return [texts[i * n:(i + 1) * n] for i in range(len(heads))]
# --8<-- [end:sample]


# --8<-- [start:pass-at-k]
def pass_at_k(n: int, c: int, k: int) -> float:
    """写了 n 首、其中 c 首合格时，「随手挑 k 首，至少一首合格」的概率：1 - C(n-c, k) / C(n, k)。

    Chen 等（2021）的无偏估计。写成连乘，不算很大的组合数：C(n-c, k) / C(n, k) = ∏ (1 - k / i)，i 从 n-c+1 到 n。"""
    check_pass_args(n, c, k)
    if n - c < k:  # 不合格的凑不满 k 首：挑哪 k 首都有合格的
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1 - k / i
    return 1.0 - miss


def mean_pass_at_k(counts: Sequence[int], n: int, k: int) -> float:
    """每组藏头写 n 首、合格的分别有 counts[i] 首：pass@k 在各组上的平均。"""
    check_counts(counts, n)
    return sum(pass_at_k(n, c, k) for c in counts) / len(counts)
# --8<-- [end:pass-at-k]


@dataclass(frozen=True)
class Rate:
    """一个比例：successes / n，连同它的 95% Wilson 区间。"""

    successes: int
    n: int

    @property
    def value(self) -> float:
        return self.successes / self.n

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.n)


def rate(successes: int, n: int) -> Rate:
    """把「n 次里成了 successes 次」记成一个带区间的比例（数不对时抛出 ValueError）。"""
    wilson_interval(successes, n)  # 顺便检查两个数
    return Rate(successes, n)


# --8<-- [start:score]
def score_poems(heads: list[str], poems: list[list[str]]) -> dict[str, Any]:
    """第 i 组藏头写的几首诗 poems[i]，逐首过验证器（verify），汇总成比例。

    line_heads：逐句数，句首对上的句数 / 全部句数；all_heads：四句全对的诗；form、rhyme：格式、押韵对的诗。
    all_heads_counts[i] 是第 i 组里四句全对的首数（算 pass@k 用）。"""
    check_score_args(heads, poems)
    verdicts = [[verify(h, p) for p in ps] for h, ps in zip(heads, poems, strict=True)]
    flat = [v for vs in verdicts for v in vs]
    return {"line_heads": rate(sum(v.heads for v in flat), N_LINES * len(flat)),
            "all_heads": rate(sum(v.all_heads for v in flat), len(flat)),
            "form": rate(sum(v.form for v in flat), len(flat)),
            "rhyme": rate(sum(v.rhyme for v in flat), len(flat)),
            "all_heads_counts": [sum(v.all_heads for v in vs) for vs in verdicts]}


def other_prompt_control(heads: list[str], poems: list[list[str]]) -> Rate:
    """对照：第 i 组写的诗拿去和第 i+1 组的藏头比（最后一组和第一组比），逐句数句首。

    模型要是不看藏头，对自己的藏头和对别人的藏头一样「准」；看了，对自己的才准。"""
    check_score_args(heads, poems)
    if len(set(heads)) < 2:
        raise ValueError("heads 里至少要有两组不同的藏头，才能和「别的提示」比")
    shifted = heads[1:] + heads[:1]
    return score_poems(shifted, poems)["line_heads"]
# --8<-- [end:score]


# --8<-- [start:baselines]
def prior_baselines(train_heads: list[str], held_heads: list[str]) -> dict[str, tuple[str, Rate]]:
    """地板：不看提示，只按训练集里句首的先验猜。

    commonest：每句都写训练集里最常见的句首字；per_position：第 k 句写训练集第 k 句最常见的句首字。
    返回 {名字: (猜的四个字, 在验证集藏头上逐句命中的比例)}。"""
    check_heads_lists(train_heads, held_heads)
    overall = Counter(c for h in train_heads for c in h).most_common(1)[0][0]
    per_position = "".join(Counter(h[k] for h in train_heads).most_common(1)[0][0] for k in range(N_LINES))
    out = {}
    for name, guess in (("commonest", overall * N_LINES), ("per_position", per_position)):
        hits = sum(g == c for h in held_heads for g, c in zip(guess, h, strict=True))
        out[name] = (guess, rate(hits, N_LINES * len(held_heads)))
    return out
# --8<-- [end:baselines]


def corpus_pass_rates(poems: list[str]) -> dict[str, Rate]:
    """语料里的诗本身能不能过验证器：每首按它自己的藏头检查格式、藏头、押韵。"""
    check_poems(poems)
    verdicts = [verify(line_heads(p), p) for p in poems if len(line_heads(p)) == N_LINES]
    if not verdicts:
        raise ValueError("poems 里没有一首是四句的诗")
    return {"form": rate(sum(v.form for v in verdicts), len(verdicts)),
            "all_heads": rate(sum(v.all_heads for v in verdicts), len(verdicts)),
            "rhyme": rate(sum(v.rhyme for v in verdicts), len(verdicts))}


# --8<-- [start:variants]
def places_differ(a: str, b: str) -> int:
    """两首字数相同的诗有几处不同（逐字比）。"""
    check_same_length(a, b)
    return sum(x != y for x, y in zip(a, b, strict=True))


def has_variant(poem: str, train: Sequence[str], places: int = VARIANT_PLACES) -> bool:
    """训练集里有没有这首诗的异文：字数相同、至多 places 处不同的一首（一模一样也算）。"""
    check_variant_args(poem, train, places)
    return any(len(q) == len(poem) and places_differ(q, poem) <= places for q in train)
# --8<-- [end:variants]


def variant_flags(poems: Sequence[str], train: Sequence[str], places: int = VARIANT_PLACES) -> list[bool]:
    """[has_variant(p, train, places) for p in poems]，结果相同，快得多：同样字数的训练集诗排成一个张量，一次比完。

    has_variant 是照定义写的参考（一首一首逐字比，几百首要比上百万次）；测试在整个语料上核对两者相同。"""
    if isinstance(poems, str) or not isinstance(poems, Sequence) or not poems:
        raise ValueError("poems 应是非空的诗的列表（list[str]）；一首也要放进列表")
    for poem in poems:
        check_variant_args(poem, [], places)
    check_variant_args(poems[0], train, places)
    def by_length(texts: Sequence[str]) -> dict[int, list[int]]:  # 字数 → 这么长的诗在 texts 里的位置
        groups: dict[int, list[int]] = {}
        for i, text in enumerate(texts):
            groups.setdefault(len(text), []).append(i)
        return groups

    def codes(texts: Sequence[str], which: list[int]) -> Tensor:  # (首数, 字数) 的字符编码
        return torch.tensor([[ord(c) for c in texts[i]] for i in which], dtype=torch.int32)

    flags = [False] * len(poems)
    train_groups = by_length(train)
    for n, which in by_length(poems).items():
        if n not in train_groups:
            continue
        differ = (codes(poems, which)[:, None, :] != codes(train, train_groups[n])[None, :, :]).sum(dim=-1)
        for i, found in zip(which, (differ <= places).any(dim=1).tolist(), strict=True):
            flags[i] = found
    return flags


def held_out_heads(tok: CharTokenizer) -> tuple[list[str], list[str], list[bool]]:
    """(训练集的藏头, 验证集的藏头, 验证集每首在训练集里有没有异文)：只留四个句首字都在词表里的诗。"""
    train_text, held_text = split_poems(load_poems())
    train = [p for p in train_text.splitlines() if usable(p, tok)]
    held = [p for p in held_text.splitlines() if usable(p, tok)]
    all_train = train_text.splitlines()  # 异文在全部训练集的诗里找
    return [line_heads(p) for p in train], [line_heads(p) for p in held], variant_flags(held, all_train)


@torch.no_grad()
def evaluate_model(model: TinyTransformer, tok: CharTokenizer, heads: list[str]) -> dict[str, Any]:
    """一个模型在 heads 上的全部成绩：每个采样种子各写 PER_SEED 首，合起来算比例和 pass@k；再贪心写一首。

    poems[i] 是第 i 组藏头采样写的诗（先是第一个种子写的 PER_SEED 首，再是第二个种子的……）。"""
    check_heads_list(heads, tok)
    per_seed = [sample_acrostics(model, tok, heads, PER_SEED, seed) for seed in SAMPLE_SEEDS]
    poems = [[p for batch in per_seed for p in batch[i]] for i in range(len(heads))]
    n = len(SAMPLE_SEEDS) * PER_SEED
    sampled = score_poems(heads, poems)
    prompts = torch.tensor([tok.encode(acrostic_prompt(h)) for h in heads])
    greedy_tokens = generate(model, prompts, POEM_TOKENS).tokens[:, prompts.size(1):]
    greedy = [tok.decode(row).split("\n")[0] for row in greedy_tokens]
    return {"sampled": sampled, "greedy": score_poems(heads, [[g] for g in greedy]),
            "per_seed_line_heads": [score_poems(heads, batch)["line_heads"] for batch in per_seed],
            "pass_at_k": {k: mean_pass_at_k(sampled["all_heads_counts"], n, k) for k in KS},
            "other_prompt": other_prompt_control(heads, poems),
            "distinct_greedy": distinct_share(greedy),
            "char_diversity": char_diversity([p for ps in poems for p in ps]),
            "greedy_poems": greedy, "poems": poems}


def course_models() -> dict[str, tuple[TinyTransformer, CharTokenizer]]:
    """课程里训练过的、会接藏头提示的模型：第一阶段的唐诗 GPT、第二阶段的四种微调、两个种子的 500 步全参数微调。"""
    result = finetuning(verbose=False)
    models = {"base": base_model()}
    for name in ("lora-1", "lora-4", "lora-8", "full"):
        models[name] = finetuned_model(result, name)
    for seed in CAPABLE_SEEDS:
        models[f"capable-{seed}"] = capable_model(seed)
    return models


# --8<-- [start:compare]
def compare_models() -> dict[str, Any]:
    """每个模型在验证集的全部藏头上评估一次；再加上地板、语料本身的通过率和污染的统计。"""
    models = course_models()
    tok = models["base"][1]
    train_heads, heads, variant = held_out_heads(tok)
    train_text, held_text = split_poems(load_poems())
    runs = {}
    for name, (model, model_tok) in models.items():
        if model_tok.chars != tok.chars:
            raise ValueError(f"模型 {name} 的词表和第一阶段的不同：它们不是同一个基座训练出来的")
        runs[name] = evaluate_model(model, model_tok, heads)
    return {"runs": runs, "heads": heads, "variant": variant, "baselines": prior_baselines(train_heads, heads),
            "corpus": {"train": corpus_pass_rates(train_text.splitlines()),
                       "held": corpus_pass_rates(held_text.splitlines())},
            "train_head_sets": sorted(set(train_heads)),
            "settings": {"temperature": TEMPERATURE, "sample_seeds": list(SAMPLE_SEEDS), "per_seed": PER_SEED,
                         "ks": list(KS), "variant_places": VARIANT_PLACES}}
# --8<-- [end:compare]


BUILD_ARTIFACTS = {"model-comparison": ("compare_models", "save_comparison")}
COMPARISON_ENV = "LLM_ARTIFACT_MODEL_COMPARISON"


def plain_rates(value: Any) -> Any:
    """Rate 换成 [successes, n]，其余原样：torch.save 只存基本类型，读回来不用信任任意对象。"""
    if isinstance(value, Rate):
        return {"rate": [value.successes, value.n]}
    if isinstance(value, dict):
        return {k: plain_rates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_rates(v) for v in value]
    return value


def revive_rates(value: Any) -> Any:
    """plain_rates 的反方向：{"rate": [successes, n]} 换回 Rate。"""
    if isinstance(value, dict):
        if set(value) == {"rate"}:
            return Rate(*value["rate"])
        return {k: revive_rates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [revive_rates(v) for v in value]
    return value


def save_comparison(path: str | Path, result: dict[str, Any]) -> None:
    """存下比较的结果（不存用时：同样的输入得到同样的文件）。"""
    check_comparison(result)
    torch.save(plain_rates(result), path)


def load_comparison(path: str | Path) -> dict[str, Any]:
    """读回 save_comparison 存的文件。"""
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise ValueError(f"path 应是 save_comparison 存下的文件，但找不到 {path!r}")
    result = revive_rates(torch.load(path, weights_only=True))
    for run in result["runs"].values():  # pass@k 的键存成了整数，读回来还是整数；这里只做检查
        if sorted(run["pass_at_k"]) != sorted(result["settings"]["ks"]):
            raise ValueError("存下的 pass@k 和 settings 里的 k 对不上：文件不是 save_comparison 写的")
    check_comparison(result)
    return result


def model_comparison(verbose: bool = True) -> dict[str, Any]:
    """compare_models() 的结果：构建网站时缓存了的就直接读取，没有就现场评估（没有缓存的模型时先训练它们）。"""
    path = os.environ.get(COMPARISON_ENV)
    if path and Path(path).is_file():
        return load_comparison(path)
    if verbose:
        print("没有现成的结果，现场评估每个模型（没有缓存的模型时先训练它们）……")
    return compare_models()


# ---------- 参数检查：不在文章里展示 ----------


def check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} 应是不小于 {minimum} 的整数，收到 {value!r}")


def check_pass_args(n: object, c: object, k: object) -> None:
    check_int("n", n, 1)
    check_int("c", c, 0)
    check_int("k", k, 1)
    if c > n:
        raise ValueError(f"合格的首数 c = {c} 不能比写的首数 n = {n} 多")
    if k > n:
        raise ValueError(f"k = {k} 不能比写的首数 n = {n} 多：只写了 n 首，挑不出 k 首")


def check_counts(counts: object, n: object) -> None:
    check_int("n", n, 1)
    if isinstance(counts, (str, bytes)) or not isinstance(counts, Sequence) or not counts:
        raise ValueError(f"counts 应是非空的整数列表（每组藏头里合格的首数），收到 {counts!r}")
    for c in counts:
        check_int("counts 的每一项", c, 0)
        if c > n:
            raise ValueError(f"counts 里的 {c} 比每组写的首数 n = {n} 多")


def check_sample_args(model: object, tok: object, heads: object, n: object, seed: object, temperature: object) -> None:
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer（例如 capable_model() 的模型），收到 {type(model).__name__}")
    check_heads_list(heads, tok)
    if model.cfg.vocab_size != tok.vocab_size:
        raise ValueError(f"模型的词表大小 {model.cfg.vocab_size} 和分词器的 {tok.vocab_size} 不符：不是配套的一对")
    check_int("n", n, 1)
    check_int("seed", seed, 0)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 < temperature < math.inf:
        raise ValueError(f"temperature 应为有限的正数（1 就是按模型自己的分布采样），收到 {temperature!r}")


def check_score_args(heads: object, poems: object) -> None:
    if not isinstance(heads, list) or not heads:
        raise ValueError(f"heads 应是非空的藏头列表，收到 {heads!r}")
    for h in heads:
        check_heads(h)
    if not isinstance(poems, list) or len(poems) != len(heads):
        got = f"{len(poems)} 项" if isinstance(poems, list) else type(poems).__name__
        raise ValueError(f"poems 应是列表，每组藏头一项（{len(heads)} 项），收到 {got}")
    for i, ps in enumerate(poems):
        if not isinstance(ps, list) or not ps or not all(isinstance(p, str) for p in ps):
            raise ValueError(f"poems[{i}] 应是这组藏头写的诗的非空列表（list[str]），一首也要放进列表：[poem]")


def check_heads_lists(train_heads: object, held_heads: object) -> None:
    for name, value in (("train_heads", train_heads), ("held_heads", held_heads)):
        if not isinstance(value, list) or not value:
            raise ValueError(f"{name} 应是非空的藏头列表（每项四个字），收到 {value!r}")
        for h in value:
            check_heads(h)


def check_poems(poems: object) -> None:
    if not isinstance(poems, list) or not poems or not all(isinstance(p, str) for p in poems):
        raise ValueError("poems 应是诗的非空列表（list[str]），每项一首")


def check_same_length(a: object, b: object) -> None:
    if not isinstance(a, str) or not isinstance(b, str):
        raise ValueError(f"a、b 应是两首诗（str），收到 {type(a).__name__}、{type(b).__name__}")
    if len(a) != len(b):
        raise ValueError(f"两首诗字数不同（{len(a)} 和 {len(b)}）：逐字比较只对字数相同的诗有意义")


def check_variant_args(poem: object, train: object, places: object) -> None:
    if not isinstance(poem, str) or not poem:
        raise ValueError(f"poem 应是一首诗（非空的 str），收到 {poem!r}")
    if isinstance(train, str) or not isinstance(train, Sequence) or not all(isinstance(q, str) for q in train):
        raise ValueError("train 应是训练集的诗的列表（list[str]）；一首也要放进列表")
    check_int("places", places, 0)


def check_comparison(result: object) -> None:
    source = "compare_models() 或 load_comparison(path) 的返回值"
    keys = ("runs", "heads", "variant", "baselines", "corpus", "train_head_sets", "settings")
    if not isinstance(result, dict) or any(k not in result for k in keys):
        raise ValueError(f"result 应是 {source}：一个有 {'、'.join(keys)} 的字典")
    if not isinstance(result["runs"], dict) or not result["runs"]:
        raise ValueError("result['runs'] 应是「模型名 → 成绩」的非空字典")
    if len(result["variant"]) != len(result["heads"]):
        raise ValueError("result['variant'] 应和 result['heads'] 一样长：每组藏头一个")


def check_model_tok(model: object, tok: object) -> None:
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer（例如 capable_model() 的 SFT 模型），收到 {type(model).__name__}")
    check_tokenizer(tok)
    if model.cfg.vocab_size != tok.vocab_size:
        raise ValueError(f"模型的词表大小 {model.cfg.vocab_size} 和分词器的 {tok.vocab_size} 不同：不是配套的一对")
    if "\n" not in tok.char_to_id:
        raise ValueError("分词器的词表里没有换行：靠换行判断一首诗写完了")


def check_generator(generator: object) -> None:
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator 应为 torch.Generator（决定采样的随机数），收到 {type(generator).__name__}")


def check_temperature_generator(temperature: object, generator: object) -> None:
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 < temperature < math.inf:
        raise ValueError(f"temperature 应为有限的正数，收到 {temperature!r}")
    check_generator(generator)


def check_draw_args(probs: object, generator: object) -> None:
    """只查形状和类型（每一步都会调用，不逐个扫描数值）。"""
    if not isinstance(probs, Tensor) or not probs.is_floating_point():
        raise ValueError(f"probs 应为浮点的 torch.Tensor（每行一个概率分布），收到 {type(probs).__name__}")
    if probs.dim() != 2 or probs.size(0) == 0 or probs.size(1) == 0:
        raise ValueError(f"probs 的形状应为 (B, V)，每行是一个词元上的分布，收到 {fmt(probs.shape)}")
    check_generator(generator)


def check_sample_tokens_args(model: object, prompts: object, max_new_tokens: object, temperature: object,
                             generator: object) -> None:
    if not isinstance(model, TinyTransformer):
        raise ValueError(f"model 应为 TinyTransformer，收到 {type(model).__name__}")
    if not isinstance(prompts, Tensor) or prompts.dtype != torch.long or prompts.dim() != 2 or prompts.numel() == 0:
        got = fmt(prompts.shape) if isinstance(prompts, Tensor) else type(prompts).__name__
        raise ValueError(f"prompts 应为 (B, P) 的整数张量（每行一条提示的词元编号），收到 {got}")
    check_int("max_new_tokens", max_new_tokens, minimum=1)
    check_temperature_generator(temperature, generator)


def check_poem_sample_args(model: object, tok: object, heads: object, n: object, temperature: object,
                           generator: object, chunk: object, max_new_tokens: object) -> None:
    check_model_tok(model, tok)
    if isinstance(heads, str) or not isinstance(heads, Sequence) or not heads:
        raise ValueError(f"heads 应是藏头的非空列表，例如 ['春夏秋冬']（一组也要放进列表），收到 {heads!r}")
    check_heads_list(list(heads), tok)
    check_int("n", n, minimum=1)
    check_temperature_generator(temperature, generator)
    check_int("chunk", chunk, minimum=1)
    check_int("max_new_tokens", max_new_tokens, minimum=1)


def print_comparison(result: dict[str, Any], cpu_seconds: float) -> None:
    """把 compare_models() 的结果打印成几行：地板，再每个模型一行（pass@k 打印最小和最大的 k）。"""
    check_comparison(result)
    ks = sorted(result["settings"]["ks"])
    per_prompt = len(result["settings"]["sample_seeds"]) * result["settings"]["per_seed"]
    print(f"验证集 {len(result['heads'])} 组藏头，每组采样 {per_prompt} 首；CPU {cpu_seconds:.1f} s")
    for name, (guess, r) in result["baselines"].items():
        print(f"  地板 {name}：猜「{guess}」，逐句命中 {r.value:.2%}")
    for name, run in result["runs"].items():
        s = run["sampled"]
        lo, hi = s["line_heads"].interval
        print(f"  {MODEL_LABELS.get(name, name):<22} 句首 {s['line_heads'].value:.1%}（{lo:.1%}–{hi:.1%}） "
              f"贪心 {run['greedy']['line_heads'].value:.1%}  别的提示 {run['other_prompt'].value:.1%}  "
              f"格式 {s['form'].value:.1%}  押韵 {s['rhyme'].value:.1%}  "
              f"pass@{ks[0]}/{ks[-1]} {run['pass_at_k'][ks[0]]:.3f}/{run['pass_at_k'][ks[-1]]:.3f}")


if __name__ == "__main__":  # 放在文件末尾：上面的检查函数都定义好了，才开始评估
    torch.set_num_threads(1)
    start = time.process_time()
    comparison = compare_models()
    print_comparison(comparison, time.process_time() - start)
