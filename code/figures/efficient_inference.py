"""《推理更省：量化与分块注意力》一文中的图和文末练习的答案。

量化的图用第一阶段训练好的唐诗 GPT（构建产物 tang-gpt）；分块注意力的图用固定种子的随机向量，没有训练。
@figure 声明一张构建时画的图，@figure_data 给它一个网页上可以操作的版本，@exercise_answer 算出文末练习的答案
（写法见 CONTRIBUTING.md）。单独运行本文件会把图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math

import torch
from figkit import exercise_answer, figure, figure_data, new_figure
from inference_cost import FORMATS, WeightFormat, decode_cost, llama_matrices, ridge_point
from llama import LLAMA2_7B
from quantize import BITS, SCHEME_NAMES, SCHEMES, tang_loss, tang_sweep
from tiled_attention import online_softmax_steps

# ---------- 量化：验证集损失和位宽（训练好的唐诗 GPT） ----------


@figure(
    "quant-loss-vs-bits",
    article="efficient-inference",
    title="唐诗 GPT 的线性层权重量化到 8、6、4、3、2 比特后，验证集上的损失",
    caption="训练好的模型：第一阶段的唐诗 GPT（4 层、d_model = 64），没有重新训练。17 个线性层的权重按四种分组做对称 "
    "absmax 量化再还原，词嵌入、位置嵌入、LayerNorm 和偏置保持 float32；损失是验证集固定 48 段上的平均交叉熵"
    "（nat / 词元），和第一阶段那篇的验证集损失是同一个量。左：横轴是位宽，虚线是不量化的模型；"
    "右：同样的点，横轴换成模型存下来的大小（整数码按位紧排，加上 float32 的缩放因子和没有量化的参数），"
    "「整个矩阵一个缩放」那条线的点旁标了位宽。",
)
def quant_loss_figure():
    sweep = tang_sweep()
    fig, axes = new_figure(ncols=2, size="wide", sharey=True)
    markers = ("x", "o", "s", "^")
    for scheme, marker in zip(SCHEMES, markers, strict=True):
        axes[0].plot(sweep["bits"], sweep["loss"][scheme], marker=marker, label=SCHEME_NAMES[scheme])
        kib = [b / 1024 for b in sweep["bytes"][scheme]]
        axes[1].plot(kib, sweep["loss"][scheme], marker=marker)
        if scheme == "per_tensor":  # 在最粗的那条线旁边标出位宽
            for bits, x, y in zip(sweep["bits"], kib, sweep["loss"][scheme], strict=True):
                axes[1].annotate(f"{bits} 比特", (x, y), xytext=(4, 4), textcoords="offset points", fontsize=9)
    for ax in axes:
        ax.axhline(sweep["float32"], linestyle="--", linewidth=1, color="0.5",
                   label="float32（不量化）" if ax is axes[0] else None)
    axes[0].set_xticks(list(BITS))
    axes[0].invert_xaxis()  # 从左到右位宽越来越小
    axes[0].set_xlabel("每个权重的比特数")
    axes[0].set_ylabel("验证集损失（nat / 词元）")
    axes[0].legend(fontsize=9)
    axes[1].set_xlabel("模型大小（KiB）")
    axes[1].set_title(f"不量化时模型有 {sweep['float32_bytes'] / 1024:,.0f} KiB，在这张图的右边之外", fontsize=10)
    return fig


# ---------- 在线 softmax：一行分数分块处理（随机向量） ----------

ROW_KEYS = 23  # 一个查询看 23 个键
ROW_TILE = 5  # 每块 5 个键：23 不是 5 的倍数，最后一块只有 3 个
ROW_DIM = 16
ROW_SEED = 6  # 前 8 个种子里，这一个在中途换算时乘的系数最小（最大值跳得最多），换算看得最清楚


def row_scores() -> torch.Tensor:
    """一个查询对 23 个键的分数 q·k/√d：标准正态的随机向量（float64，固定种子），没有训练。"""
    gen = torch.Generator().manual_seed(ROW_SEED)
    q = torch.randn(ROW_DIM, generator=gen, dtype=torch.float64)
    k = torch.randn(ROW_KEYS, ROW_DIM, generator=gen, dtype=torch.float64)
    return k @ q / math.sqrt(ROW_DIM)


@figure(
    "online-softmax-tiles",
    article="efficient-inference",
    title="一个查询的 23 个分数按每块 5 个依次处理：每块之后的运行最大值 m、归一化因子 l 和当时的权重",
    caption="随机向量，没有训练：一个 16 维的查询和 23 个键（标准正态，固定种子），分数是 q·k/√16。"
    "每个小图是处理完一块之后的样子：柱子是「现在就停下」时的权重 exp(s − m) / l，只有处理过的键有值；"
    "空心圆是对全部 23 个分数直接做 softmax 的结果。m 变大的那一块，之前的 l 乘上 exp(m_旧 − m_新) 换算过去"
    "（完整的算法里加权和也这样换算，这张图只画权重）；"
    "处理完最后一块（只有 3 个键），柱子和空心圆重合。",
)
def online_softmax_figure():
    scores = row_scores()
    exact = torch.softmax(scores, dim=-1)
    steps = online_softmax_steps(scores, ROW_TILE)
    fig, axes = new_figure(ncols=len(steps), size="wide", sharey=True)
    for ax, step in zip(axes, steps, strict=True):
        ax.bar(range(ROW_KEYS), step["weights"].numpy(), width=0.8)
        ax.plot(range(ROW_KEYS), exact.numpy(), "o", markersize=3, markerfacecolor="none", color="C1")
        ax.axvline(step["stop"] - 0.5, linewidth=0.8, color="0.5", linestyle=":")
        ax.set_title(f"前 {step['stop']} 个键\nm = {step['m']:.2f}，l = {step['l']:.2f}", fontsize=10)
        ax.set_xticks([0, ROW_KEYS - 1], labels=["1", str(ROW_KEYS)])
    axes[0].set_ylabel("权重")
    axes[len(steps) // 2].set_xlabel("键的位置")
    return fig


@figure_data("online-softmax-tiles", view="bars")
def online_softmax_data():
    """网页上的交互版：滑块走过每一块，旁边读出 m、l 和这一块把旧的 l 乘了多少。"""
    scores = row_scores()
    exact = torch.softmax(scores, dim=-1)
    steps = online_softmax_steps(scores, ROW_TILE)
    views = []
    for i, step in enumerate(steps):
        start = 0 if i == 0 else steps[i - 1]["stop"]
        views.append({
            "at": [i],
            "title": f"第 {i + 1} 块（键 {start + 1}–{step['stop']}）处理完：exp(s − m) / l",
            "values": step["weights"],
            "stats": [
                {"label": "已经处理的键", "value": step["stop"], "digits": 0, "suffix": f" / {ROW_KEYS}"},
                {"label": "运行最大值 m", "value": step["m"], "digits": 4},
                {"label": "归一化因子 l", "value": step["l"], "digits": 4},
                {"label": "旧的 l 乘上的 exp(m_旧 − m_新)", "value": step["alpha"], "digits": 4},
                {"label": "和精确 softmax 的最大差", "value": (step["weights"] - exact).abs().max(), "digits": 4},
            ],
        })
    top = max(step["weights"].max().item() for step in steps)
    return {
        "note": "拖动滑块，一块一块地处理键。静态图把五块并排画出；这里每次看一块，旁边列出这一行的 m 和 l。",
        "controls": [{"label": "处理到第几块", "options": [str(i + 1) for i in range(len(steps))], "kind": "slider"}],
        "views": views,
        "x_name": f"{ROW_KEYS} 个键（每块 {ROW_TILE} 个）", "y_name": "权重 exp(s − m) / l",
        "ymax": math.ceil(top * 10) / 10,
        "reference": {"value": exact.max().item(), "label": "精确 softmax 的最大权重"},
    }


# ---------- 文末练习的答案 ----------


@exercise_answer("int4-g128-bits")
def int4_g128_bits():
    """4 比特、每 128 个权重一组、缩放因子按 float16（2 字节）存：平均每个权重几比特。"""
    return WeightFormat("int4-g128", 4, group_size=128, scale_bytes=2).bits_per_weight()


@exercise_answer("fp16-ridge-batch")
def fp16_ridge_batch():
    """Llama 2 7B、fp16、A100：批大小至少多大，解码一步的算术强度才够到屋顶线的拐点。"""
    shapes = llama_matrices(LLAMA2_7B)
    fp16 = next(f for f in FORMATS if f.name == "fp16")
    batch = 1
    while decode_cost(shapes, fp16, batch)["intensity"] < ridge_point():
        batch += 1
    return batch


@exercise_answer("two-bit-scale-gap")
def two_bit_scale_gap():
    """2 比特时，整个矩阵一个缩放的验证集损失比每个输出通道一个缩放高多少（训练好的唐诗 GPT）。"""
    return tang_loss(2, "per_tensor") - tang_loss(2, "per_channel")


FINAL_OPTIONS = ("完全一样，只差浮点舍入", "差一点点：前几块用的是当时的最大值，误差留了下来",
                 "差得多：在线 softmax 只是一个近似")


@exercise_answer("online-softmax-final")
def online_softmax_final():
    """先猜再看：处理完最后一块，在线 softmax 的权重和精确 softmax 差多少（逐项比较，返回选项的文字）。"""
    scores = row_scores()
    gap = (online_softmax_steps(scores, ROW_TILE)[-1]["weights"] - torch.softmax(scores, dim=-1)).abs().max().item()
    return FINAL_OPTIONS[0] if gap < 1e-12 else FINAL_OPTIONS[1] if gap < 1e-3 else FINAL_OPTIONS[2]


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
