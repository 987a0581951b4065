"""Every number (and every checkable statement) the evaluation article makes about a computation, recomputed.

Each entry of ``CLAIMS`` locates a sentence of ``docs/articles/evaluation.md`` (or a figure's title and caption) and
checks the numbers it states against a recomputation done here, without ``code/evaluation.py`` or
``code/verifiers.py``:

- the artifact ``model-comparison`` is first checked to be what the models write: every model's greedy poems are
  rewritten by a loop without a KV cache (the stage-2 models' by the LoRA claims' own loop, the 500-step models'
  from their parameters read straight from the ``capable-sft-<seed>`` files), and the first sampling seed of the
  500-step model (seed 0) is redrawn by a plain loop and an inverse-CDF draw written out here (``plain_draw``), one
  generator, the same draws (the next-token logits from stage 1's KV cache, ``cached_rows``: see there why);
- every rate is then recounted from the stored poems with the LoRA claims' form check, a line-head count written
  here and a rhyme check written here from ``pypinyin``'s finals and the 十三辙 table; intervals come from
  ``scipy.stats.binomtest(...).proportion_ci(method="wilson")``, pass@k from ``math.comb``;
- the floors from the corpus file in plain Python; the variants from the stage-1 claims' ``nearest_training_poem``
  (the same definition the stage-1 article uses); held-out SFT losses with ``F.cross_entropy(ignore_index=-100)``;
- the per-prompt intervals (each head set one hit rate, the independent unit) with ``scipy.stats.sem``; the
  probability the 500-step models give the required head character, along all their own sampled prefixes, from
  a redraw of every sampling seed (``head_step_probabilities``); the fine-tuning's batches replayed from its seeds.
"""

from __future__ import annotations

import collections
import copy
import math
import os
import statistics
import sys
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from . import claims
from . import test_lora_claims as lora
from .claims import Claim, approx, holds
from .test_gpt_claims import nearest_training_poem

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "evaluation.md"
FIGURES = CODE / "figures" / "evaluation.py"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

import capable_sft  # noqa: E402
import evaluation  # noqa: E402
from kv_cache import KVCache, forward_with_cache  # noqa: E402

SEEDS, PER_SEED, N = (0, 1, 2, 3), 2, 8  # sampling seeds, poems per seed and prompt, poems per prompt
STEPS, BATCH = 500, 16  # the 500-step fine-tuning, as the article states it
STAGE_TWO = ("base", "lora-1", "lora-4", "lora-8", "full")
CAPABLE = ("capable-0", "capable-1")
ALL = STAGE_TWO + CAPABLE
N_ = claims.NUM  # a number as written, or a {{ value:name }} the page computes
P = claims.PCT

# --------------------------------------------------------------------------- scoring, written here

THIRTEEN = {  # 十三辙, by the final as pypinyin writes it in strict mode (ü as v); -i and i fall in the same group
    "发花": "a ia ua",
    "梭波": "o e uo",
    "乜斜": "ie ve ê",
    "一七": "i v er",
    "姑苏": "u",
    "怀来": "ai uai",
    "灰堆": "ei uei",
    "遥条": "ao iao",
    "油求": "ou iou",
    "言前": "an ian uan van",
    "人辰": "en in uen vn",
    "江阳": "ang iang uang",
    "中东": "eng ing ueng ong iong",
}
GROUP = {final: name for name, finals in THIRTEEN.items() for final in finals.split()}


@cache
def group_of(char: str) -> str | None:
    from pypinyin import Style, lazy_pinyin

    return GROUP.get(lazy_pinyin(char, style=Style.FINALS, strict=True)[0])


def ends(poem: str) -> list[str]:
    return [poem[i - 1] for i, c in enumerate(poem) if c in "，。"]


def rhyme_ok(poem: str) -> bool:
    if not lora.form_ok(poem):
        return False
    e = ends(poem)
    return group_of(e[1]) is not None and group_of(e[1]) == group_of(e[3])


def hits(heads: str, poem: str) -> int:
    return sum(a == b for a, b in zip(lora.written(poem), heads, strict=False))


