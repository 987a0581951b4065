"""Every number (and every checkable statement) the GRPO article makes about a computation, recomputed.

Each entry of ``CLAIMS`` locates a sentence of ``docs/articles/grpo.md`` (or a figure's title and caption) and checks
the numbers it states. The artifact ``grpo-runs`` is read with ``torch.load`` (not through ``code/grpo_train.py``),
and first checked to be what the models write:

- the runs and their settings are the stated ones; the evaluations before training are the ``model-comparison``
  artifact's (read with ``torch.load`` too) for the 500-step model of seed 0 and the 80-step full fine-tuning, and
  their greedy poems are what those models write (the evaluation and LoRA claims' own loops without a KV cache);
- every GRPO policy (the stage-1 GPT's architecture, the parameters read from this artifact) rewrites its held-out
  poems greedily by a loop without a cache, and the policies of the two runs whose sampled poems the article reads
  closest (capable-0 and form-only) redraw their first sampling seed (the evaluation claims' ``cached_rows``), the
  same draws;
- every rate is then recounted from the stored poems with the evaluation claims' line-head count and the LoRA
  claims' form check; intervals from ``scipy.stats.binomtest`` (Wilson); character diversity and distinct poems in
  plain Python; the held-out head sets seen in training from the corpus file (the LoRA claims' split).

What cannot be recomputed without training again is read from the artifact and only checked for the sentence's
rounding and arithmetic: the per-step training records (reward, heads, form, KL, length, groups with equal scores).
"""

from __future__ import annotations

import copy
import math
import os
import sys
from functools import cache
from pathlib import Path

import pytest
import torch

from . import claims
from . import test_evaluation_claims as ev
from . import test_lora_claims as lora
from .claims import Claim, approx, holds

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "grpo.md"
FIGURES = CODE / "figures" / "grpo.py"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

RUNS = ("capable-0", "capable-1", "weak", "form-only")
STEPS, PROMPTS, GROUP, BETA, LR = 60, 8, 8, 0.02, 1e-3  # as the article states them
START = {"capable-0": "capable", "capable-1": "capable", "weak": "weak", "form-only": "capable"}
BEFORE_NAME = {"capable": "capable-0", "weak": "full"}  # the model-comparison runs the starts are
SAMPLE_SEEDS, PER_SEED, N = (0, 1, 2, 3), 2, 8
REDRAWN = ("capable-0", "form-only")  # the runs whose first sampling seed is redrawn here
N_ = claims.NUM  # a number as written, or a {{ value:name }} the page computes
P = claims.PCT


# --------------------------------------------------------------------------- the artifacts, read plainly


@cache
def data() -> dict:
    return torch.load(os.environ["LLM_ARTIFACT_GRPO_RUNS"], weights_only=True)


@cache
def comparison() -> dict:
    return torch.load(os.environ["LLM_ARTIFACT_MODEL_COMPARISON"], weights_only=True)


def run(name: str) -> dict:
    return data()["runs"][name]


def evaluation(name: str, when: str) -> dict:
    """The stored evaluation of a run's start ("before") or of its policy ("after") on the held-out heads."""
    return data()["before"][run(name)["start"]] if when == "before" else run(name)["after"]


def heads() -> list[str]:
    return lora.held_heads()


@cache
def policy(name: str) -> torch.nn.Module:
    model = copy.deepcopy(lora.base())
    model.load_state_dict(run(name)["state"])
    return model.eval()


@cache
def plain_greedy(name: str) -> list[str]:
    return ev.plain_greedy_poems(policy(name))


@cache
def plain_first_seed(name: str) -> list[list[str]]:
    """Sampling seed 0 redrawn by the evaluation claims' plain loop (as they redraw the 500-step model)."""
    assert (PER_SEED, SAMPLE_SEEDS) == (ev.PER_SEED, ev.SEEDS)
    return ev.plain_sampled_poems(policy(name), SAMPLE_SEEDS[0])


def settings_as_stated() -> bool:
    for name in RUNS:
        s = run(name)["settings"]
        beta, kind = (0.0, "form") if name == "form-only" else (BETA, "heads+form")
        seed = 1 if name == "capable-1" else 0
        if (s["steps"], s["prompts"], s["group"], s["temperature"], s["lr"], s["beta"], s["reward"], s["seed"],
                s["per_sequence"], run(name)["start"]) != (STEPS, PROMPTS, GROUP, 1.0, LR, beta, kind, seed, True,
                                                           START[name]):
            return False
    return True


@cache
def fact_artifact() -> bool:
    """The runs and settings are the stated ones; the evaluations before training are the comparison's, whose greedy
    poems those models write; every policy's greedy poems, and two policies' first sampling seed, are what the
    stored parameters write."""
    if tuple(data()["runs"]) != RUNS or not settings_as_stated() or data()["heads"] != heads():
        return False
    for start, key in BEFORE_NAME.items():
        stored, theirs = data()["before"][start], comparison()["runs"][key]
        if stored["poems"] != theirs["poems"] or stored["greedy_poems"] != theirs["greedy_poems"]:
            return False
    if data()["before"]["capable"]["greedy_poems"] != ev.capable_greedy(0):
        return False
    if data()["before"]["weak"]["greedy_poems"] != lora.greedy_poems("full")[0]:
        return False
    for name in RUNS:
        after = run(name)["after"]
        if any(len(ps) != N for ps in after["poems"]) or after["greedy_poems"] != plain_greedy(name):
            return False
    return all([ps[:PER_SEED] for ps in run(name)["after"]["poems"]] == plain_first_seed(name) for name in REDRAWN)


