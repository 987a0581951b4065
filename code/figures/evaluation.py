"""《评测：怎样知道模型真的变好了》一文中的图和文末练习的答案。

训练得到的数都来自 code/evaluation.py 的构建产物 compare_models()：课程里训练过的每个模型（第一阶段的唐诗 GPT、
第二阶段的 SFT 与 LoRA、500 步的全参数微调两个种子）在验证集的 342 组藏头上采样、贪心写诗，再用验证器打分。
@figure 声明构建时画的图，@figure_data 给它网页上可以操作的版本，@exercise_answer 算出文末练习的答案。
单独运行本文件会把图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math
import statistics
from functools import cache

from evaluation import KS, MODEL_LABELS, model_comparison, pass_at_k
from figkit import article_values, exercise_answer, figure, figure_data, new_figure, plain_log_axis
from verifiers import wilson_interval

ORDER = ("base", "lora-1", "lora-4", "lora-8", "full", "capable-0", "capable-1")  # 图里从上到下


@cache
def result() -> dict:
    return model_comparison(verbose=False)


# ---------- 图 1：每个模型的句首命中率，带区间和地板（训练得到、实测） ----------


@figure(
    "eval-model-rates",
    article="evaluation",
    title="课程里训练过的七个模型：验证集藏头上逐句的句首命中率，带 95% Wilson 区间",
    caption="训练得到的模型，实测的比例：验证集 342 组藏头，每组按温度 1 采样写 8 首（4 个采样种子各 2 首），"
    "数四句里句首是要求的字的句数，横线是 95% Wilson 区间；空心圆是贪心解码写的那一首的命中率。"
    "灰色竖线是两条地板：每句都写训练集最常见的句首字「不」，或按位置写训练集每一句最常见的句首字。"
    "叉号是对照：同样的诗拿去和下一组藏头比。",
)
def model_rates_figure():
    r = result()
    fig, ax = new_figure(size="wide")
    names = list(reversed(ORDER))
    for y, name in enumerate(names):
        run = r["runs"][name]
        rate = run["sampled"]["line_heads"]
        lo, hi = rate.interval
        ax.errorbar([rate.value], [y], xerr=[[rate.value - lo], [hi - rate.value]], fmt="o", color="C0", capsize=3,
                    label="采样（温度 1）" if y == 0 else None)
        ax.plot([run["greedy"]["line_heads"].value], [y], "o", mfc="none", color="C1",
                label="贪心解码" if y == 0 else None)
        ax.plot([run["other_prompt"].value], [y], "x", color="C2", label="对照：和别的藏头比" if y == 0 else None)
    for (name, (guess, base)), style in zip(r["baselines"].items(), ("--", ":"), strict=True):
        label = "地板：每句都写「不」" if name == "commonest" else f"地板：按位置猜「{guess}」"
        ax.axvline(base.value, color="0.5", linestyle=style, label=label)
    ax.set_yticks(range(len(names)), labels=[MODEL_LABELS[n] for n in names], fontsize=9)
    ax.set_xlabel("逐句的句首命中率")
    ax.set_xlim(0, 1)
    ax.grid(True, axis="x")
    ax.legend(loc="upper right", fontsize=8)  # 上面几行的点都挤在 0 附近，右上角是空的
    return fig


# ---------- 图 2：pass@k（训练得到、实测；可以操作） ----------


@figure(
    "eval-pass-at-k",
    article="evaluation",
    title="pass@k：每组藏头写 k 首、至少一首四句句首全对的概率",
    caption="训练得到的模型，实测：验证集 342 组藏头，每组采样写 8 首（温度 1），数四句句首全对的首数 c，"
    "用无偏估计 1 − C(8−c, k) / C(8, k) 算出每组的 pass@k，再在各组上平均。横轴是对数坐标。"
    "第一、二阶段的五个模型一首也没写对，五条线都贴在 0 上。网页上可以逐个模型看 k = 1、2、4、8 的柱子。",
)
def pass_at_k_figure():
    r = result()
    fig, ax = new_figure(size="wide")
    for i, name in enumerate(ORDER):
        values = [r["runs"][name]["pass_at_k"][k] for k in KS]
        ax.plot(KS, values, "o-", color=f"C{i}", label=MODEL_LABELS[name])
    plain_log_axis(ax, "x", KS)
    ax.set_xlabel("k（每组藏头写几首）")
    ax.set_ylabel("pass@k（至少一首四句全对）")
    ax.set_ylim(-0.02, 1)
    ax.grid(True)
    ax.legend(fontsize=8, loc="upper left")
    return fig


@figure_data("eval-pass-at-k", view="bars")
def pass_at_k_data():
    """网页上的交互版：选一个模型，四根柱子是 k = 1、2、4、8 时的 pass@k。"""
    r = result()
    views = []
    for j, name in enumerate(ORDER):
        run = r["runs"][name]
        lines, all4 = run["sampled"]["line_heads"], run["sampled"]["all_heads"]
        lo, hi = all4.interval
        views.append({
            "at": [j], "title": f"{MODEL_LABELS[name]}：pass@1 = {run['pass_at_k'][1]:.3f}，"
                                f"pass@8 = {run['pass_at_k'][8]:.3f}",
            "values": [run["pass_at_k"][k] for k in KS],
            "stats": [{"label": "逐句的句首命中率（采样）", "value": lines.value, "digits": 3},
                      {"label": "四句全对的诗占采样的比例", "value": all4.value, "digits": 3},
                      {"label": "这个比例的 95% 区间下限", "value": lo, "digits": 3},
                      {"label": "这个比例的 95% 区间上限", "value": hi, "digits": 3},
                      {"label": "pass@8 ÷ pass@1", "value": (run["pass_at_k"][8] / run["pass_at_k"][1]
                                                             if run["pass_at_k"][1] > 0 else 0), "digits": 2}],
        })
    return {
        "note": "静态图把七个模型画在一起；这里一次看一个模型。柱子从左到右是 k = 1、2、4、8。"
                "pass@1 就是「四句全对的诗占采样的比例」（每组平均）；一首也没写对的模型，四根柱子都是 0。",
        "controls": [{"label": "模型", "options": [MODEL_LABELS[n] for n in ORDER],
                      "initial": ORDER.index("capable-0")}],
        "views": views, "x_name": "k = 1、2、4、8", "y_name": "pass@k",
        "ymax": math.ceil(20 * max(max(v["values"]) for v in views)) / 20,  # 最高的柱子之上留到 0.05 的整数倍
    }


# ---------- 文末练习的答案 ----------


@exercise_answer("pass-at-k-10-3-5")
def pass_at_k_10_3_5():
    """写了 10 首、3 首合格，随手挑 5 首至少一首合格的概率。"""
    return pass_at_k(10, 3, 5)


@exercise_answer("wilson-zero-of-342")
def wilson_zero_of_342():
    """342 组藏头一首也没写成：成功率 95% Wilson 区间的上限。"""
    return wilson_interval(0, 342)[1]


PASS_OPTIONS = ("不到 2 倍", "2 到 4 倍", "4 倍以上")


@exercise_answer("capable-pass8-vs-pass1")
def capable_pass8_vs_pass1():
    """先猜再看：500 步全参数微调（种子 0）的 pass@8 是 pass@1 的几倍（按算出的比值挑选项）。"""
    run = result()["runs"]["capable-0"]
    ratio = run["pass_at_k"][8] / run["pass_at_k"][1]
    return PASS_OPTIONS[0] if ratio < 2 else PASS_OPTIONS[1] if ratio < 4 else PASS_OPTIONS[2]


# ---------- 文中写的数：构建时算出，放进文章里 {{ value:名字 }} 的地方 ----------


def pct(r, digits: int = 1) -> str:
    return f"{100 * r:.{digits}f}"


def capable_loss() -> float:
    """500 步微调的两个种子，在验证集全部样本上的 SFT 损失的平均。"""
    from capable_sft import SEEDS, capable_model
    from lora_train import build_sft_data, held_out_sft_loss, poem_lists

    losses = []
    for seed in SEEDS:
        model, tok = capable_model(seed)
        losses.append(held_out_sft_loss(model, build_sft_data(poem_lists()[1], tok)))
    return sum(losses) / len(losses)


def variant_split(name: str) -> tuple[float, float]:
    """句首命中率：在训练集里有异文的那些藏头上，和在其余藏头上。"""
    from acrostic import head_hits

    r = result()
    hit, total = {True: 0, False: 0}, {True: 0, False: 0}
    for heads, poems, variant in zip(r["heads"], r["runs"][name]["poems"], r["variant"], strict=True):
        hit[variant] += sum(head_hits(heads, p) for p in poems)
        total[variant] += 4 * len(poems)
    return hit[True] / total[True], hit[False] / total[False]


def per_prompt_rates(name: str) -> list[float]:
    """每组藏头一个命中率：这个模型为它写的几首诗（8 首、32 句）里对上几句。
    同一首诗的几句不独立，各组藏头才是独立的。"""
    from acrostic import head_hits

    r = result()
    return [sum(head_hits(h, p) for p in ps) / (4 * len(ps))
            for h, ps in zip(r["heads"], r["runs"][name]["poems"], strict=True)]


def per_prompt_half_width(name: str, confidence: float = 0.95) -> float:
    """按藏头算的区间的半宽：z × 342 个命中率（per_prompt_rates）的标准差 / √342（95% 时 z 约 1.96）。"""
    rates = per_prompt_rates(name)
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    return z * statistics.stdev(rates) / math.sqrt(len(rates))


def variant_gap_in_errors(name: str) -> float:
    """有异文的藏头比其余的低了几个标准误（按藏头算：每组一个命中率，两组藏头的方差相加）。"""
    groups: dict[bool, list[float]] = {True: [], False: []}
    for rate, variant in zip(per_prompt_rates(name), result()["variant"], strict=True):
        groups[variant].append(rate)
    a, b = groups[True], groups[False]
    error = math.hypot(statistics.stdev(a) / math.sqrt(len(a)), statistics.stdev(b) / math.sqrt(len(b)))
    return (statistics.fmean(b) - statistics.fmean(a)) / error


@article_values
def stated_values() -> dict[str, str]:
    from lora_train import finetuning, summary

    r = result()
    held = summary(finetuning(verbose=False))
    loss, full, base = capable_loss(), held["full"]["held_out"], held["base"]["held_out"]
    out = {"sft-loss": f"{loss:.3f}", "full-loss": f"{full:.3f}", "loss-gain": f"{full - loss:.3f}",
           "base-drop": f"{base - full:.3f}"}
    seeds = [s.value for s in r["runs"]["capable-0"]["per_seed_line_heads"]]
    out |= {"seed-min": pct(min(seeds)), "seed-max": pct(max(seeds)), "seed-spread": pct(max(seeds) - min(seeds))}
    rates = {}
    for name in ORDER:  # 比较表：每个模型一行
        run = r["runs"][name]
        lines = run["sampled"]["line_heads"]
        lo, hi = lines.interval
        out |= {f"{name}-heads": pct(lines.value, 2), f"{name}-lo": pct(lo, 2), f"{name}-hi": pct(hi, 2),
                f"{name}-other": pct(run["other_prompt"].value, 2),
                f"{name}-greedy": pct(run["greedy"]["line_heads"].value, 2),
                f"{name}-pass1": f"{run['pass_at_k'][1]:.3f}", f"{name}-pass8": f"{run['pass_at_k'][8]:.3f}",
                f"{name}-form": pct(run["sampled"]["form"].value), f"{name}-rhyme": pct(run["sampled"]["rhyme"].value)}
    others = [r["runs"][name]["other_prompt"].value for name in ORDER]
    out |= {"other-min": pct(min(others), 2), "other-max": pct(max(others), 2), "base-loss": f"{base:.3f}"}
    for i in (0, 1):
        run = r["runs"][f"capable-{i}"]
        rates[i] = run["sampled"]["line_heads"].value
        out |= {f"hits-{i}": pct(rates[i]), f"pass1-{i}": f"{run['pass_at_k'][1]:.3f}",
                f"pass8-{i}": f"{run['pass_at_k'][8]:.3f}", f"rhyme-{i}": pct(run["sampled"]["rhyme"].value)}
        with_variant, without = variant_split(f"capable-{i}")
        out |= {f"variant-{i}": pct(with_variant), f"no-variant-{i}": pct(without),
                f"pass-ratio-{i}": f"{run['pass_at_k'][8] / run['pass_at_k'][1]:.1f}",
                f"prompt-half-{i}": pct(per_prompt_half_width(f"capable-{i}")),
                f"variant-gap-{i}": f"{variant_gap_in_errors(f'capable-{i}'):.1f}"}
    out["seed-gap"] = pct(rates[1] - rates[0])
    return out


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