def wilson(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(method="wilson")
    return float(ci.low), float(ci.high)


def pass_k(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


# --------------------------------------------------------------------------- the artifacts


@cache
def comparison() -> dict:
    return evaluation.model_comparison(verbose=False)


def heads() -> list[str]:
    return lora.held_heads()


def poems(name: str) -> list[list[str]]:
    return comparison()["runs"][name]["poems"]


@cache
def capable_net(seed: int) -> torch.nn.Module:
    """The 500-step model of this seed: the stage-1 GPT's architecture, the parameters read from the file itself."""
    files = {0: os.environ["LLM_ARTIFACT_CAPABLE_SFT_0"], 1: os.environ["LLM_ARTIFACT_CAPABLE_SFT_1"]}  # one per seed
    saved = torch.load(files[seed], weights_only=True)
    model = copy.deepcopy(lora.base())
    model.load_state_dict(saved["runs"][seed]["state"])
    return model.eval()


def plain_greedy_poems(model: torch.nn.Module) -> list[str]:
    """Greedy poems of any course model on the held-out heads, by a plain loop (the whole sequence each step, argmax);
    the DPO and GRPO claims redraw their policies with it too."""
    model = copy.deepcopy(model)
    model.unembed = lora.LastPosition(model.unembed)
    seqs = torch.tensor([lora.prompt_ids(h) for h in heads()])
    start = seqs.size(1)
    with torch.no_grad():
        for _ in range(lora.NEW_TOKENS):
            seqs = torch.cat([seqs, model(seqs)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return [lora.decode(row[start:].tolist()).split("\n")[0] for row in seqs]


def plain_draw(probs: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One token per row of ``probs`` (B, V), as a (B, 1) column, by the inverse CDF written out: one uniform number per
    row, scaled to the row's total; the token is how many running totals do not exceed it."""
    running = probs.cumsum(-1)
    u = torch.rand(probs.size(0), 1, generator=gen) * running[:, -1:]
    return (running <= u).sum(-1, keepdim=True)


def cached_rows(model: torch.nn.Module, prompts: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """The prompts (B, P) followed by lora.NEW_TOKENS tokens sampled at temperature 1: softmax, one ``plain_draw`` per
    row and step, one generator. The logits come from stage 1's KV cache (``kv_cache.forward_with_cache``, checked
    against the full forward in tests/code/test_kv_cache.py), as the evaluation's own were, so they are the same to the
    last bit: an inverse-CDF draw changes when a probability before it moves in its last bit, and recomputing the whole
    sequence every step does move them (measured on the 500-step model, seed 0: 1 to 3 of the 342 head sets per
    sampling seed came out different that way; none with the cached forward's logits, sampling seeds 0 to 3)."""
    model = copy.deepcopy(model).eval()
    cache, seqs, new = KVCache.for_model(model, prompts.size(0)), prompts, prompts
    with torch.no_grad():
        for _ in range(lora.NEW_TOKENS):
            new = plain_draw(forward_with_cache(model, new, cache)[:, -1].softmax(-1), gen)
            seqs = torch.cat([seqs, new], dim=1)
    return seqs


def plain_sampled_poems(model: torch.nn.Module, seed: int) -> list[list[str]]:
    """PER_SEED poems per held-out head set at temperature 1 (``cached_rows``, one generator seeded ``seed``)."""
    prompts = torch.tensor([lora.prompt_ids(h) for h in heads()]).repeat_interleave(PER_SEED, dim=0)
    seqs = cached_rows(model, prompts, torch.Generator().manual_seed(seed))
    texts = [lora.decode(row[prompts.size(1):].tolist()).split("\n")[0] for row in seqs]
    return [texts[i * PER_SEED : (i + 1) * PER_SEED] for i in range(len(heads()))]


@cache
def capable_greedy(seed: int) -> list[str]:
    return plain_greedy_poems(capable_net(seed))


@cache
def capable_first_seed() -> list[list[str]]:
    """Sampling seed 0 for the 500-step model of training seed 0, redrawn by the plain loop."""
    return plain_sampled_poems(capable_net(0), SEEDS[0])


def greedy(name: str) -> list[str]:
    return capable_greedy(int(name[-1])) if name in CAPABLE else lora.greedy_poems(name)[0]


@cache
def fact_artifact() -> bool:
    """The comparison was made on the held-out heads with the stated settings, its greedy poems are what each model
    writes, and its first sampling seed of the 500-step model (seed 0) is what a plain sampling loop draws."""
    r = comparison()
    s = r["settings"]
    if (s["temperature"], tuple(s["sample_seeds"]), s["per_seed"], tuple(s["ks"])) != (
        1.0,
        SEEDS,
        PER_SEED,
        (1, 2, 4, 8),
    ):
        return False
    if r["heads"] != heads() or sorted(r["runs"]) != sorted(ALL):
        return False
    if any(len(ps) != N for name in ALL for ps in poems(name)):
        return False
    if any(r["runs"][name]["greedy_poems"] != greedy(name) for name in ALL):
        return False
    return [ps[:PER_SEED] for ps in poems("capable-0")] == capable_first_seed()


def checked(check):
    """A claim's check, after the artifact is checked to be what the models write."""

    def run(stated):
        return check(stated) if fact_artifact() else "the comparison artifact is not what the models write"

    return run


# --------------------------------------------------------------------------- rates, recounted


def line_rate(name: str, shift: int = 0, seed: int | None = None) -> tuple[int, int]:
    """Line heads hit / lines, over the sampled poems (one sampling seed's, or all), against the heads of prompt
    i + shift."""
    hs = heads()
    hit = total = 0
    for i, ps in enumerate(poems(name)):
        if seed is not None:
            ps = ps[seed * PER_SEED : (seed + 1) * PER_SEED]
        target = hs[(i + shift) % len(hs)]
        hit += sum(hits(target, p) for p in ps)
        total += 4 * len(ps)
    return hit, total


def pct(pair: tuple[int, int]) -> float:
    return 100 * pair[0] / pair[1]


def sampled(name: str) -> float:
    return pct(line_rate(name))


def control(name: str) -> float:
    return pct(line_rate(name, shift=1))


def interval(name: str) -> tuple[float, float]:
    lo, hi = wilson(*line_rate(name))
    return 100 * lo, 100 * hi


def greedy_rate(name: str) -> float:
    return 100 * sum(hits(h, p) for h, p in zip(heads(), greedy(name), strict=True)) / (4 * len(heads()))


def counts_all4(name: str) -> list[int]:
    return [sum(hits(h, p) == 4 for p in ps) for h, ps in zip(heads(), poems(name), strict=True)]


def pass_at(name: str, k: int) -> float:
    c = counts_all4(name)
    return sum(pass_k(N, x, k) for x in c) / len(c)


def share(name: str, test) -> float:
    flat = [p for ps in poems(name) for p in ps]
    return 100 * sum(map(test, flat)) / len(flat)


@cache
def floors() -> dict[str, tuple[str, float]]:
    train = [lora.heads_of(p) for p in lora.usable(lora.corpus()["train"])]
    overall = collections.Counter("".join(train)).most_common(1)[0][0]
    by_position = "".join(collections.Counter(h[k] for h in train).most_common(1)[0][0] for k in range(4))
    out = {}
    for name, guess in (("commonest", overall * 4), ("per_position", by_position)):
        out[name] = (
            guess,
            100 * sum(g == c for h in heads() for g, c in zip(guess, h, strict=True)) / (4 * len(heads())),
        )
    return out


def held_loss(model: torch.nn.Module) -> float:
    inputs, labels = lora.held_rows()
    with torch.no_grad():
        logits = model(inputs)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100).item()


@cache
def capable_loss() -> float:
    return (held_loss(capable_net(0)) + held_loss(capable_net(1))) / 2


@cache
def corpus_rates(part: str) -> tuple[int, float, float, float]:
    ps = lora.corpus()[part]
    return (
        len(ps),
        100 * sum(map(lora.form_ok, ps)) / len(ps),
        100 * sum(lora.written(p) == lora.heads_of(p)[:4] and len(lora.heads_of(p)) == 4 for p in ps) / len(ps),
        100 * sum(map(rhyme_ok, ps)) / len(ps),
    )


def fact_rhyme_examples() -> bool:
    """Both quoted poems are in the corpus and fail the rhyme check, with the stated modern groups; the commonest
    pair of groups among all failing poems is 灰堆 with 一七 (either order)."""
    first = "朱實山下開，清香寒更發。幸與叢桂花，窗前向秋月。"
    second = "竹吹留歌扇，蓮香入舞衣。前溪多曲漵，乘興莫先歸。"
    every = lora.corpus()["all"]
    if first not in every or second not in every or rhyme_ok(first) or rhyme_ok(second):
        return False
    if (group_of("發"), group_of("月"), group_of("衣"), group_of("歸")) != ("发花", "乜斜", "一七", "灰堆"):
        return False
    pairs = collections.Counter(
        frozenset((group_of(ends(p)[1]), group_of(ends(p)[3]))) for p in every if lora.form_ok(p) and not rhyme_ok(p)
    )
    return pairs.most_common(1)[0][0] == frozenset(("灰堆", "一七"))


def fact_one_in_five() -> bool:
    every = lora.corpus()["all"]
    failing = sum(not rhyme_ok(p) for p in every) / len(every)
    return 0.15 < failing < 0.2


@cache
def variant_flags() -> list[bool]:
    """For each usable held-out poem: a training poem of the same length differs from it in at most 2 places."""
    held = lora.corpus()["held"]
    usable = set(lora.usable(held))
    return [n <= 2 for p, n in zip(held, nearest_training_poem(), strict=True) if p in usable]


def variant_rates(name: str) -> tuple[float, float, int, int]:
    """Line-head hit rate on the prompts with a variant in training, on the others; how many of each."""
    flags = variant_flags()
    groups = {True: [0, 0], False: [0, 0]}
    for h, ps, v in zip(heads(), poems(name), flags, strict=True):
        groups[v][0] += sum(hits(h, p) for p in ps)
        groups[v][1] += 4 * len(ps)
    return (
        100 * groups[True][0] / groups[True][1],
        100 * groups[False][0] / groups[False][1],
        sum(flags),
        len(flags) - sum(flags),
    )


def fact_variants_lower() -> bool:
    """Both seeds hit less on the variant prompts than on the others; the artifact's variant flags are the ones
    recomputed here."""
    if comparison()["variant"] != variant_flags():
        return False
    return all(variant_rates(name)[0] < variant_rates(name)[1] for name in CAPABLE)


def row(name: str):
    return (
        lambda: sampled(name),
        lambda: interval(name)[0],
        lambda: interval(name)[1],
        lambda: control(name),
        lambda: greedy_rate(name),
        lambda: pass_at(name, 1),
        lambda: pass_at(name, 8),
        lambda: share(name, lora.form_ok),
        lambda: share(name, rhyme_ok),
    )


def fact_settings() -> bool:
    s = capable_sft.CAPABLE_SETTINGS
    return (s.steps, s.batch_size) == (STEPS, BATCH) and capable_sft.SEEDS == (0, 1)


def seed_spread() -> tuple[float, float]:
    rates = [pct(line_rate("capable-0", seed=s)) for s in range(len(SEEDS))]
    return min(rates), max(rates)


def fact_half_widths() -> bool:
    return all((interval(n)[1] - interval(n)[0]) / 2 < 1 for n in CAPABLE)


def per_prompt_rates(name: str, shift: int = 0) -> list[float]:
    """Each head set's line-head hit rate (its 8 poems, 32 lines), against the heads of prompt i + shift."""
    hs = heads()
    return [sum(hits(hs[(i + shift) % len(hs)], p) for p in ps) / (4 * len(ps)) for i, ps in enumerate(poems(name))]


@cache
def prompt_half(name: str) -> float:
    """Half the width of the per-prompt 95% interval, in points: 1.96 standard errors of the 342 per-prompt rates."""
    from scipy.stats import sem

    return 100 * 1.959964 * float(sem(per_prompt_rates(name)))


def line_half(name: str) -> float:
    lo, hi = interval(name)
    return (hi - lo) / 2


def fact_per_prompt_wider() -> bool:
    """「按藏头算的区间宽到两倍多」: per prompt the interval is between 2 and 3 times as wide as per line, for both
    500-step models (on an AMD EPYC, 2026-12: 2.19 / 0.920 = 2.38 and 2.26 / 0.935 = 2.42)."""
    return all(2 < prompt_half(n) / line_half(n) < 3 for n in CAPABLE)


def fact_seed_gap_beyond_intervals() -> bool:
    """「超出了各自的区间」: the two training seeds differ by more than the larger per-prompt half width (each seed's
    rate lies outside the other's interval, counted the wider way), and by more than 3 points (「好几个百分点」); on an
    AMD EPYC: 6.60 against 2.26."""
    gap = abs(sampled("capable-1") - sampled("capable-0"))
    return gap > 3 and gap > max(prompt_half(n) for n in CAPABLE) and all(
        prompt_half(n) > line_half(n) for n in CAPABLE
    )


def paired_z(name: str) -> float:
    """Sampled hit rate minus the control's, per prompt (the same poems against the heads of prompt i and i + 1), in
    standard errors of the mean of the 342 paired differences."""
    from scipy.stats import sem

    d = [a - b for a, b in zip(per_prompt_rates(name), per_prompt_rates(name, shift=1), strict=True)]
    return sum(d) / len(d) / float(sem(d))


def fact_about_the_control(names) -> bool:
    """「和对照差不多」「几乎一样」: each model's sampled hit rate is within half a percentage point of its control's,
    per prompt on average (on an AMD EPYC, 2026-12: 0.22 against 0.25, 0.35 / 0.29, 0.44 / 0.46, 0.34 / 0.43 and
    0.37 / 0.37 for base, r=1, r=4, r=8 and the 80-step model; the 500-step models are 40 points above theirs).
    A margin, not a significance test: with no true difference, |z| > 1.96 happens one time in twenty for each model,
    so five models on another machine's samples would fail about one time in four (here z = -0.42 to 0.72)."""
    return all(abs(statistics.fmean(per_prompt_rates(n)) - statistics.fmean(per_prompt_rates(n, shift=1))) < 0.005
               for n in names)


LINE_MARKS = "，。"


@cache
def head_step_probabilities(name: str) -> tuple[float, float, float, bool]:
    """The 500-step model's every sampling seed redrawn (``cached_rows``, the same draws as the artifact's), and at
    every step that may start a line the probability it gives that line's required head character.

    A line's head is the first character after the prompt or after a run of 「，」「。」 (``lora.heads_of`` skips empty
    lines, so a step right after a mark may be followed by another mark: every such step counts, and the head is
    drawn at exactly one of them). The hits of a line are the sum over those steps of 「drew the required character」,
    whose expectation given the prefix is the probability: the hit rate estimates the mean probability, off by
    sqrt(sum p (1 - p)) / lines at one standard error. Returns the mean probability and the hit rate, in percent, that
    standard error in points, and whether the redrawn poems are the artifact's."""
    model = capable_net(int(name[-1]))
    hs = heads()
    marks, newline = set(lora.encode(LINE_MARKS)), lora.encode("\n")[0]
    prompts = torch.tensor([lora.prompt_ids(h) for h in hs]).repeat_interleave(PER_SEED, dim=0)
    start = prompts.size(1)
    probs: list[float] = []
    hit = lines = 0
    same = True
    for s in SEEDS:
        seqs = cached_rows(model, prompts, torch.Generator().manual_seed(s))
        with torch.no_grad():
            p_next = model(seqs[:, :-1]).softmax(-1)
        texts = [lora.decode(row[start:].tolist()).split("\n")[0] for row in seqs]
        same &= [texts[i * PER_SEED : (i + 1) * PER_SEED] for i in range(len(hs))] == [
            ps[s * PER_SEED : (s + 1) * PER_SEED] for ps in poems(name)
        ]
        for b, row in enumerate(seqs[:, start:].tolist()):
            target, started, at_start = lora.encode(hs[b // PER_SEED]), 0, True
            for j, token in enumerate(row):
                if at_start and started < 4:
                    probs.append(p_next[b, start - 1 + j, target[started]].item())
                if token == newline:
                    break
                if token in marks:
                    at_start = True
                elif at_start:
                    started, at_start = started + 1, False
            hit += hits(hs[b // PER_SEED], texts[b])
            lines += 4
    se = math.sqrt(sum(p * (1 - p) for p in probs)) / lines
    return 100 * sum(probs) / lines, 100 * hit / lines, 100 * se, same


def fact_head_below_half() -> bool:
    """「平均只给这个字不到一半的概率……句首命中率量出来的正是这个平均……一半以上的句首抽到了别的字」: for both
    500-step models, the redrawn poems are the artifact's, the mean probability of the required head and the sampled
    hit rate are both below 50%, and they agree within 4 standard errors (the two are equal in expectation, so
    this checks the computation, not a reading: 1.96 would fail one machine in twenty). On an AMD EPYC, 2026-12:
    mean probability 40.96% and 47.71%, hit rate 40.69% and 47.29%, z = -0.91 and -1.42."""
    for n in CAPABLE:
        mean_p, rate, se, same = head_step_probabilities(n)
        if not same or mean_p >= 50 or rate >= 50 or abs(rate - mean_p) >= 4 * se:
            return False
    return True


def fact_greedy_takes_the_head() -> bool:
    """「要求的字常常就是最可能的那一个」: greedy decoding writes the required head in more than half of the lines,
    for both 500-step models (on an AMD EPYC, 2026-12: 63.52% and 70.39%)."""
    return all(greedy_rate(n) > 50 for n in CAPABLE)


@cache
def training_draws(seed: int) -> collections.Counter:
    """How often each training sample is drawn by the 500-step fine-tuning of this seed: ``finetune`` draws each
    batch with ``torch.randint`` (with replacement) from a generator seeded with the seed; replayed here."""
    n = len(lora.usable(lora.corpus()["train"]))
    gen = torch.Generator().manual_seed(seed)
    counts: collections.Counter = collections.Counter()
    for _ in range(STEPS):
        counts.update(torch.randint(0, n, (BATCH,), generator=gen).tolist())
    return counts


def fact_drawn_with_replacement() -> bool:
    """The fine-tuning draws its batches as replayed in ``training_draws``; for each seed some samples are drawn 5
    times or more and some never (on an AMD EPYC as anywhere, integers: at most 10 and 9 times; 242 and 277 of 3,193
    never); the two seeds draw different samples."""
    import inspect

    import lora_train

    source = inspect.getsource(lora_train.finetune)
    if ("gen = torch.Generator().manual_seed(s.seed)" not in source
            or "torch.randint(0, train.inputs.size(0), (s.batch_size,), generator=gen)" not in source):
        return False
    n = len(lora.usable(lora.corpus()["train"]))
    draws = [training_draws(seed) for seed in capable_sft.SEEDS]
    return all(len(d) < n and max(d.values()) >= 5 for d in draws) and set(draws[0]) != set(draws[1])


def variant_z(name: str) -> float:
    """The per-prompt hit rate on the prompts with a variant in training minus on the others, in standard errors of
    that difference (two groups of prompts, unequal variances)."""
    from scipy.stats import sem

    rates, flags = per_prompt_rates(name), variant_flags()
    a = [r for r, f in zip(rates, flags, strict=True) if f]
    b = [r for r, f in zip(rates, flags, strict=True) if not f]
    return (sum(a) / len(a) - sum(b) / len(b)) / math.hypot(float(sem(a)), float(sem(b)))


def fact_variant_gap_is_noise() -> bool:
    """「差不到三个标准误，不值得去解释」: per prompt, the difference is within 3 standard errors for both seeds (on an
    AMD EPYC, 2026-12: z = -1.14 and -1.49). Three, not 1.96: the 28 prompts are a subgroup picked after the fact, and
    the sentence says only that a gap this size is not worth explaining; the computed z's are on the page."""
    return all(abs(variant_z(n)) < 3 for n in CAPABLE)


def fact_float_binomials_overflow() -> bool:
    """Binomials in floating point overflow for large n (C(2000, 1000) is about 10^600), while every factor of the
    product 1 - k / i (i from n - c + 1 to n, n - c >= k) lies strictly between 0 and 1."""
    from scipy.special import comb

    if math.isfinite(comb(2000, 1000)):
        return False
    return all(0 < 1 - k / i < 1 for n in range(1, 60) for c in range(n) for k in range(1, n - c + 1)
               for i in range(n - c + 1, n + 1))


def fact_wilson_coverage() -> bool:
    """「大约 95% 的区间会盖住那个真正的比例」: with n = 342, the exact coverage of the 95% Wilson interval (the
    binomial probability of every count whose interval holds p) is between 93% and 98% for p from 1% to 99% (from
    93.9% at p = 0.05 to 97.7% at p = 0.01: near 0 and 1 the Wilson interval is a little conservative)."""
    from scipy.stats import binom

    n = len(heads())
    bounds = [wilson(k, n) for k in range(n + 1)]
    for p in (0.01, 0.03, 0.1, 0.25, 0.4, 0.5, 0.7, 0.9, 0.99):
        covered = sum(binom.pmf(k, n, p) for k, (lo, hi) in enumerate(bounds) if lo <= p <= hi)
        if not 0.93 <= covered <= 0.98:
            return False
    return True


def fact_stage_two_on_the_floor() -> bool:
    """The five stage-1/2 models: greedy hit rate at most the per-position floor; none writes a poem with all four
    heads; each one's sampled hit rate is about its control's (``fact_about_the_control``); the 80-step model's greedy
    poems are all well formed."""
    if any(greedy_rate(n) > floors()["per_position"][1] + 1e-9 for n in STAGE_TWO):
        return False
    if any(max(counts_all4(n)) > 0 for n in STAGE_TWO):
        return False
    return fact_about_the_control(STAGE_TWO) and lora.well_formed("full") == 1.0


def fact_capable_use_the_prompt() -> bool:
    return all(interval(n)[0] > 10 * control(n) and greedy_rate(n) > sampled(n) + 10 for n in CAPABLE)


CLAIMS: list[Claim] = [
    Claim(
        "stage two loss",
        "article",
        rf"验证集上的 SFT 损失从 {N_} 降到 {N_}，格式也学会了，可 {N_} 组藏头一首也没写成",
        lambda st: (
            approx(lambda: lora.held_loss("base"), lambda: lora.held_loss("full"), lambda: len(heads()))(st)
            or (None if lora.success("full") == 0 else "a poem succeeded")
        ),
    ),
    Claim(
        "80 steps against the floor",
        "article",
        rf"句首对上的只有 {P}，而一个每句都写「不」的模型就能对上 {P}",
        approx(lambda: 100 * lora.line_hits("full"), lambda: floors()["commonest"][1]),
    ),
    Claim(
        "epochs",
        "article",
        rf"500 步、每步从训练集的 {N_} 条样本里有放回地随机抽 (\d+) 条，一共抽了约 {N_} 遍训练集那么多条"
        r"（有的样本抽到好几次，有的一次也没抽到）",
        lambda st: (
            (None if fact_settings() else "settings differ")
            or (None if fact_drawn_with_replacement() else "the batches are not drawn as stated")
            or approx(
                lambda: len(lora.usable(lora.corpus()["train"])),
                lambda: BATCH,
                lambda: STEPS * BATCH / len(lora.usable(lora.corpus()["train"])),
            )(st)
        ),
    ),
    Claim(
        "capable loss and hits",
        "article",
        rf"验证集上的 SFT 损失是 {N_}（两个种子的平均），比 80 步的 {N_} 又低了 {N_}；按温度 1 采样写出的诗里，"
        rf"句首对上的比例，两个种子分别是 {P} 和 {P}",
        checked(
            approx(
                capable_loss,
                lambda: lora.held_loss("full"),
                lambda: lora.held_loss("full") - capable_loss(),
                lambda: sampled("capable-0"),
                lambda: sampled("capable-1"),
            )
        ),
    ),
    Claim(
        "loss drops",
        "article",
        rf"前 80 步把损失降了 {N_}，藏头一点没学会；后面这 {N_}",
        approx(
            lambda: lora.held_loss("base") - lora.held_loss("full"), lambda: lora.held_loss("full") - capable_loss()
        ),
    ),
    Claim(
        "from the floor to forty-odd percent",
        "article",
        r"换来的却是从地板到四成多",
        # 「四成多」: both seeds' sampled hit rates between 40% and 50% (on an AMD EPYC, 2026-12: 40.69% and 47.29%;
        # the margin of seed 0, 0.69 points, is some 75 of 10,944 lines, far more than another CPU moves)
        checked(holds(lambda: all(40 < sampled(n) < 50 for n in CAPABLE))),
    ),
    *[
        Claim(
            f"corpus {part}",
            "article",
            rf"^\| {label} \| {N_} \| {P} \| {P} \| {P} \|$",
            approx(*[lambda part=part, i=i: corpus_rates(part)[i] for i in range(4)]),
        )
        for part, label in (("train", "训练集"), ("held", "验证集"))
    ],
    Claim(
        "rhyme: entering tone",
        "article",
        r"「發」「月」在平水韵里同属入声「月」韵，今天一个读 fā（发花辙），一个读 yuè（乜斜辙）",
        holds(fact_rhyme_examples),
    ),
    Claim("rhyme: commonest failure", "article", r"最常见的就是灰堆辙配一七辙这一种", holds(fact_rhyme_examples)),
    Claim("rhyme: one in five", "article", r"押韵这一关，原作有将近五分之一过不去", holds(fact_one_in_five)),
    Claim(
        "floors",
        "article",
        rf"每句都写「不」，验证集 {N_} 组藏头的 {N_} 句里能对上 {P}；按位置猜.*猜出来是「一不不不」）能对上 {P}",
        lambda st: (
            (
                None
                if floors()["per_position"][0] == "一不不不" and floors()["commonest"][0] == "不不不不"
                else "other guesses"
            )
            or approx(
                lambda: len(heads()),
                lambda: 4 * len(heads()),
                lambda: floors()["commonest"][1],
                lambda: floors()["per_position"][1],
            )(st)
        ),
    ),
    Claim(
        "controls",
        "article",
        rf"「对照」一栏都在 {P} 到 {P} 之间，比地板还低",
        checked(
            lambda st: (
                approx(lambda: min(map(control, ALL)), lambda: max(map(control, ALL)))(st)
                or (None if max(map(control, ALL)) < floors()["commonest"][1] else "a control is above the floor")
            )
        ),
    ),
    Claim(
        "80 steps against its control",
        "article",
        rf"80 步的全参数微调采样命中 {P}，对照 {P}，几乎一样；它贪心写的诗，命中率也不超过地板",
        checked(
            lambda st: (
                approx(lambda: sampled("full"), lambda: control("full"))(st)
                or (None if fact_stage_two_on_the_floor() else "not about its control, or greedy above the floor")
            )
        ),
    ),
    Claim("what an interval covers", "article", r"大约 95% 的区间会盖住那个真正的比例", holds(fact_wilson_coverage)),
    Claim(
        "sampling seeds",
        "article",
        rf"每个模型用 (\d+) 个采样种子各写 (\d+) 首：500 步微调（种子 0）在四个采样种子上的"
        rf"句首命中率在 {P} 到 {P} 之间，相差 {N_} 个百分点",
        checked(
            approx(lambda: len(SEEDS), lambda: PER_SEED, lambda: seed_spread()[0], lambda: seed_spread()[1],
                   lambda: seed_spread()[1] - seed_spread()[0])
        ),
    ),
    Claim(
        "training seeds",
        "article",
        rf"两个训练种子的句首命中率分别是 {P} 和 {P}，差了 {N_} 个百分点，超出了各自的区间："
        rf"逐句算，区间的半宽不到 1 个百分点；按藏头算宽一些，半宽也只有 {N_} 和 {N_} 个百分点",
        checked(
            lambda st: (
                approx(
                    lambda: sampled("capable-0"),
                    lambda: sampled("capable-1"),
                    lambda: sampled("capable-1") - sampled("capable-0"),
                    lambda: prompt_half("capable-0"),
                    lambda: prompt_half("capable-1"),
                )(st)
                or (None if fact_half_widths() else "a half width is 1 point or more")
                or (None if fact_seed_gap_beyond_intervals() else "the seed gap is not far beyond the intervals")
            )
        ),
    ),
    Claim(
        "training seeds draw other samples",
        "article",
        r"换个种子再训练一次（抽到哪些样本、按什么顺序抽都不同）",
        holds(fact_drawn_with_replacement),
    ),
    Claim(
        "quoting the LoRA article",
        "article",
        r"第二阶段比较几种 LoRA 时说，每种方法只训练了一个种子，几种 LoRA 之间的小差别说明不了什么",
        holds(lambda: "每种方法只训练了一次（一个种子），几种 LoRA 之间的小差别说明不了什么"
              in lora.ARTICLE.read_text(encoding="utf-8")),  # the LoRA article's sentence, paraphrased
    ),
    Claim(
        "binomials overflow in floating point",
        "article",
        r"用浮点数直接算两个组合数，\$n\$ 大时它们会大到超出浮点数能表示的范围（溢出），相除得不出数；"
        r"写成连乘，每一项都在 0 和 1 之间",
        holds(fact_float_binomials_overflow),
    ),
    Claim(
        "naive pass@k",
        "article",
        rf"\$n=10\$、\$c=3\$、\$k=5\$ 时，它给出 {N_}",
        claims.rounded(lambda: 1 - (1 - 3 / 10) ** 5),
    ),
    Claim(
        "capable pass@k",
        "article",
        rf"pass@1 分别是 {N_} 和 {N_}，pass@8 分别是 {N_} 和 {N_}",
        checked(
            approx(
                lambda: pass_at("capable-0", 1),
                lambda: pass_at("capable-1", 1),
                lambda: pass_at("capable-0", 8),
                lambda: pass_at("capable-1", 8),
            )
        ),
    ),
    *[
        Claim(
            f"table {name}",
            "article",
            rf"^\| {label} \| {P} \| {P}–{P} \| {P} \| {P} \| {N_} \| {N_} \| {P} \| {P} \|$",
            checked(approx(*row(name))),
        )
        for name, label in (
            ("base", "第一阶段唐诗 GPT"),
            ("lora-1", "SFT LoRA r=1"),
            ("lora-4", "SFT LoRA r=4"),
            ("lora-8", "SFT LoRA r=8"),
            ("full", "SFT 全参数 80 步"),
            ("capable-0", r"SFT 全参数 500 步（种子 0）"),
            ("capable-1", r"SFT 全参数 500 步（种子 1）"),
        )
    ],
    Claim(
        "table note",
        "article",
        rf"每个模型给 {N_} 组藏头各采样写 (\d+) 首（温度 1，(\d+) 个采样种子各 (\d+) 首），"
        rf"句首命中逐句数（每个模型 {N_} 句）",
        approx(
            lambda: len(heads()),
            lambda: N,
            lambda: len(SEEDS),
            lambda: PER_SEED,
            lambda: 4 * N * len(heads()),
            exact=True,
        ),
    ),
    Claim(
        "table note floors",
        "article",
        rf"两条地板：每句都写「不」{P}，按位置猜 {P}",
        approx(lambda: floors()["commonest"][1], lambda: floors()["per_position"][1]),
    ),
    Claim(
        "stage two reading",
        "article",
        r"贪心的命中率都不超过按位置猜的地板：它们写诗不看藏头。80 步微调的格式学得很好"
        r"（贪心写的诗全部格式正确）",
        checked(holds(fact_stage_two_on_the_floor)),
    ),
    Claim(
        "capable reading",
        "article",
        r"500 步的两个模型，采样的句首命中率远在对照之上",
        checked(holds(fact_capable_use_the_prompt)),
    ),
    Claim("capable greedy", "article", r"这两个模型贪心解码比采样高得多", checked(holds(fact_capable_use_the_prompt))),
    Claim(
        "greedy takes the head",
        "article",
        r"到了句首那一步，要求的字常常就是最可能的那一个，贪心就总取它",
        checked(holds(fact_greedy_takes_the_head)),
    ),
    Claim(
        "sampling draws the head by its probability",
        "article",
        rf"可模型平均只给这个字不到一半的概率；采样按概率抽，句首命中率量出来的正是这个平均（{P} 和 {P}），"
        r"一半以上的句首抽到了别的字",
        checked(
            lambda st: (
                approx(lambda: sampled("capable-0"), lambda: sampled("capable-1"))(st)
                or (None if fact_head_below_half() else "the head's mean probability is not below half, as sampled")
            )
        ),
    ),
    Claim(
        "pass ratio",
        "article",
        rf"写 8 首挑一首，成的机会是单写一首的 {N_} 倍和 {N_} 倍",
        checked(
            approx(
                lambda: pass_at("capable-0", 8) / pass_at("capable-0", 1),
                lambda: pass_at("capable-1", 8) / pass_at("capable-1", 1),
            )
        ),
    ),
    Claim(
        "capable rhyme",
        "article",
        rf"500 步的模型采样写的诗只有 {P} 和 {P} 押韵",
        checked(approx(lambda: share("capable-0", rhyme_ok), lambda: share("capable-1", rhyme_ok))),
    ),
    Claim(
        "variants",
        "article",
        rf"验证集的 {N_} 首里，有 {N_} 首在训练集里能找到字数相同、至多两处不同的一首.*还有 {N_} 组藏头"
        r"和训练集里某首诗的藏头一模一样",
        approx(
            lambda: len(heads()), lambda: sum(variant_flags()), lambda: lora.held_heads_seen_in_training(), exact=True
        ),
    ),
    Claim(
        "variant rates",
        "article",
        rf"种子 0 是 {P}、种子 1 是 {P}；在其余 {N_} 组上是 {P} 和 {P}",
        checked(
            approx(
                lambda: variant_rates("capable-0")[0],
                lambda: variant_rates("capable-1")[0],
                lambda: variant_rates("capable-0")[3],
                lambda: variant_rates("capable-0")[1],
                lambda: variant_rates("capable-1")[1],
            )
        ),
    ),
    Claim(
        "variant conclusion",
        "article",
        rf"撞车没有让成绩虚高：有异文的藏头并没有更高。它们看上去还低一些，可只有 {N_} 组（{N_} 句）；"
        rf"按藏头算（每组一个命中率），两个种子上只低了 {N_} 和 {N_} 个标准误。"
        r"这 28 组是事后按「有没有异文」挑出来的一小组，差不到三个标准误，不值得去解释",
        checked(
            lambda st: (
                approx(lambda: sum(variant_flags()), lambda: 4 * N * sum(variant_flags()), exact=True)(st[:2])
                or approx(lambda: -variant_z("capable-0"), lambda: -variant_z("capable-1"))(st[2:])
                or (None if fact_variants_lower() else "the variant prompts are not lower for both seeds")
                or (None if fact_variant_gap_is_noise() else "the gap is beyond 3 standard errors")
            )
        ),
    ),
    Claim(
        "pitfall floor",
        "article",
        rf"句首命中 {P} 听起来不是 0，可每句都写「不」就有 {P}",
        approx(lambda: 100 * lora.line_hits("full"), lambda: floors()["commonest"][1]),
    ),
    Claim(
        "summary",
        "article",
        rf"同一个微调训练到 500 步，采样的句首命中率是 {P} 和 {P}",
        checked(approx(lambda: sampled("capable-0"), lambda: sampled("capable-1"))),
    ),
    # the exercises' explanations
    Claim(
        "exercise: seed gap",
        "article",
        r"本文两个训练种子之间就差了好几个百分点，比区间的半宽大得多",
        checked(holds(fact_seed_gap_beyond_intervals)),
    ),
    Claim(
        "exercise: training seeds",
        "article",
        r"训练的种子决定抽到哪些样本、按什么顺序抽",
        holds(fact_drawn_with_replacement),
    ),
    Claim(
        "exercise: per-prompt wider",
        "article",
        r"逐句算会偏窄不少，本文按藏头算的区间宽到两倍多",
        checked(holds(fact_per_prompt_wider)),
    ),
    # captions
    Claim(
        "rates caption",
        "eval-model-rates",
        rf"验证集 {N_} 组藏头，每组按温度 1 采样写 (\d+) 首（(\d+) 个采样种子各 (\d+) 首）",
        checked(approx(lambda: len(heads()), lambda: N, lambda: len(SEEDS), lambda: PER_SEED, exact=True)),
    ),
    Claim(
        "rates caption floor",
        "eval-model-rates",
        r"每句都写训练集最常见的句首字「不」",
        holds(lambda: floors()["commonest"][0] == "不不不不"),
    ),
    Claim(
        "pass caption",
        "eval-pass-at-k",
        rf"验证集 {N_} 组藏头，每组采样写 (\d+) 首（温度 1）",
        checked(approx(lambda: len(heads()), lambda: N, exact=True)),
    ),
    Claim(
        "pass caption zeros",
        "eval-pass-at-k",
        r"第一、二阶段的五个模型一首也没写对",
        checked(holds(lambda: all(max(counts_all4(n)) == 0 for n in STAGE_TWO))),
    ),
    Claim("held-out prompts", "article", r"^(\d+) 组藏头是从一个大得多的", approx(lambda: len(heads()), exact=True)),
    Claim(
        "none of 342",
        "article",
        r"(\d+) 组一首没成，常见的写法给出 \$\[0,0\]\$.*Wilson 区间的上限还有 (\d+)% 多",
        approx(lambda: len(heads()), lambda: int(100 * wilson(0, len(heads()))[1]), exact=True),
    ),
    Claim(
        "independent prompts",
        "article",
        r"真正独立的单位是藏头，只有 (\d+) 组",
        approx(lambda: len(heads()), exact=True),
    ),
    Claim("same prompts", "article", r"同样的 (\d+) 组藏头、同样的采样设置", approx(lambda: len(heads()), exact=True)),
    Claim(
        "eight poems",
        "article",
        r"每组藏头写 (\d+) 首。500 步微调的两个模型.*写 (\d+) 首挑一首",
        approx(lambda: N, lambda: N, exact=True),
    ),
    Claim(
        "distinct greedy poems",
        "article",
        rf"80 步的全参数微调给 {N_} 组藏头贪心写出的只有 {N_} 首不同的诗，500 步的两个模型各写出 {N_} 首",
        lambda st: (
            (
                None
                if fact_artifact() and len(set(greedy("capable-0"))) == len(set(greedy("capable-1")))
                else "the two 500-step models write different numbers of distinct poems"
            )
            or approx(
                lambda: len(heads()),
                lambda: len(set(greedy("full"))),
                lambda: len(set(greedy("capable-0"))),
                exact=True,
            )(st)
        ),
    ),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.where}:{c.name}" for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


NOT_COMPUTED: dict[str, str] = {
    "95%": "the confidence level of every interval, a setting (z from the normal distribution)",
    "1.96": "the normal quantile for 95%, a constant of the formula",
    "80%": "quoted from Zheng et al. 2023 (arXiv:2306.05685), the abstract: over 80% agreement with humans",
    "1,250": "quoted from Zhang et al. 2024 (arXiv:2405.00332): GSM1k has 1,250 problems",
    "8%": "quoted from Zhang et al. 2024 (arXiv:2405.00332), the abstract of the latest version: drops of up to 8%",
    "13%": "quoted from Zhang et al. 2024 (arXiv:2405.00332), the abstract of the first version: up to 13%",
    "2107.03374": "Chen et al. 2021's arXiv identifier",
    "2306.05685": "Zheng et al. 2023's arXiv identifier",
    "2405.00332": "Zhang et al. 2024's arXiv identifier",
    "和 100% 比": "the ceiling the sentence contrasts with the corpus rate, not a result",
    "0.55": "the version of pypinyin the rhyme verifier uses (0.55.0)",
}