def checked(check):
    def run_check(stated):
        return check(stated) if fact_artifact() else "the artifact is not what the models write"

    return run_check


# --------------------------------------------------------------------------- rates, recounted


def poems(name: str, when: str) -> list[list[str]]:
    return evaluation(name, when)["poems"]


def line_count(name: str, when: str, only: set[str] | None = None, keep: bool = True) -> tuple[int, int]:
    """Line heads hit / lines over the sampled poems; ``only``: just the head sets in (keep) or not in (not keep) it."""
    hit = total = 0
    for h, ps in zip(heads(), poems(name, when), strict=True):
        if only is not None and (h in only) != keep:
            continue
        hit += sum(ev.hits(h, p) for p in ps)
        total += 4 * len(ps)
    return hit, total


def form_count(name: str, when: str) -> tuple[int, int]:
    flat = [p for ps in poems(name, when) for p in ps]
    return sum(map(lora.form_ok, flat)), len(flat)


pct = ev.pct


def interval(pair: tuple[int, int]) -> tuple[float, float]:
    lo, hi = ev.wilson(*pair)
    return 100 * lo, 100 * hi


def heads_rate(name: str, when: str) -> float:
    return pct(line_count(name, when))


def form_rate(name: str, when: str) -> float:
    return pct(form_count(name, when))


def greedy_rate(name: str, when: str) -> float:
    ps = evaluation(name, when)["greedy_poems"]
    return 100 * sum(ev.hits(h, p) for h, p in zip(heads(), ps, strict=True)) / (4 * len(ps))


def all_four_pass8(name: str, when: str) -> float:
    counts = [sum(ev.hits(h, p) == 4 for p in ps) for h, ps in zip(heads(), poems(name, when), strict=True)]
    return sum(ev.pass_k(N, c, 8) for c in counts) / len(counts)


def all_four_pass1(name: str, when: str) -> float:
    counts = [sum(ev.hits(h, p) == 4 for p in ps) for h, ps in zip(heads(), poems(name, when), strict=True)]
    return sum(ev.pass_k(N, c, 1) for c in counts) / len(counts)


def char_diversity(name: str, when: str) -> float:
    chars = [c for ps in poems(name, when) for p in ps for c in p if "\u4e00" <= c <= "\u9fff"]
    return len(set(chars)) / len(chars)


def distinct_poems(name: str, when: str) -> float:
    flat = [p for ps in poems(name, when) for p in ps]
    return len(set(flat)) / len(flat)


@cache
def train_head_sets() -> frozenset[str]:
    return frozenset(lora.heads_of(p) for p in lora.usable(lora.corpus()["train"]))


def seen_count(name: str, when: str, seen: bool) -> tuple[int, int]:
    return line_count(name, when, set(train_head_sets()), keep=seen)


def n_seen() -> int:
    return sum(h in train_head_sets() for h in heads())


def fact_intervals_apart(name: str, metric) -> bool:
    lo_after, _ = interval(metric(name, "after"))
    _, hi_before = interval(metric(name, "before"))
    return lo_after > hi_before


def fact_intervals_overlap(name: str, metric) -> bool:
    a, b = interval(metric(name, "after")), interval(metric(name, "before"))
    return a[0] <= b[1] and b[0] <= a[1]


# --------------------------------------------------------------------------- training records (read, not retrained)


def history(name: str) -> dict:
    return run(name)["history"]


def flat_share(name: str) -> float:
    flat = history(name)["flat_groups"]
    return sum(flat) / (len(flat) * PROMPTS)


def tail(name: str, key: str, n: int = 5) -> float:
    xs = history(name)[key]
    return sum(xs[-n:]) / n


def head(name: str, key: str, n: int = 5) -> float:
    xs = history(name)[key]
    return sum(xs[:n]) / n


def fact_history_shape() -> bool:
    return all(len(history(name)[key]) == STEPS for name in RUNS for key in history(name))


def control_rate(name: str, when: str) -> float:
    """The same sampled poems scored against the next head set's heads (the evaluation article's control)."""
    hs, ps = heads(), poems(name, when)
    hit = sum(ev.hits(hs[(i + 1) % len(hs)], p) for i, group in enumerate(ps) for p in group)
    return 100 * hit / (4 * sum(len(group) for group in ps))


def training_head_lines(name: str) -> float:
    """Line heads hit in all the poems written during training: the per-step mean per poem times the poems."""
    return sum(x * PROMPTS * GROUP for x in history(name)["heads"])


def last_flat(name: str, steps: int = 10) -> int:
    return sum(history(name)["flat_groups"][-steps:])


def diversity_ratio(name: str) -> float:
    return char_diversity(name, "after") / char_diversity(name, "before")


