"""《强化学习：GRPO 与可验证的奖励》一文中的图和文末练习的答案。

训练得到的数都来自 code/grpo_train.py 的构建产物 grpo_runs()：从《评测》一文的 500 步 SFT 模型（种子 0，两个 GRPO
种子）、第二阶段 80 步的全参数 SFT 出发各跑 60 步 GRPO，再加一次只奖励格式、不要 KL 的「坏奖励」；训练后在验证集的
342 组藏头上用《评测》一文的办法评估（每组采样 8 首、贪心 1 首），训练前的成绩取自《评测》一文的比较结果。
@figure 声明构建时画的图，@figure_data 给它网页上可以操作的版本，@exercise_answer 算出文末练习的答案。
单独运行本文件会把图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math
from functools import cache

import torch
from acrostic import head_hits
from figkit import article_values, exercise_answer, figure, figure_data, new_figure
from grpo import group_advantages, grpo_loss
from grpo_train import grpo_results
from verifiers import difference_error

ORDER = ("capable-0", "capable-1", "weak", "form-only")
LABELS = {"capable-0": "500 步 SFT，GRPO 种子 0", "capable-1": "500 步 SFT，GRPO 种子 1",
          "weak": "80 步 SFT，GRPO", "form-only": "只奖励格式、β = 0"}
SMOOTH = 5  # 训练曲线取最近 5 步的平均：每步只有 64 首诗，单看一步太吵


@cache
def result() -> dict:
    return grpo_results(verbose=False)


def before(name: str) -> dict:
    """这次 GRPO 出发时的模型在验证集藏头上的成绩（《评测》一文的比较结果）。"""
    r = result()
    return r["before"][r["runs"][name]["start"]]


def after(name: str) -> dict:
    return result()["runs"][name]["after"]


def history(name: str) -> dict:
    return result()["runs"][name]["history"]


def smooth(xs: list[float], width: int = SMOOTH) -> list[float]:
    """每一步取它和之前至多 width − 1 步的平均。"""
    return [sum(xs[max(0, i - width + 1):i + 1]) / (i + 1 - max(0, i - width + 1)) for i in range(len(xs))]


def flat_share(name: str) -> list[float]:
    """每一步里分数全同（优势全为 0）的组占多少。"""
    prompts = result()["runs"][name]["settings"]["prompts"]
    return [f / prompts for f in history(name)["flat_groups"]]


def seen_split(ev: dict) -> dict[str, tuple[int, int, int]]:
    """验证集藏头按「这四个字作为一组在训练集里出现过没有」分成两份：各自的 (句首命中的句数, 句数, 组数)。

    GRPO 只在训练集的藏头上采样；出现过的那几组，训练时可能正好练过。"""
    r = result()
    train = set(r["train_head_sets"])
    out = {"seen": [0, 0, 0], "unseen": [0, 0, 0]}
    for h, poems in zip(r["heads"], ev["poems"], strict=True):
        part = out["seen" if h in train else "unseen"]
        part[0] += sum(head_hits(h, p) for p in poems)
        part[1] += 4 * len(poems)
        part[2] += 1
    return {k: tuple(v) for k, v in out.items()}


# ---------- 图 1：训练曲线（训练得到；可以操作） ----------

PANELS = (("reward", "奖励（0–1.25）"), ("heads", "每首对上的句首数（0–4）"), ("form", "格式正确的比例"),
          ("kl", "到参考模型的 KL（k3，逐词元平均）"))


@figure(
    "grpo-training",
    article="grpo",
    title="四次 GRPO 的训练曲线：奖励、句首、格式和到参考模型的 KL",
    caption="训练得到：每步从训练集取 8 组藏头，每组按温度 1 采样 8 首，验证器打分。每条曲线是最近 5 步的平均。"
    "蓝、橙：500 步 SFT 模型出发的两个 GRPO 种子；绿：80 步 SFT 出发；紫：只奖励格式、不加 KL 惩罚（β = 0）。"
    "紫线的奖励是另一种奖励（格式对得 1 分），和其余三条不能直接比。",
)
def training_figure():
    fig, axes = new_figure(ncols=2, nrows=2, size="tall", sharex=True)
    for ax, (key, label) in zip(axes.flat, PANELS, strict=True):
        for i, name in enumerate(ORDER):
            xs = history(name)[key]
            ax.plot(range(1, len(xs) + 1), smooth(xs), color=f"C{i}", label=LABELS[name])
        ax.set_title(label, fontsize=10)
        ax.grid(True)
    for ax in axes[1]:
        ax.set_xlabel("训练步数")
    axes[0][1].legend(fontsize=8, loc="center right")  # 句首那一格的中间是空的：图例不挡住曲线
    return fig


def steps_shown() -> list[int]:
    n = len(history(ORDER[0])["reward"])
    return list(range(SMOOTH, n + 1, SMOOTH))


@figure_data("grpo-training", view="bars")
def training_data():
    """网页上的交互版：按钮选一次 GRPO，滑块选训练到第几步；柱子是那一步之前 5 步的平均。"""
    steps = steps_shown()
    views = []
    for r, name in enumerate(ORDER):
        h, flat = history(name), flat_share(name)
        for s, step in enumerate(steps):
            def window(xs: list[float], step: int = step) -> float:
                return sum(xs[step - SMOOTH:step]) / SMOOTH

            views.append({
                "at": [r, s], "title": f"{LABELS[name]}：第 {step - SMOOTH + 1}–{step} 步的平均",
                "values": [window(h["heads"]) / 4, window(h["form"]), window(flat)],
                "stats": [{"label": "奖励", "value": window(h["reward"]), "digits": 3},
                          {"label": "每首对上的句首数（0–4）", "value": window(h["heads"]), "digits": 2},
                          {"label": "到参考模型的 KL（逐词元）", "value": window(h["kl"]), "digits": 3},
                          {"label": "回答的平均长度（词元）", "value": window(h["length"]), "digits": 1},
                          {"label": "分数全同、学不到东西的组", "value": window(flat), "digits": 3}],
            })
    return {
        "note": "训练时每步 8 组藏头、每组 8 首的平均（不是验证集上的成绩）。柱子从左到右：句首命中（对上的句数 / 4）、"
                "格式正确的比例、分数全同（优势全为 0）的组占的比例。",
        "controls": [{"label": "哪一次", "options": [LABELS[n] for n in ORDER], "kind": "buttons", "initial": 0},
                     {"label": "训练到第几步", "options": [str(s) for s in steps], "kind": "slider",
                      "initial": len(steps) - 1}],
        "views": views, "x_name": "句首命中、格式正确、学不到东西的组", "y_name": "比例", "ymax": 1,
    }


# ---------- 图 2：训练前后，验证集藏头上的句首和格式，带区间（训练得到、实测） ----------

METRICS = (("line_heads", "采样的句首命中（逐句）"), ("form", "采样的格式正确（逐首）"))


@figure(
    "grpo-before-after",
    article="grpo",
    title="GRPO 前后：验证集藏头上的句首命中率和格式正确率，带 95% Wilson 区间",
    caption="训练得到的模型，实测的比例：验证集 342 组藏头，每组按温度 1 采样写 8 首（和《评测》一文同样的评估）。"
    "灰色是 GRPO 之前的 SFT 模型，蓝色是 60 步 GRPO 之后；横线是 95% Wilson 区间。"
    "500 步 SFT 出发的两个种子，句首和格式都上升；80 步 SFT 出发的，格式上升、句首仍在地板上；"
    "只奖励格式的那一次，格式上升、句首下降。",
)
def before_after_figure():
    fig, axes = new_figure(ncols=2, size="tall", sharey=True)
    names = list(reversed(ORDER))
    for ax, (key, label) in zip(axes, METRICS, strict=True):
        for y, name in enumerate(names):
            for ev, color, tag, dy in ((before(name), "0.5", "GRPO 之前", 0.15), (after(name), "C0", "GRPO 之后",
                                                                                  -0.15)):
                rate = ev["sampled"][key]
                lo, hi = rate.interval
                ax.errorbar([rate.value], [y + dy], xerr=[[rate.value - lo], [hi - rate.value]], fmt="o",
                            color=color, capsize=3, label=tag if y == 0 else None)
        ax.set_title(label, fontsize=10)
        ax.set_xlim(0, 1)
        ax.grid(True, axis="x")
    axes[0].set_yticks(range(len(names)), labels=[LABELS[n] for n in names], fontsize=9)
    axes[0].set_xlabel("比例")
    axes[1].set_xlabel("比例")
    axes[0].legend(loc="center right", fontsize=9)  # 左图的右半边是空的：图例不挡住点
    return fig


# ---------- 文末练习的答案 ----------


@exercise_answer("grpo-advantage")
def grpo_advantage():
    """一组 4 个回答的奖励是 0.25、1.0、0.5、0.25：得 1.0 的那个回答的优势（减组内平均、除以组内无偏标准差）。"""
    return group_advantages(torch.tensor([[0.25, 1.0, 0.5, 0.25]]))[0, 1].item()


def token_weights(per_sequence: bool) -> tuple[float, float]:
    """两个回答，长 5 和 20 个词元，优势都是 1：损失对每个词元对数概率的梯度有多大（短的、长的）。"""
    lengths, width = (5, 20), 20
    mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    logps = torch.zeros(2, width, requires_grad=True)
    loss = grpo_loss(logps, logps.detach(), logps.detach(), torch.ones(2), mask, beta=0.0,
                     per_sequence=per_sequence)
    loss.backward()
    grad = logps.grad.abs()
    return grad[0, 0].item(), grad[1, 0].item()


@exercise_answer("grpo-token-weight")
def grpo_token_weight():
    """GRPO 的逐条平均（per_sequence=True）下，短回答的一个词元分到的梯度是长回答的几倍。"""
    short, long = token_weights(per_sequence=True)
    return short / long


@exercise_answer("grpo-weak-flat")
def grpo_weak_flat():
    """80 步 SFT 出发的那次 GRPO，60 步里分数全同（优势全为 0）的组占全部组的比例。"""
    flat = history("weak")["flat_groups"]
    return sum(flat) / (len(flat) * result()["runs"]["weak"]["settings"]["prompts"])


FORM_ONLY_OPTIONS = ("格式上升，句首也上升", "格式上升，句首几乎不变", "格式上升，句首下降")


@exercise_answer("grpo-form-only")
def grpo_form_only():
    """先猜再看：只奖励格式、不要 KL，句首命中怎样变（训练前后差不到 1 个百分点算不变）。"""
    b = before("form-only")["sampled"]["line_heads"].value
    a = after("form-only")["sampled"]["line_heads"].value
    if abs(a - b) < 0.01:
        return FORM_ONLY_OPTIONS[1]
    return FORM_ONLY_OPTIONS[0] if a > b else FORM_ONLY_OPTIONS[2]


# ---------- 文中写的数：构建时算出，放进文章里 {{ value:名字 }} 的地方 ----------


def pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}"


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def row_values(prefix: str, ev: dict, digits: int = 1, form_digits: int = 1, pass1: bool = True) -> dict[str, str]:
    """表格一行：采样句首命中和格式正确（各带区间）、贪心句首命中、pass@1（pass1 为真时）、pass@8、用字多样性。"""
    lines, form = ev["sampled"]["line_heads"], ev["sampled"]["form"]
    out = {f"{prefix}-pass1": f"{ev['pass_at_k'][1]:.3f}"} if pass1 else {}
    return out | {f"{prefix}-heads": pct(lines.value, digits), f"{prefix}-heads-lo": pct(lines.interval[0], digits),
            f"{prefix}-heads-hi": pct(lines.interval[1], digits), f"{prefix}-form": pct(form.value, form_digits),
            f"{prefix}-form-lo": pct(form.interval[0], form_digits),
            f"{prefix}-form-hi": pct(form.interval[1], form_digits),
            f"{prefix}-greedy": pct(ev["greedy"]["line_heads"].value, digits),
            f"{prefix}-pass8": f"{ev['pass_at_k'][8]:.3f}",
            f"{prefix}-div": f"{ev['char_diversity']:.3f}"}


def dpo_seed0() -> dict[str, float]:
    """上一篇 DPO 种子 0 训练前后的采样句首命中和格式正确（code/dpo_train.py 的构建产物），还有数了几句。"""
    from dpo_train import dpo_results

    run = dpo_results(verbose=False)["seeds"][0]
    out = {}
    for tag, ev in (("sft", run["before"]), ("dpo", run["runs"]["dpo"]["after"])):
        out[f"{tag}-heads"] = ev["sampled"]["lines"] / (4 * ev["sampled"]["n"])
        out[f"{tag}-form"] = ev["sampled"]["form"] / ev["sampled"]["n"]
        out[f"{tag}-hits"] = ev["sampled"]["lines"]
        out[f"{tag}-lines"] = 4 * ev["sampled"]["n"]
    return out


def versus_dpo(name: str) -> tuple[float, float]:
    """GRPO 这次比 DPO 多涨的句首命中，和这个差的 95% 误差（1.96 个标准误；四批采样彼此独立）。"""
    dpo, b, a = dpo_seed0(), before(name)["sampled"]["line_heads"], after(name)["sampled"]["line_heads"]
    gap = (a.value - b.value) - (dpo["dpo-heads"] - dpo["sft-heads"])
    error = math.hypot(difference_error((b.successes, b.n), (a.successes, a.n)),  # 两个涨幅各自的标准误
                       difference_error((dpo["sft-hits"], dpo["sft-lines"]), (dpo["dpo-hits"], dpo["dpo-lines"])))
    return gap, 1.96 * error


@article_values
def stated_values() -> dict[str, str]:
    sft = before("capable-0")
    out = row_values("sft", sft)
    for i in (0, 1):
        name = f"capable-{i}"
        out |= row_values(f"seed{i}", after(name))
        gain = after(name)["sampled"]["line_heads"].value - sft["sampled"]["line_heads"].value
        out[f"gain-{i}"] = pct(gain)
        out[f"div-drop-{i}"] = pct(1 - after(name)["char_diversity"] / sft["char_diversity"], 0)
        h = history(name)
        out |= {f"reward-first-{i}": f"{mean(h['reward'][:10]):.3f}",
                f"reward-last-{i}": f"{mean(h['reward'][-10:]):.3f}", f"kl-last-{i}": f"{mean(h['kl'][-5:]):.3f}"}
        for part in ("seen", "unseen"):
            for tag, ev in (("sft", sft), (f"seed{i}", after(name))):
                hit, total, _ = seen_split(ev)[part]
                out[f"{part}-{tag}"] = pct(hit / total)
        hit0, total0, _ = seen_split(sft)["unseen"]
        hit1, total1, _ = seen_split(after(name))["unseen"]
        out[f"unseen-gain-{i}"] = pct(hit1 / total1 - hit0 / total0)
    h0 = history("capable-0")  # 种子 0 在训练批次上每首对上的句首数：前 10 步和最后 10 步
    out |= {"heads-first-0": f"{mean(h0['heads'][:10]):.2f}", "heads-last-0": f"{mean(h0['heads'][-10:]):.2f}"}
    out["seed-gap"] = pct(abs(after("capable-0")["sampled"]["line_heads"].value
                              - after("capable-1")["sampled"]["line_heads"].value))
    dpo = dpo_seed0()
    out |= {"dpo-sft-heads": pct(dpo["sft-heads"]), "dpo-heads": pct(dpo["dpo-heads"]),
            "dpo-gain": pct(dpo["dpo-heads"] - dpo["sft-heads"]), "dpo-sft-form": pct(dpo["sft-form"]),
            "dpo-form": pct(dpo["dpo-form"])}
    for i in (0, 1):
        out[f"vs-dpo-{i}"] = pct(versus_dpo(f"capable-{i}")[0])
    out["vs-dpo-error"] = pct(max(versus_dpo(f"capable-{i}")[1] for i in (0, 1)))
    # 80 步 SFT 出发的那一次：出发前（《评测》一文的比较结果）和之后
    start = before("weak")
    out |= {"weak-sft-heads": pct(start["sampled"]["line_heads"].value, 2),
            "weak-sft-heads-lo": pct(start["sampled"]["line_heads"].interval[0], 2),
            "weak-sft-heads-hi": pct(start["sampled"]["line_heads"].interval[1], 2),
            "weak-sft-other": pct(start["other_prompt"].value, 2),
            "weak-sft-form": pct(start["sampled"]["form"].value),
            "weak-sft-form-lo": pct(start["sampled"]["form"].interval[0]),
            "weak-sft-form-hi": pct(start["sampled"]["form"].interval[1]),
            "weak-sft-greedy": pct(start["greedy"]["line_heads"].value, 2)}
    weak = after("weak")
    out |= {"weak-heads": pct(weak["sampled"]["line_heads"].value, 2),
            "weak-heads-lo": pct(weak["sampled"]["line_heads"].interval[0], 2),
            "weak-heads-hi": pct(weak["sampled"]["line_heads"].interval[1], 2),
            "weak-form": pct(weak["sampled"]["form"].value), "weak-form-lo": pct(weak["sampled"]["form"].interval[0]),
            "weak-form-hi": pct(weak["sampled"]["form"].interval[1]),
            "weak-greedy": pct(weak["greedy"]["line_heads"].value, 2)}
    hw = history("weak")
    settings = result()["runs"]["weak"]["settings"]
    out["weak-head-lines"] = f"{round(sum(hw['heads']) * settings['prompts'] * settings['group']):,}"
    out["weak-flat"] = pct(mean(flat_share("weak")))
    out["weak-flat-last"] = str(sum(hw["flat_groups"][-10:]))
    out["weak-kl-last"] = f"{mean(hw['kl'][-10:]):.3f}"
    out["capable-kl-last"] = f"{mean(history('capable-0')['kl'][-10:]):.3f}"
    out["weak-kl-ratio"] = f"{mean(hw['kl'][-10:]) / mean(history('capable-0')['kl'][-10:]):.1f}"
    # 只奖励格式
    hack = after("form-only")
    out |= row_values("hack", hack, pass1=False)
    out["hack-drop"] = pct(sft["sampled"]["line_heads"].value - hack["sampled"]["line_heads"].value)
    out["hack-div-share"] = pct(hack["char_diversity"] / sft["char_diversity"], 0)
    out["hack-flat-last"] = str(sum(history("form-only")["flat_groups"][-10:]))
    return out


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
