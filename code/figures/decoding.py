"""《解码：贪心、温度、top-k、top-p 与 KV 缓存》一文中的图。

前两张图的 logits 是编出来的例子（不来自任何模型），概率由 code/sampling.py 计算；
第三张图的乘加次数由 code/kv_cache.py 的 forward_macs 按矩阵形状算出（不是计时），
tests/code/test_kv_cache.py 用 PyTorch 的 FlopCounterMode 核对过这个公式。
文件末尾的 @exercise_answer 函数算出文章「练习」一节的答案，用的是同样的例子和 code/ 里同样的函数。
单独运行本文件会把所有图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from figkit import exercise_answer, figure, figure_data, new_figure, plain_log_axis
from kv_cache import decode_step_bytes, forward_macs, kv_cache_bytes
from sampling import apply_temperature, next_token_probs, top_k_filter, top_p_filter
from tiny_transformer import TinyConfig

# 编出来的例子：提示「今天天气真」之后，8 个候选词的 logits（不来自任何模型）
CANDIDATES = ["好", "不错", "热", "冷", "晴朗", "闷", "糟", "奇怪"]
EXAMPLE_LOGITS = [3.0, 2.2, 1.8, 1.2, 0.8, 0.3, -0.5, -1.5]
TEMPERATURES = [0.5, 1.0, 2.0]

# 截断图的两个编出来的分布：12 个词元，一个很尖（模型很有把握），一个很平（好几种说法都行）
PEAKED_LOGITS = [6.0, 3.5, 3.0, 2.5, 2.0, 1.5, 1.2, 1.0, 0.8, 0.5, 0.2, 0.0]
FLAT_LOGITS = [2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2, 1.1, 1.0, 0.9]
TOP_K, TOP_P = 5, 0.9

# 乘加次数图：GPT-2 small 的形状（12 层、12 个头、d_model = 768、词表 50257、最长 1024 个位置）
GPT2_SMALL = TinyConfig(vocab_size=50257, d_model=768, n_heads=12, n_layers=12, max_len=1024, mlp=True,
                        positions="learned")
MAX_T = 1024


def temperature_probs(temperature: float) -> list[float]:
    """例子 logits 在某个温度下的概率。"""
    return next_token_probs(torch.tensor(EXAMPLE_LOGITS, dtype=torch.float64), temperature).tolist()


def truncation(logits: list[float]) -> dict[str, list]:
    """一个分布的概率，以及 top-k、top-p 各自留下了哪些词元。"""
    z = torch.tensor(logits, dtype=torch.float64)
    return {
        "probs": torch.softmax(z, dim=-1).tolist(),
        "top_k": torch.isfinite(top_k_filter(z, TOP_K)).tolist(),
        "top_p": torch.isfinite(top_p_filter(z, TOP_P)).tolist(),
    }


def macs_per_step(use_cache: bool) -> list[int]:
    """序列长 t = 1..MAX_T 时，算出下一个词元的 logits 要做的乘加次数。"""
    if use_cache:
        return [forward_macs(GPT2_SMALL, 1, t - 1) for t in range(1, MAX_T + 1)]
    return [forward_macs(GPT2_SMALL, t) for t in range(1, MAX_T + 1)]


@figure(
    "decoding-temperature",
    article="decoding",
    title="同一组编出来的 logits 在温度 0.5、1、2 下的概率分布，以及最可能词元的概率随温度的变化",
    caption="logits 是编出来的例子（提示「今天天气真」之后的 8 个候选词），不来自任何模型。"
    "左：三个温度下每个候选词的概率，词的先后顺序在任何温度下都不变；"
    "右：概率最高的「好」在温度从 0.05 到 20 之间的概率，横轴是对数刻度，"
    "温度趋于 0 时趋近 1（贪心），温度很高时趋近 1/8（均匀分布，虚线）。",
)
def decoding_temperature():
    fig, axes = new_figure(ncols=2, size="tall", gridspec_kw={"width_ratios": [1.5, 1]})
    ax = axes[0]
    width = 0.8 / len(TEMPERATURES)
    positions = range(len(CANDIDATES))
    for i, t in enumerate(TEMPERATURES):
        offset = (i - (len(TEMPERATURES) - 1) / 2) * width
        ax.bar([x + offset for x in positions], temperature_probs(t), width=width, label=f"温度 {t:g}")
    ax.set_xticks(list(positions), labels=CANDIDATES)
    ax.set_ylabel("概率")
    ax.set_xlabel("候选词（按 logit 从大到小）")
    ax.set_title("温度越低越尖，越高越平")
    ax.legend()
    ax.grid(True, axis="y")

    ax = axes[1]
    temps = [0.05 * 400 ** (i / 120) for i in range(121)]  # 0.05 到 20，对数坐标上等距
    ax.plot(temps, [temperature_probs(t)[0] for t in temps], color="C0")
    ax.axhline(1 / len(CANDIDATES), color="C5", linestyle="--", linewidth=1.2)
    ax.text(0.06, 1 / len(CANDIDATES) + 0.03, "均匀分布 1/8", color="C5", fontsize=9)
    for i, t in enumerate(TEMPERATURES):
        ax.plot([t], [temperature_probs(t)[0]], "o", color=f"C{i}")
    plain_log_axis(ax, "x", [0.1, 0.5, 1, 2, 5, 20], base=10)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("温度")
    ax.set_ylabel("「好」的概率")
    ax.set_title("最可能的词元占多少")
    ax.grid(True)
    return fig


# 交互版的滑块：含静态图左边的三个温度 0.5、1、2
EXPLORER_TEMPERATURES = [0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0]


@figure_data("decoding-temperature", view="bars")
def decoding_temperature_data():
    """网页上的交互版：滑块选温度，按钮切换要不要再做 top-p（p = TOP_P）；柱子是 8 个候选词的概率。"""
    logits = torch.tensor(EXAMPLE_LOGITS, dtype=torch.float64)
    views = []
    for i, t in enumerate(EXPLORER_TEMPERATURES):
        before = next_token_probs(logits, t)
        for j, top_p in enumerate((None, TOP_P)):
            probs = next_token_probs(logits, t, top_p=top_p)  # 做了 top-p 时，留下的词重新归一化
            kept = probs > 0
            views.append({
                "at": [i, j],
                "title": f"温度 {t:g}，{'不截断' if top_p is None else f'top-p（p = {top_p:g}）之后'}："
                f"{len(CANDIDATES)} 个候选词的概率",
                "values": probs,
                "stats": [
                    {"label": "「好」的概率", "value": probs[0], "digits": 3},
                    {"label": "「好」「不错」在截断前的概率之和", "value": before[:2].sum(), "digits": 3},
                    {"label": "能抽到的候选词", "value": int(kept.sum()), "digits": 0,
                     "suffix": f" / {len(CANDIDATES)}"},
                    {"label": "留下的词在截断前的概率之和", "value": before[kept].sum(), "digits": 3},
                ],
            })
    return {
        "note": "拖动滑块改变温度，用按钮切换是否再做 top-p；静态图左边只画了温度 0.5、1、2，不做截断。",
        "controls": [
            {"label": "温度", "options": [f"{t:g}" for t in EXPLORER_TEMPERATURES], "kind": "slider",
             "initial": EXPLORER_TEMPERATURES.index(1.0)},
            {"label": "截断", "options": ["不截断", f"top-p（p = {TOP_P:g}）"]},
        ],
        "views": views,
        "x_name": "、".join(CANDIDATES) + "（从左到右）",
        "y_name": "概率", "ymax": 1,
        "reference": {"value": 1 / len(CANDIDATES), "label": f"均匀分布 1/{len(CANDIDATES)}"},
    }


@figure(
    "decoding-truncation",
    article="decoding",
    title="top-k（k = 5）与 top-p（p = 0.9）在一个尖的和一个平的编造分布上各留下几个词元",
    caption="两组 logits 都是编出来的例子（各 12 个词元），不来自任何模型，温度为 1。"
    "柱子是每个词元的概率，从高到低排列；蓝色的柱子是 top-p（p = 0.9）留下的词元，灰色的是去掉的；"
    "虚线左边是 top-k（k = 5）留下的词元。",
)
def decoding_truncation():
    fig, axes = new_figure(ncols=2, size="tall")
    for ax, (name, logits) in zip(axes, (("尖的分布", PEAKED_LOGITS), ("平的分布", FLAT_LOGITS)), strict=True):
        data = truncation(logits)
        probs, kept = data["probs"], data["top_p"]
        for x, (p, keep) in enumerate(zip(probs, kept, strict=True)):
            ax.bar([x], [p], color="C0" if keep else "C5", alpha=1.0 if keep else 0.4)
        ax.axvline(TOP_K - 0.5, color="C1", linestyle="--", linewidth=1.4)
        ax.text(TOP_K - 0.35, 0.95 * max(probs), f"top-k：\n留 {sum(data['top_k'])} 个", color="C1", fontsize=9,
                va="top")
        kept_mass = sum(p for p, keep in zip(probs, kept, strict=True) if keep)
        ax.set_title(f"{name}：top-p 留 {sum(kept)} 个（共 {kept_mass:.0%}）")
        ax.set_xticks(range(len(probs)), labels=[str(i + 1) for i in range(len(probs))])
        ax.set_xlabel("词元（按概率从高到低）")
        ax.set_ylabel("概率")
        ax.grid(True, axis="y")
    return fig


@figure(
    "kv-cache-work",
    article="decoding",
    title="GPT-2 small 的形状下，生成每个词元的乘加次数：有 KV 缓存与没有 KV 缓存",
    caption="乘加次数按矩阵形状算出（code/kv_cache.py 的 forward_macs，只数矩阵乘法），不是计时；"
    "形状取 GPT-2 small：12 层、12 个头、d_model = 768、词表 50257。"
    "左：序列已有 t 个词元时，算出下一个词元要做的乘加；右：从 1 个词元的提示开始、"
    "一共生成 n 个词元的累计乘加。两图纵轴都是对数刻度。",
)
def kv_cache_work():
    cached, full = macs_per_step(True), macs_per_step(False)
    ts = list(range(1, MAX_T + 1))
    fig, axes = new_figure(ncols=2, size="tall")
    axes[0].plot(ts, full, label="没有缓存：整个序列重算", color="C1")
    axes[0].plot(ts, cached, label="有缓存：只算新词元", color="C0")
    axes[0].set_xlabel("序列已有的词元数 t")
    axes[0].set_ylabel("这一步的乘加次数")
    axes[0].set_title("每生成一个词元")
    axes[0].annotate(f"t = {MAX_T} 时相差 {full[-1] / cached[-1]:.0f} 倍", xy=(MAX_T, cached[-1]),
                     xytext=(420, 6e8), color="C0", fontsize=9, arrowprops=dict(arrowstyle="->", color="C0"))
    total_cached, total_full, running_c, running_f = [], [], 0, 0
    for c, f in zip(cached, full, strict=True):
        running_c, running_f = running_c + c, running_f + f
        total_cached.append(running_c)
        total_full.append(running_f)
    axes[1].plot(ts, total_full, color="C1", label="没有缓存")
    axes[1].plot(ts, total_cached, color="C0", label="有缓存")
    axes[1].set_xlabel("一共生成的词元数 n")
    axes[1].set_ylabel("累计乘加次数")
    axes[1].set_title("生成 n 个词元的总量")
    for ax in axes:
        ax.set_yscale("log")
        ax.set_xlim(0, MAX_T)
        ax.set_xticks([1, 256, 512, 768, 1024])
        ax.grid(True, which="major")
    axes[0].legend(loc="center right")
    return fig


# ---------- 练习的答案（文章末尾的「练习」一节） ----------

MIB, KIB = 2**20, 2**10


@exercise_answer("temperature-half-ratio")
def temperature_half_ratio():
    """温度 0.5 时，例子 logits 里「好」的概率是「不错」的几倍。"""
    probs = temperature_probs(0.5)
    return probs[CANDIDATES.index("好")] / probs[CANDIDATES.index("不错")]


@exercise_answer("top-k-then-top-p-count")
def top_k_then_top_p_count():
    """例子 logits、温度 1，先 top-k（k = 5）再 top-p（p = 0.9）之后还剩几个候选词。"""
    probs = next_token_probs(torch.tensor(EXAMPLE_LOGITS, dtype=torch.float64), 1.0, top_k=TOP_K, top_p=TOP_P)
    return int((probs > 0).sum())


# top-p 练习的四个选项：温度 0.5、p = 0.9 时，被去掉的词里概率最高的是哪一个
TOP_P_DROP_OPTIONS = ("热", "冷", "晴朗", "闷")


@exercise_answer("top-p-first-dropped")
def top_p_first_dropped():
    """例子 logits 在温度 0.5 下做 top-p（p = 0.9），被去掉的词里概率最高的那个（返回选项的文字）。"""
    z = apply_temperature(torch.tensor(EXAMPLE_LOGITS, dtype=torch.float64), 0.5)
    kept = torch.isfinite(top_p_filter(z, TOP_P)).tolist()
    dropped = [word for word, keep in zip(CANDIDATES, kept, strict=True) if not keep]  # 候选词按 logit 从大到小
    return dropped[0] if dropped and dropped[0] in TOP_P_DROP_OPTIONS else f"先去掉的是 {dropped[:1]}，不在选项里"


@exercise_answer("batch8-step-mib")
def batch8_step_mib():
    """GPT-2 small 的形状、float16，8 条序列（算上新词元各 1024 个位置）一起解码一步，至少从显存读多少 MiB。"""
    return decode_step_bytes(GPT2_SMALL, MAX_T, batch_size=8) / MIB


@exercise_answer("gqa-cache-kib")
def gqa_cache_kib():
    """32 层、32 个查询头、每头 128 维，每 4 个查询头共用一组键值：float16 下每个词元的 KV 缓存有多少 KiB。"""
    n_layers, n_query_heads, group, d_head = 32, 32, 4, 128
    return kv_cache_bytes(n_layers, n_query_heads // group, d_head, seq_len=1) // KIB


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