def fact_capable_rise() -> bool:
    """Both GRPO seeds from the 500-step model: line heads and form up, each with the intervals apart."""
    return all(fact_intervals_apart(n, line_count) and fact_intervals_apart(n, form_count)
               for n in ("capable-0", "capable-1"))


def rise(name: str, key: str) -> float:
    """The mean of the last 10 training steps' ``key`` minus the first 10's."""
    return tail(name, key, 10) - head(name, key, 10)


def fact_seed_gap_small() -> bool:
    gap = abs(heads_rate("capable-0", "after") - heads_rate("capable-1", "after"))
    return gap < min(heads_rate(n, "after") - heads_rate(n, "before") for n in ("capable-0", "capable-1"))


def fact_pass1_up() -> bool:
    """pass@1 up in both seeds."""
    return all(all_four_pass1(n, "after") > all_four_pass1(n, "before") for n in SEEN)


def fact_hack_narrows_most() -> bool:
    """「只降了」: both normal runs keep at least 10 points more of the character diversity than the hacked one."""
    return all(diversity_ratio(n) - diversity_ratio("form-only") > 0.1 for n in SEEN)


def fact_seen_width() -> bool:
    """The seen head sets' intervals are about seven points wide (6.5 to 7.5), before and after."""
    widths = [interval(seen_count(n, w, True)) for n in ("capable-0", "capable-1") for w in ("before", "after")]
    return all(6.5 <= hi - lo <= 7.5 for lo, hi in widths)


def fact_mostly_unpicked() -> bool:
    """60 steps x 8 picks is less than a sixth of the training heads (3,193 rows): most were never drawn."""
    return len(lora.usable(lora.corpus()["train"])) / 6 > STEPS * PROMPTS


def fact_weak_on_the_floor() -> bool:
    """The weak run: line heads before and after not above the lower floor, intervals overlapping; form up."""
    floor = min(rate for _, rate in ev.floors().values())
    return (heads_rate("weak", "after") < floor and fact_intervals_overlap("weak", line_count)
            and fact_intervals_apart("weak", form_count))


def fact_weak_like_control() -> bool:
    """「和拿别的藏头对照的差不多」「少到和瞎碰一样」: before GRPO the weak model's line-head rate differs from the
    control's (the same poems against another head set) by less than the half-width of its own interval."""
    lo, hi = interval(line_count("weak", "before"))
    return abs(heads_rate("weak", "before") - control_rate("weak", "before")) < (hi - lo) / 2


