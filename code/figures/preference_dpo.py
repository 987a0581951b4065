"""《偏好对齐：从 RLHF 到 DPO》一文中的图和文末练习的答案。

训练得到的数都来自 code/dpo_train.py 的构建产物 dpo_experiment()：500 步 SFT 模型（两个种子）自己写诗造偏好对，
训练奖励模型，再用 DPO、IPO 和几个 β 训练策略，在验证集的 342 组藏头上评估。
@figure 声明构建时画的图，@figure_data 给它网页上可以操作的版本，@exercise_answer 算出文末练习的答案。
单独运行本文件会把图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from functools import cache

import torch
from acrostic import head_hits
from dpo_train import BETAS, dpo_results
from figkit import article_values, exercise_answer, figure, figure_data, new_figure, plain_log_axis
from preference import dpo_loss
from verifiers import difference_error, wilson_interval

SEEDS = (0, 1)


@cache
def result() -> dict:
    return dpo_results(verbose=False)


def run_name(beta: float) -> str:
    """β 扫描里每个 β 的那次训练在结果里的名字（默认的 β = 0.1 就是 "dpo"）。"""
    return "dpo" if beta == result()["settings"].beta else f"dpo-beta-{beta}"


def rates(ev: dict) -> dict[str, tuple[float, float, float]]:
    """一次评估的三个比例和各自的 95% Wilson 区间：采样的句首命中（逐句）、采样的格式、贪心的句首命中。"""
    smp, grd = ev["sampled"], ev["greedy"]
    out = {}
    for key, hit, total in (("sampled_heads", smp["lines"], 4 * smp["n"]), ("sampled_form", smp["form"], smp["n"]),
                            ("greedy_heads", grd["lines"], 4 * grd["n"])):
        lo, hi = wilson_interval(hit, total)
        out[key] = (hit / total, lo, hi)
    return out


def last_quarter(xs: list[float]) -> float:
    """训练记录最后四分之一步数的平均：每步只是一批偏好对，单看一步太吵。"""
    tail = xs[len(xs) - len(xs) // 4:]
    return sum(tail) / len(tail)


# ---------- 图 1：训练中好回答、差回答的对数概率相对参考模型的变化（训练得到） ----------


@figure(
    "dpo-likelihood-shift",
    article="preference-dpo",
    title="DPO 训练中，好回答和差回答的对数概率相对参考模型的变化",
    caption="训练得到：500 步 SFT 模型（两个种子）用 DPO（β = 0.1）训练 60 步，每步一批 32 个偏好对。"
    "纵轴是这一批上 log π − log π_ref 的平均（奈特，整首回答求和）：实线是好回答，虚线是差回答。"
    "两者之差越拉越大，主要靠把差回答往下压；好回答升得少得多。",
)
def likelihood_shift_figure():
    r = result()
    fig, ax = new_figure(size="wide")
    for i, seed in enumerate(SEEDS):
        h = r["seeds"][seed]["runs"]["dpo"]["history"]
        steps = range(1, len(h.chosen_shift) + 1)
        ax.plot(steps, h.chosen_shift, "-", color=f"C{i}", label=f"好回答（种子 {seed}）")
        ax.plot(steps, h.rejected_shift, "--", color=f"C{i}", label=f"差回答（种子 {seed}）")
    ax.axhline(0, color="0.5", linewidth=0.8)
    ax.set_xlabel("训练步数")
    ax.set_ylabel("log π − log π_ref（奈特）")
    ax.grid(True)
    ax.legend(fontsize=9, loc="lower left", ncols=2)
    return fig


# ---------- 图 2：训练前后的比例，两个种子，带区间（训练得到、实测） ----------

METRICS = (("sampled_heads", "采样的句首命中"), ("sampled_form", "采样的格式正确"), ("greedy_heads", "贪心的句首命中"))


@figure(
    "dpo-before-after",
    article="preference-dpo",
    title="DPO 前后：验证集藏头上的句首命中率和格式正确率，两个种子，带 95% Wilson 区间",
    caption="训练得到的模型，实测的比例：验证集 342 组藏头，每组按温度 1 采样写 2 首、贪心写 1 首。"
    "灰色是 DPO 之前的 SFT 模型，蓝色是 DPO（β = 0.1）之后；横线是 95% Wilson 区间（句首逐句数，格式逐首数）。"
    "格式正确的比例两个种子都上升，训练前后的区间都不重叠；句首命中训练前后的区间重叠，贪心的还略降。",
)
def before_after_figure():
    r = result()
    fig, ax = new_figure(size="tall")
    labels, y = [], 0
    for key, label in reversed(METRICS):
        for seed in reversed(SEEDS):
            run = r["seeds"][seed]
            for ev, color, name, dy in ((run["before"], "0.5", "SFT", 0.15), (run["runs"]["dpo"]["after"], "C0",
                                                                               "DPO β = 0.1", -0.15)):
                value, lo, hi = rates(ev)[key]
                ax.errorbar([value], [y + dy], xerr=[[value - lo], [hi - value]], fmt="o", color=color, capsize=3,
                            label=name if y == 0 else None)
            labels.append(f"{label}（种子 {seed}）")
            y += 1
    ax.set_yticks(range(len(labels)), labels=labels, fontsize=9)
    ax.set_xlabel("比例")
    ax.set_xlim(0.3, 1)
    ax.grid(True, axis="x")
    ax.legend(loc="lower right", fontsize=9)
    return fig


# ---------- 图 3：β 的作用（训练得到；可以操作） ----------


def sweep() -> list[dict]:
    """种子 0 上 β 扫描的每一次：β、KL、留出偏好对上隐含奖励排对的比例、采样的句首命中和格式、贪心的句首命中，
    以及训练最后四分之一步数里好回答、差回答相对参考模型的平均变化。"""
    run = result()["seeds"][0]
    out = []
    for beta in BETAS:
        r = run["runs"][run_name(beta)]
        rt = rates(r["after"])
        out.append({"beta": beta, "kl": r["after"]["kl"], "implicit": r["held_pair_accuracy"],
                    "heads": rt["sampled_heads"][0], "form": rt["sampled_form"][0], "greedy": rt["greedy_heads"][0],
                    "form_hits": r["after"]["sampled"]["form"], "poems": r["after"]["sampled"]["n"],
                    "chosen": last_quarter(r["history"].chosen_shift),
                    "rejected": last_quarter(r["history"].rejected_shift)})
    return out


@figure(
    "dpo-beta",
    article="preference-dpo",
    title="β 的作用：β 越小，策略离参考模型越远；句首命中几乎不动",
    caption="训练得到：种子 0 的 SFT 模型，同样的 {{ value:train-pairs-0 }} 个偏好对，DPO 训练 60 步，只换 β。"
    "左：验证集藏头上采样写的诗沿途到参考模型的 KL（奈特，整首求和）。右：采样的句首命中、采样的格式正确、"
    "留出的偏好对上隐含奖励排对的比例；同色的点线是 DPO 之前的 SFT 模型。横轴是对数坐标。",
)
def beta_figure():
    rows, before = sweep(), rates(result()["seeds"][0]["before"])
    betas = [row["beta"] for row in rows]
    fig, (left, right) = new_figure(ncols=2, size="wide")
    left.plot(betas, [row["kl"] for row in rows], "o-", color="C3")
    left.set_ylabel("KL(π‖π_ref)（奈特）")
    left.set_ylim(bottom=0)
    for key, label, color in (("heads", "采样的句首命中", "C0"), ("form", "采样的格式正确", "C1"),
                              ("implicit", "隐含奖励排对（留出）", "C2")):
        right.plot(betas, [row[key] for row in rows], "o-", color=color, label=label)
    for key, color in (("sampled_heads", "C0"), ("sampled_form", "C1")):
        right.axhline(before[key][0], color=color, linestyle=":")
    right.set_ylim(0.3, 1)
    right.legend(fontsize=9, loc="upper right")
    for ax in (left, right):
        plain_log_axis(ax, "x", betas, base=10)
        ax.set_xlabel("β（对数坐标）")
        ax.grid(True)
    return fig


@figure_data("dpo-beta", view="bars")
def beta_data():
    """网页上的交互版：滑块选一个 β，三根柱子是采样的句首命中、采样的格式正确、留出偏好对上隐含奖励排对的比例。"""
    rows, before = sweep(), rates(result()["seeds"][0]["before"])
    views = []
    for i, row in enumerate(rows):
        views.append({
            "at": [i], "title": f"β = {row['beta']:g}：到参考模型的 KL = {row['kl']:.2f} 奈特",
            "values": [row["heads"], row["form"], row["implicit"]],
            "stats": [{"label": "到参考模型的 KL（奈特）", "value": row["kl"], "digits": 2},
                      {"label": "采样的句首命中", "value": row["heads"], "digits": 3},
                      {"label": "采样的格式正确", "value": row["form"], "digits": 3},
                      {"label": "贪心的句首命中", "value": row["greedy"], "digits": 3},
                      {"label": "好回答的对数概率变化（最后 15 步平均）", "value": row["chosen"], "digits": 2},
                      {"label": "差回答的对数概率变化（最后 15 步平均）", "value": row["rejected"], "digits": 2}],
        })
    return {
        "note": f"静态图把四个 β 画在一起；这里一次看一个 β。柱子从左到右：采样的句首命中、采样的格式正确、"
                f"留出偏好对上隐含奖励排对的比例。DPO 之前的 SFT 模型：句首命中 {before['sampled_heads'][0]:.3f}，"
                f"格式正确 {before['sampled_form'][0]:.3f}。",
        "controls": [{"label": "β", "options": [f"{row['beta']:g}" for row in rows], "kind": "slider",
                      "initial": BETAS.index(result()["settings"].beta)}],
        "views": views, "x_name": "句首命中、格式正确、隐含奖励排对", "y_name": "比例", "ymax": 1,
        "reference": {"value": before["sampled_heads"][0], "label": "SFT 的句首命中"},
    }


# ---------- 文末练习的答案 ----------


@exercise_answer("dpo-loss-two-nats")
def dpo_loss_two_nats():
    """策略把好回答的对数概率比参考模型提高 2 奈特、差回答降低 2 奈特，β = 0.1 时一个偏好对的 DPO 损失。"""
    ref_good, ref_bad = torch.tensor([-95.0]), torch.tensor([-110.0])
    return dpo_loss(ref_good + 2, ref_bad - 2, ref_good, ref_bad, beta=0.1).item()


@exercise_answer("dpo-same-heads-share")
def dpo_same_heads_share():
    """种子 0 的偏好对里，好回答和差回答对上的句首一样多（只差在格式或押韵上）的占多少。"""
    p = result()["seeds"][0]["pairs"]
    same = sum(head_hits(h, c) == head_hits(h, r) for h, c, r in zip(p.heads, p.chosen_text, p.rejected_text,
                                                                      strict=True))
    return same / len(p.heads)


BETA_OPTIONS = ("KL 变小，句首命中明显上升", "KL 变小，句首命中几乎不变", "KL 变大，句首命中几乎不变")


@exercise_answer("dpo-beta-kl")
def dpo_beta_kl():
    """先猜再看：β 从 0.03 调到 1，KL 和句首命中怎样变（按扫描的结果挑选项：句首命中的最大差不到 2 个百分点算不变）。"""
    rows = sweep()
    smaller = rows[-1]["kl"] < rows[0]["kl"]
    spread = max(row["heads"] for row in rows) - min(row["heads"] for row in rows)
    if smaller:
        return BETA_OPTIONS[1] if spread < 0.02 else BETA_OPTIONS[0]
    return BETA_OPTIONS[2]


# ---------- 文中写的数：构建时算出，放进文章里 {{ value:名字 }} 的地方 ----------


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def quarter(xs: list[float], k: int) -> float:
    """训练记录第 k 个四分之一（0 起数）步数的平均。"""
    n = len(xs) // 4
    part = xs[k * n:(k + 1) * n]
    return sum(part) / len(part)


def pair_stats(seed: int) -> dict[str, float]:
    """种子 seed 的偏好对：好、差回答平均对上的句首数和格式正确的比例。"""
    from dpo_train import judge

    p = result()["seeds"][seed]["pairs"]
    out = {}
    for which, texts in (("chosen", p.chosen_text), ("rejected", p.rejected_text)):
        verdicts = [judge(h, t) for h, t in zip(p.heads, texts, strict=True)]
        out[f"{which}-heads"] = sum(v.heads for v in verdicts) / len(verdicts)
        out[f"{which}-form"] = sum(v.form for v in verdicts) / len(verdicts)
    return out


def token_table() -> dict[str, dict[str, float]]:
    """种子 0 的 DPO 策略在它训练用的偏好对上，各类词元的对数概率变化（code/dpo_train.py 的 head_token_shifts）。"""
    from capable_sft import capable_model
    from dpo_train import dpo_model, head_token_shifts

    run = result()["seeds"][SEEDS[0]]
    train = run["pairs"].subset(range(run["n_held_pairs"], len(run["pairs"])))
    policy, tok = dpo_model(result())
    ref, _ = capable_model(SEEDS[0])
    with torch.no_grad():
        return head_token_shifts(policy, ref, train, tok)


def signed(x: float) -> str:
    return f"{'+' if x >= 0 else '−'}{abs(x):.2f}"


def form_gap_error() -> float:
    """β 扫描里格式正确最高和最低的两次之差的 95% 误差（1.96 个标准误）：两次训练各自采样，彼此独立。"""
    rows = sorted(sweep(), key=lambda row: row["form"])
    lo, hi = rows[0], rows[-1]
    return 1.96 * difference_error((lo["form_hits"], lo["poems"]), (hi["form_hits"], hi["poems"]))


@article_values
def stated_values() -> dict[str, str]:
    r = result()
    out: dict[str, str] = {}
    for seed in SEEDS:
        run = r["seeds"][seed]
        pairs = run["pairs"]
        out |= {f"pairs-{seed}": str(len(pairs)), f"ties-{seed}": str(pairs.ties),
                f"train-pairs-{seed}": str(run["n_train_pairs"]),
                f"rm-train-{seed}": pct(run["reward_model"]["train_accuracy"]),
                f"rm-held-{seed}": pct(run["reward_model"]["held_accuracy"]),
                f"implicit-{seed}": pct(run["runs"]["dpo"]["held_pair_accuracy"])}
        for name, ev in (("sft", run["before"]), ("dpo", run["runs"]["dpo"]["after"])):
            rt = rates(ev)
            for key, short in (("sampled_heads", "heads"), ("sampled_form", "form")):
                value, lo, hi = rt[key]
                out |= {f"{name}-{short}-{seed}": pct(value), f"{name}-{short}-lo-{seed}": pct(lo),
                        f"{name}-{short}-hi-{seed}": pct(hi)}
            out[f"{name}-greedy-{seed}"] = pct(rt["greedy_heads"][0])
        out[f"dpo-kl-{seed}"] = f"{run['runs']['dpo']['after']['kl']:.2f}"
        before, after = rates(run["before"]), rates(run["runs"]["dpo"]["after"])
        out[f"heads-gain-{seed}"] = pct(after["sampled_heads"][0] - before["sampled_heads"][0])
        out[f"greedy-drop-{seed}"] = pct(before["greedy_heads"][0] - after["greedy_heads"][0])
        h = run["runs"]["dpo"]["history"]
        out[f"chosen-last-{seed}"] = f"{quarter(h.chosen_shift, 3):.1f}"
        out[f"rejected-last-{seed}"] = f"{-quarter(h.rejected_shift, 3):.1f}"
    stats = pair_stats(SEEDS[0])
    out |= {"chosen-heads": f"{stats['chosen-heads']:.2f}", "rejected-heads": f"{stats['rejected-heads']:.2f}",
            "chosen-form": pct(stats["chosen-form"]), "rejected-form": pct(stats["rejected-form"])}
    ipo = rates(r["seeds"][SEEDS[0]]["runs"]["ipo"]["after"])
    out |= {"ipo-heads": pct(ipo["sampled_heads"][0]), "ipo-form": pct(ipo["sampled_form"][0])}
    for row in sweep():
        b = f"{row['beta']:g}".replace(".", "")  # 0.03 → 003
        out |= {f"beta-kl-{b}": f"{row['kl']:.2f}", f"beta-heads-{b}": pct(row["heads"]),
                f"beta-form-{b}": pct(row["form"]), f"beta-implicit-{b}": pct(row["implicit"])}
    heads = [row["heads"] for row in sweep()]
    form = [row["form"] for row in sweep()]
    implicit = [row["implicit"] for row in sweep()]
    out |= {"beta-heads-min": pct(min(heads)), "beta-heads-max": pct(max(heads)),
            "beta-form-min": pct(min(form)), "beta-form-max": pct(max(form)),
            "beta-form-gap": pct(max(form) - min(form)), "beta-form-error": pct(form_gap_error()),
            "beta-implicit-min": pct(min(implicit)), "beta-implicit-max": pct(max(implicit))}
    slip = r["seeds"][SEEDS[0]]["runs"][run_name(0.03)]["history"].chosen_shift
    out |= {"slip-third": f"{quarter(slip, 2):.2f}", "slip-last": f"{quarter(slip, 3):.2f}"}
    out["held-pairs-0"] = str(r["seeds"][SEEDS[0]]["n_held_pairs"])
    table = token_table()
    for which in ("chosen", "rejected"):
        t = table[which]
        out |= {f"{which}-{k}": signed(t[k]) for k in ("right", "wrong", "required", "other")}
        out |= {f"{which}-{k}-size": abs_count(t[f"n_{k}"]) for k in ("right", "wrong", "other")}
    # 正文里按「压低了多少」读的几格：只写大小，方向由句子说（论断测试核对方向）
    out |= {f"{which}-{k}-abs": f"{abs(table[which][k]):.2f}"
            for which, k in (("rejected", "wrong"), ("rejected", "required"), ("chosen", "required"),
                             ("rejected", "other"))}
    return out


def abs_count(n: float) -> str:
    return f"{int(n):,}"


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