def gain_error(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The standard error, in points, of a gain between two independent samples (before and after training)."""
    return 100 * math.sqrt(sum(k / n * (1 - k / n) / n for k, n in (before, after)))


def dpo_gain() -> float:
    return dpo().heads_rate(0, "dpo") - dpo().heads_rate(0, "SFT")


def versus_dpo(name: str) -> tuple[float, float]:
    """How many points more this run's line heads rose than DPO's (seed 0), and 1.96 standard errors of that
    difference: four independent samples, lines counted one by one (the narrower reading, so this errs towards telling
    the two apart). On an AMD EPYC (Zen 4): 0.7 and 0.9 points against 2.9."""
    grpo = heads_rate(name, "after") - heads_rate(name, "before")
    error = math.hypot(gain_error(line_count(name, "before"), line_count(name, "after")),
                       gain_error(dpo().line_count(0, "SFT"), dpo().line_count(0, "dpo")))
    return grpo - dpo_gain(), 1.96 * error


def fact_quarter_the_lines() -> bool:
    """「那一篇数的句子只有这里的四分之一，区间差不多宽一倍」: exactly a quarter of the lines before and after; the
    DPO article's intervals 1.8 to 2.2 times as wide as this one's at the same stage."""
    pairs = ((dpo().line_count(0, "SFT"), line_count("capable-0", "before")),
             (dpo().line_count(0, "dpo"), line_count("capable-0", "after")))
    widths = [(interval(d)[1] - interval(d)[0]) / (interval(g)[1] - interval(g)[0]) for d, g in pairs]
    return all(4 * d[1] == g[1] for d, g in pairs) and all(1.8 <= w <= 2.2 for w in widths)


def fact_form_only_hacks() -> bool:
    """Form above both normal runs'; line heads down with the intervals apart; pass@8 below half of what it was."""
    return (form_rate("form-only", "after") > max(form_rate(n, "after") for n in ("capable-0", "capable-1"))
            and interval(line_count("form-only", "after"))[1] < interval(line_count("form-only", "before"))[0]
            and all_four_pass8("form-only", "after") < all_four_pass8("form-only", "before") / 2)


def fact_before_after_reading() -> bool:
    capable = all(fact_intervals_apart(n, line_count) and fact_intervals_apart(n, form_count)
                  for n in ("capable-0", "capable-1"))
    hack = fact_intervals_apart("form-only", form_count) and interval(line_count("form-only", "after"))[1] < \
        interval(line_count("form-only", "before"))[0]
    return capable and fact_weak_on_the_floor() and hack


def distinct_count(name: str, when: str) -> int:
    return len({p for ps in poems(name, when) for p in ps})


def lab_settings() -> tuple[int, int]:
    """STEPS and PROMPTS as the lab's code sets them."""
    import re

    text = (ROOT / "labs" / "grpo_lab.py").read_text(encoding="utf-8")
    m = re.search(r"^STEPS, PROMPTS, GROUP, BETA = (\d+), (\d+), (\d+), ", text, re.M)
    assert m, "the lab no longer sets STEPS, PROMPTS, GROUP, BETA in one line"
    return int(m[1]), int(m[2])


def oracle_grid() -> tuple[int, int]:
    """How many random batches and (beta, clip) pairs tests/code/test_grpo.py runs trl's GRPO loss on."""
    import re

    text = (ROOT / "tests" / "code" / "test_grpo.py").read_text(encoding="utf-8")
    block = text[text.index('"seed", range(') : text.index("def test_grpo_loss_equals_trl")]
    seeds = int(re.search(r'"seed", range\((\d+)\)', block)[1])
    pairs = re.search(r'\("beta", "clip"\), \[(.*)\]\)', block)[1]
    return seeds, len(re.findall(r"\(\d", pairs))


@cache
def dpo() -> object:
    from . import test_preference_dpo_claims

    return test_preference_dpo_claims


def last_kl(name: str) -> float:
    """The mean KL per token over the last 10 training steps."""
    return sum(history(name)["kl"][-10:]) / 10


def spike(name: str) -> tuple[int, float]:
    """The step (counted from 1) and value of the largest KL among the last 10 steps."""
    kl = history(name)["kl"]
    step = max(range(len(kl) - 10, len(kl)), key=lambda i: kl[i])
    return step + 1, kl[step]


def calm(name: str) -> list[float]:
    """The last 10 steps' KL without the largest one."""
    last = history(name)["kl"][-10:]
    return sorted(last)[:-1]


def median(xs: list[float]) -> float:
    s = sorted(xs)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2


def form_gain(name: str) -> float:
    return form_rate(name, "after") - form_rate(name, "before")


def dpo_form_gain() -> float:
    return dpo().form_rate(0, "dpo") - dpo().form_rate(0, "SFT")


# --------------------------------------------------------------------------- the claims

D = claims.DEC


def row(name: str, when: str, greedy: bool = True, pass1: bool = True, pass8: bool = True, div: bool = True):
    """A table row's values in order: heads (interval), form (interval), then the chosen columns."""
    values = [
        lambda: heads_rate(name, when), lambda: interval(line_count(name, when))[0],
        lambda: interval(line_count(name, when))[1], lambda: form_rate(name, when),
        lambda: interval(form_count(name, when))[0], lambda: interval(form_count(name, when))[1],
    ]
    if greedy:
        values.append(lambda: greedy_rate(name, when))
    if pass1:
        values.append(lambda: all_four_pass1(name, when))
    if pass8:
        values.append(lambda: all_four_pass8(name, when))
    if div:
        values.append(lambda: char_diversity(name, when))
    return checked(approx(*values))


ROW = rf"{P}（{P}–{P}） \| {P}（{P}–{P}） \| {P}"
SEEN = ("capable-0", "capable-1")

CLAIMS: list[Claim] = [
    # the method
    Claim(
        "reward model of the DPO article",
        "article",
        r"上一篇的奖励模型在留出的偏好对上只排对六到七成",
        holds(lambda: all(0.6 <= dpo().seed_run(s)["reward_model"]["held_accuracy"] < 0.8 for s in dpo().SEEDS)),
    ),
    Claim(
        "trl oracle grid",
        "article",
        r"(\d+) 个随机批次（每批 (\d+) 个回答、每个至多 (\d+) 个词元，比率落在截断的两侧），(\d+) 组",
        approx(lambda: oracle_grid()[0], lambda: 6, lambda: 8, lambda: oracle_grid()[1], exact=True),
    ),
    Claim(
        "poem tokens",
        "article",
        r"我们的诗格式对时正好 (\d+) 个词元（加结尾的换行）",
        checked(lambda st: approx(lambda: lora.NEW_TOKENS, exact=True)(st) or (
            None if all(max(history(n)["length"]) == lora.NEW_TOKENS for n in RUNS) else "an answer longer than 25")),
    ),
    Claim(
        "batch",
        "article",
        r"每一步从训练集的藏头里取 (\d+) 组，每组按温度 1 写 (\d+) 首",
        checked(approx(lambda: run("capable-0")["settings"]["prompts"], lambda: run("capable-0")["settings"]["group"],
                       exact=True)),
    ),
    Claim(
        "runs and evaluation",
        "article",
        rf"每次 (\d+) 步，每步 (\d+) 组 × (\d+) 首 = (\d+) 首诗。.*验证集的 {N_} 组藏头，每组按温度 1 写 (\d+) 首"
        rf"（(\d+) 个采样种子各 (\d+) 首），再贪心写 (\d+) 首",
        checked(approx(lambda: STEPS, lambda: PROMPTS, lambda: GROUP, lambda: PROMPTS * GROUP, lambda: len(heads()),
                       lambda: N, lambda: len(SAMPLE_SEEDS), lambda: PER_SEED, lambda: 1, exact=True)),
    ),
    # the main results
    Claim("table SFT", "article", rf"^\| 500 步 SFT \| {ROW} \| {D} \| {D} \| {D} \|$", row("capable-0", "before")),
    Claim("table seed 0", "article", rf"^\| GRPO 种子 0 \| {ROW} \| {D} \| {D} \| {D} \|$", row("capable-0", "after")),
    Claim("table seed 1", "article", rf"^\| GRPO 种子 1 \| {ROW} \| {D} \| {D} \| {D} \|$", row("capable-1", "after")),
    Claim(
        "table counts",
        "article",
        rf"句首命中逐句数（每个模型 {N_} 句），格式逐首数（{N_} 首）",
        checked(approx(lambda: line_count("capable-0", "after")[1], lambda: form_count("capable-0", "after")[1])),
    ),
    Claim(
        "heads rise",
        "article",
        rf"种子 0 从 {P} 到 {P}，种子 1 到 {P}，训练前后的区间都不重叠。"
        rf"两个种子之间差了 {D} 个百分点，比训练前后的差小",
        checked(lambda st: approx(
            lambda: heads_rate("capable-0", "before"), lambda: heads_rate("capable-0", "after"),
            lambda: heads_rate("capable-1", "after"),
            lambda: abs(heads_rate("capable-0", "after") - heads_rate("capable-1", "after")))(st)
            or (None if fact_capable_rise() and fact_seed_gap_small() else "the rise is not as described")),
    ),
    Claim(
        "form rise",
        "article",
        rf"\*\*格式正确\*\*从 {P} 升到 {P} 和 {P}。",
        checked(lambda st: approx(lambda: form_rate("capable-0", "before"), lambda: form_rate("capable-0", "after"),
                                  lambda: form_rate("capable-1", "after"))(st)
                or (None if fact_capable_rise() else "form does not rise in both")),
    ),
    Claim(
        "pass up",
        "article",
        rf"四句全对的 pass@1 上升了（{D} 到 {D} 和 {D}），pass@8 从 {D} 变成 {D} 和 {D}",
        # pass@8 is given without a reading: on a Xeon it moved by under 0.02 in both seeds, on an AMD EPYC (Zen 4,
        # 2026-12-07) 0.123 -> 0.149 and 0.132; MKL picks its kernels by vendor (ARCHITECTURE.md), and a reading of
        # so small a change did not hold on both
        checked(lambda st: approx(*[lambda n=n, w=w, f=f: f(n, w) for f in (all_four_pass1, all_four_pass8)
                                    for n, w in (("capable-0", "before"), ("capable-0", "after"),
                                                 ("capable-1", "after"))])(st)
                or (None if fact_pass1_up() else "pass@1 does not rise in both seeds")),
    ),
    Claim(
        "greedy down",
        "article",
        rf"句首命中反而降了（{P} 到 {P} 和 {P}）",
        checked(approx(lambda: greedy_rate("capable-0", "before"), lambda: greedy_rate("capable-0", "after"),
                       lambda: greedy_rate("capable-1", "after"))),
    ),
    Claim(
        "diversity down",
        "article",
        rf"\*\*用字多样性\*\*降了 {P} 和 {P}：策略在收窄",
        checked(approx(*[lambda n=n: 100 * (1 - diversity_ratio(n)) for n in SEEN])),
    ),
    Claim(
        "training curves",
        "article",
        rf"每步只有 (\d+) 首诗.*种子 1 的平均奖励从前 10 步的 {D} 升到最后 10 步的 {D}；种子 0 只从 {D} 升到 {D}，"
        rf"它在训练批次上每首对上的句首数前后几乎没变（前 10 步 {D}，最后 10 步 {D}）.*"
        rf"最后 5 步平均是每个词元 {D}（种子 0）和 {D}（种子 1）奈特",
        checked(lambda st: approx(lambda: PROMPTS * GROUP, lambda: head("capable-1", "reward", 10),
                                  lambda: tail("capable-1", "reward", 10), lambda: head("capable-0", "reward", 10),
                                  lambda: tail("capable-0", "reward", 10), lambda: head("capable-0", "heads", 10),
                                  lambda: tail("capable-0", "heads", 10), lambda: tail("capable-0", "kl"),
                                  lambda: tail("capable-1", "kl"))(st)
                # 「只从」 seed 0's reward rises less than seed 1's; 「几乎没变」 under 0.1 of a line per poem;
                # 「涨的主要是格式」 the form share up 10 points or more; 「也升了」 its held-out line heads rise
                or (None if rise("capable-0", "reward") < rise("capable-1", "reward")
                    and abs(rise("capable-0", "heads")) < 0.1 and rise("capable-0", "form") >= 0.1
                    and heads_rate("capable-0", "after") > heads_rate("capable-0", "before")
                    else "seed 0's training batches are not as described")),
    ),
    Claim(
        "kl rises",
        "article",
        r"到参考模型的 KL 逐渐上升",
        checked(holds(lambda: all(tail(n, "kl") > 10 * head(n, "kl") for n in SEEN))),
    ),
    # seen and unseen head sets
    Claim(
        "seen sets",
        "article",
        rf"验证集的 {N_} 组藏头里，有 (\d+) 组的四个字和训练集里某首诗的藏头完全相同（训练集有 {N_} 种不同的藏头）。"
        rf".*60 步一共只取了 (\d+) 次藏头，大部分其实没被取到",
        checked(lambda st: approx(lambda: len(heads()), n_seen, lambda: len(train_head_sets()),
                                  lambda: STEPS * PROMPTS)(st)
                or (None if fact_mostly_unpicked() and set(data()["train_head_sets"]) == train_head_sets()
                    else "the split is not as described")),
    ),
    Claim(
        "seen row",
        "article",
        rf"^\| 训练集里有的 (\d+) 组 \| {N_} \| {P} \| {P} \| {P} \|$",
        checked(approx(n_seen, lambda: seen_count("capable-0", "before", True)[1],
                       lambda: pct(seen_count("capable-0", "before", True)),
                       lambda: pct(seen_count("capable-0", "after", True)),
                       lambda: pct(seen_count("capable-1", "after", True)))),
    ),
    Claim(
        "unseen row",
        "article",
        rf"^\| 训练集里没有的 (\d+) 组 \| {N_} \| {P} \| {P} \| {P} \|$",
        checked(approx(lambda: len(heads()) - n_seen(), lambda: seen_count("capable-0", "before", False)[1],
                       lambda: pct(seen_count("capable-0", "before", False)),
                       lambda: pct(seen_count("capable-0", "after", False)),
                       lambda: pct(seen_count("capable-1", "after", False)))),
    ),
    Claim(
        "unseen gains",
        "article",
        rf"没见过的藏头涨得和见过的差不多（种子 0 涨 {D} 个百分点，种子 1 涨 {D} 个）。见过的那 (\d+) 组只有 {N_} 句，"
        r"区间有七个百分点宽",
        checked(lambda st: approx(
            *[lambda n=n: pct(seen_count(n, "after", False)) - pct(seen_count(n, "before", False)) for n in SEEN],
            n_seen, lambda: seen_count("capable-0", "before", True)[1])(st)
            or (None if fact_seen_width() else "the seen intervals are not about seven points wide")),
    ),
    # DPO
    Claim(
        "dpo comparison",
        "article",
        rf"采样的句首命中从 {P} 到 {P}，涨了 {D} 个百分点，训练前后的区间重叠；格式从 {P} 到 {P}。"
        rf"（那一篇每组藏头只写 (\d+) 首，采样的种子也不同，所以 SFT 一行的数和这里的 {P} 不一样",
        lambda st: (
            approx(lambda: dpo().heads_rate(0, "SFT"), lambda: dpo().heads_rate(0, "dpo"),
                   lambda: dpo().heads_rate(0, "dpo") - dpo().heads_rate(0, "SFT"), lambda: dpo().form_rate(0, "SFT"),
                   lambda: dpo().form_rate(0, "dpo"), lambda: dpo().EVAL_SAMPLES,
                   lambda: heads_rate("capable-0", "before"))(st)
            or (None if dpo().fact_heads_overlap(0) else "the DPO intervals do not overlap")
        ),
    ),
    Claim(
        "grpo gains vs dpo",
        "article",
        rf"GRPO 的两个种子涨了 {D} 和 {D} 个百分点，区间都不重叠，格式也涨得更多",
        checked(lambda st: approx(*[lambda n=n: heads_rate(n, "after") - heads_rate(n, "before") for n in SEEN])(st)
                or (None if fact_capable_rise() and all(form_gain(n) > dpo_form_gain() for n in SEEN)
                    else "the comparison is not as described")),
    ),
    Claim(
        "grpo vs dpo on heads",
        "article",
        r"那一篇数的句子只有这里的四分之一，区间差不多宽一倍，同样大的涨幅，在那里重叠，在这里就可能不重叠。"
        rf"直接比两个涨幅：GRPO 比 DPO 多涨了 {D} 和 {D} 个百分点，这个差的 95% 误差约 ±{D} 个百分点；"
        r"差落在误差之内，就说明不了 GRPO 在句首上比 DPO 强",
        # the gap, its error and the rule for reading them, no verdict (a Xeon's runs give other numbers; on an AMD
        # EPYC (Zen 4) 0.7 and 0.9 against 2.9)
        checked(lambda st: approx(lambda: versus_dpo("capable-0")[0], lambda: versus_dpo("capable-1")[0],
                                  lambda: max(versus_dpo(n)[1] for n in SEEN))(st)
                or (None if fact_quarter_the_lines() else "not a quarter of the lines")),
    ),
    Claim(
        "playground: greedy below the SFT model",
        "article",
        r"贪心解码时，DPO 和 GRPO 的句首命中都比 SFT 略低，涨的是按温度 1 采样时的命中",
        # the three models of the playground: seed 0's SFT model, its DPO policy and GRPO run capable-0; greedy is
        # deterministic, so the SFT model's greedy rate is the same in both articles' evaluations
        checked(holds(lambda: greedy_rate("capable-0", "after") < greedy_rate("capable-0", "before")
                      and dpo().greedy_rate(0, "dpo") < dpo().greedy_rate(0, "SFT")
                      and dpo().greedy_rate(0, "SFT") == greedy_rate("capable-0", "before")
                      and heads_rate("capable-0", "after") > heads_rate("capable-0", "before")
                      and dpo().heads_rate(0, "dpo") > dpo().heads_rate(0, "SFT"))),
    ),
    Claim(
        "group in the signal",
        "article",
        r"对上三句的比对上两句的多得 0\.25 分。一组 (\d+) 首的格式都对时",
        approx(lambda: GROUP, exact=True),
    ),
    # the weak start
    Claim(
        "weak before",
        "article",
        rf"采样的句首命中 {P}，和拿别的藏头对照的 {P} 差不多，四句全对的 pass@8 是 0",
        checked(lambda st: approx(lambda: heads_rate("weak", "before"), lambda: control_rate("weak", "before"))(st)
                or (None if all_four_pass8("weak", "before") == 0 and fact_weak_like_control()
                    else "pass@8 is not 0, or the rate is not like the control's")),
    ),
    Claim(
        "weak heads are chance",
        "article",
        r"采样时对上的句首少到和瞎碰一样",
        checked(holds(fact_weak_like_control)),
    ),
    Claim("weak table before", "article", rf"^\| 80 步 SFT \| {ROW} \|$",
          row("weak", "before", pass1=False, pass8=False, div=False)),
    Claim("weak table after", "article", rf"^\| GRPO \| {ROW} \|$",
          row("weak", "after", pass1=False, pass8=False, div=False)),
    Claim(
        "weak reading",
        "article",
        rf"格式从 {P} 升到 {P}，句首一点没动。原因就在优势的公式里：60 步写了 {N_} 首诗，对上的句首一共只有 {N_} 句。"
        rf"一组 (\d+) 首诗.*一组 (\d+) 首全对格式.*整个训练里这样的组占 {P}，最后 10 步的 (\d+) 组里有 {N_} 组",
        checked(lambda st: approx(
            lambda: form_rate("weak", "before"), lambda: form_rate("weak", "after"), lambda: STEPS * PROMPTS * GROUP,
            lambda: round(training_head_lines("weak")), lambda: GROUP, lambda: GROUP,
            lambda: 100 * flat_share("weak"), lambda: 10 * PROMPTS, lambda: last_flat("weak"))(st)
            or (None if fact_weak_on_the_floor() and abs(training_head_lines("weak") - round(training_head_lines(
                "weak"))) < 1e-3 else "the weak run is not as described")),
    ),
    Claim(
        "weak pass@8",
        "article",
        rf"500 步 SFT 每组写 (\d+) 首、四句全对的机会有 {D}，GRPO 把它推到 {D}；80 步 SFT 是 0，GRPO 之后还是 0",
        checked(lambda st: approx(lambda: N, lambda: all_four_pass8("capable-0", "before"),
                                  lambda: all_four_pass8("capable-0", "after"))(st)
                or (None if all_four_pass8("weak", "after") == 0 else "the weak run's pass@8 is not 0")),
    ),
    Claim(
        "weak kl",
        "article",
        r"带着 KL 惩罚的三次里，弱模型离参考模型走得最远。"
        rf"最后 10 步里，它的 KL 平均是每个词元 {D} 奈特，是 500 步模型出发那次（{D} 奈特）的 {D} 倍",
        checked(lambda st: approx(
            lambda: last_kl("weak"), lambda: last_kl("capable-0"), lambda: last_kl("weak") / last_kl("capable-0"))(st)
            # the three with a KL penalty are these (the form-only run has β = 0 and is left out)
            or (None if last_kl("weak") > max(last_kl(n) for n in SEEN)
                and all(run(n)["settings"]["beta"] > 0 for n in ("weak", *SEEN))
                and run("form-only")["settings"]["beta"] == 0 else "the weak run is not the farthest")),
    ),
    Claim(
        "weak form",
        "article",
        r"它的格式从不到一半练到九成以上，策略改得多，离参考模型也就远",
        checked(holds(lambda: form_rate("weak", "before") < 50 < 90 < form_rate("weak", "after")
                      and last_kl("weak") > max(last_kl(n) for n in SEEN))),
    ),
    # reward hacking
    Claim(
        "hack table before",
        "article",
        rf"^\| 500 步 SFT \| {ROW} \| {D} \| {D} \|$",
        row("form-only", "before", pass1=False),
    ),
    Claim(
        "hack table after",
        "article",
        rf"^\| 只奖励格式、β = 0 \| {ROW} \| {D} \| {D} \|$",
        row("form-only", "after", pass1=False),
    ),
    Claim(
        "hack reading",
        "article",
        rf"格式正确到了 {P}，比正常奖励的两次都高。可句首命中掉了 {D} 个百分点，四句全对的 pass@8 不到原来的一半，"
        rf"用字多样性降到原来的 {P}",
        checked(lambda st: approx(lambda: form_rate("form-only", "after"),
                                  lambda: heads_rate("form-only", "before") - heads_rate("form-only", "after"),
                                  lambda: 100 * diversity_ratio("form-only"))(st)
                or (None if fact_form_only_hacks() else "the hack is not as described")),
    ),
    Claim(
        "hack distinct poems",
        "article",
        rf"每首诗本身倒还各不相同（{N_} 首采样的诗没有一首重复）",
        checked(lambda st: approx(lambda: form_count("form-only", "after")[1])(st)
                or (None if distinct_count("form-only", "after") == form_count("form-only", "after")[1]
                    else "some sampled poems repeat")),
    ),
    Claim(
        "kl beta and diversity",
        "article",
        rf"正常奖励的两次都带着 \$\\beta=(\d\.\d+)\$，用字多样性只降了 {P} 和 {P}",
        checked(lambda st: approx(lambda: run("capable-0")["settings"]["beta"],
                                  *[lambda n=n: 100 * (1 - diversity_ratio(n)) for n in SEEN])(st)
                or (None if run("capable-1")["settings"]["beta"] == BETA and fact_hack_narrows_most()
                    else "the two runs do not both have this beta, or they narrowed as much as the hacked one")),
    ),
    Claim(
        "hack saturates",
        "article",
        rf"一组 (\d+) 首全得 1 分，优势全是 0。最后 10 步的 (\d+) 组里有 {N_} 组分数全同；这次又没有 KL 项",
        checked(lambda st: approx(lambda: GROUP, lambda: 10 * PROMPTS, lambda: last_flat("form-only"))(st)
                or (None if run("form-only")["settings"]["beta"] == 0 else "the form-only run has a KL term")),
    ),
    # summary
    Claim(
        "summary capable",
        "article",
        rf"GRPO 让验证集上的句首命中从 {P} 升到 {P} 和 {P}（两个种子，区间都不重叠），格式正确升到 {P} 和 {P}；"
        rf"没见过的藏头和见过的涨得差不多。同样出发的 DPO 涨了 {D} 个百分点；两者的差要和它的抽样误差比",
        checked(lambda st: approx(lambda: heads_rate("capable-0", "before"), lambda: heads_rate("capable-0", "after"),
                                  lambda: heads_rate("capable-1", "after"), lambda: form_rate("capable-0", "after"),
                                  lambda: form_rate("capable-1", "after"),
                                  lambda: dpo().heads_rate(0, "dpo") - dpo().heads_rate(0, "SFT"))(st)
                or (None if fact_capable_rise() else "not as described")),
    ),
    Claim(
        "summary hack",
        "article",
        rf"格式到了 {P}，句首掉了 {D} 个百分点，用字多样性降到原来的 {P}",
        checked(approx(lambda: form_rate("form-only", "after"),
                       lambda: heads_rate("form-only", "before") - heads_rate("form-only", "after"),
                       lambda: 100 * diversity_ratio("form-only"))),
    ),
    Claim(
        "lab",
        "article",
        r"训练 (\d+) 步（比文章的 (\d+) 步短，每步也只有 (\d+) 组）",
        approx(lambda: lab_settings()[0], lambda: STEPS, lambda: lab_settings()[1], exact=True),
    ),
    # captions
    Claim(
        "training caption",
        "grpo-training",
        r"每步从训练集取 (\d+) 组藏头，每组按温度 1 采样 (\d+) 首，验证器打分。每条曲线是最近 (\d+) 步的平均",
        checked(approx(lambda: PROMPTS, lambda: GROUP, lambda: 5, exact=True)),
    ),
    Claim(
        "training caption beta",
        "grpo-training",
        r"紫：只奖励格式、不加 KL 惩罚（β = (\d+)）",
        checked(approx(lambda: run("form-only")["settings"]["beta"], exact=True)),
    ),
    Claim(
        "before-after caption",
        "grpo-before-after",
        rf"验证集 {N_} 组藏头，每组按温度 1 采样写 (\d+) 首.*蓝色是 (\d+) 步 GRPO 之后",
        checked(approx(lambda: len(heads()), lambda: N, lambda: STEPS, exact=True)),
    ),
    Claim(
        "before-after caption reading",
        "grpo-before-after",
        r"500 步 SFT 出发的两个种子，句首和格式都上升；80 步 SFT 出发的，格式上升、句首仍在地板上；"
        r"只奖励格式的那一次，格式上升、句首下降",
        checked(holds(fact_before_after_reading)),
    ),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.where}:{c.name}" for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


NOT_COMPUTED: dict[str, str] = {
    "95%": "the confidence level of every interval, a setting",
    "满分 1.25": "the reward's maximum, 4 x 1/4 + 1/4: the weights are settings of code/grpo_train.py (reward)",
    "1.16.0": "the version of trl the oracle test runs",
    "1707.06347": "Schulman et al. 2017's arXiv identifier",
    "2005.12729": "Engstrom et al. 2020's arXiv identifier",
    "2402.03300": "Shao et al. 2024's (DeepSeekMath) arXiv identifier",
    "2501.12948": "DeepSeek-AI 2025's (DeepSeek-R1) arXiv identifier",
    "2503.20783": "Liu et al. 2025's arXiv identifier",
    "2504.13837": "Yue et al. 2025's arXiv identifier",
}


def test_grpo_numbers_are_checked() -> None:
    """Every number in the article's prose and captions is asserted by a claim above or listed in NOT_COMPUTED."""
    claims.assert_numbers_checked(SOURCES, CLAIMS, NOT_COMPUTED, "tests/figures/test_grpo_claims.py")
