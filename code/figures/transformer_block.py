"""《Transformer 块》一文中的图。

数据全部由 code/block_depth.py 和 code/transformer_block.py 计算：随机初始化的块（没有训练），
以及从模块里直接数出来的参数量。单独运行本文件会把所有图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math
from functools import cache

import torch
from block_depth import DepthProfile, depth_profile, last_layer_gradient, residual_stream_std
from figkit import exercise_answer, figure, figure_data, new_figure, plain_log_axis
from transformer_block import TransformerBlock, block_flops, parameter_breakdown

# 图中四种拼法的名字和画法：颜色按全站配色的顺序取
LAYOUT_LABELS = {
    "plain": "无残差、无归一化",
    "residual": "只有残差",
    "post": "Post-LN",
    "pre": "Pre-LN",
}
DEPTH = 32  # 残差流实验叠的层数
STACK_SIZES = [1, 2, 4, 8, 16, 32]  # Pre-LN / Post-LN 梯度实验的总层数
PRENORM_DEEP = 64  # 梯度图的交互版和练习多看的一档：比静态图最深的 32 层再深一倍
D_MODELS = [64, 128, 256, 512, 1024, 2048, 4096]  # 参数分布图的宽度，每头 64 维
GRAD_FLOOR = 0.01  # 梯度图纵轴的下限：无残差的曲线低于它的部分出界，改用文字标出


@cache
def depth_profiles() -> dict[str, DepthProfile]:
    """四种拼法各叠 DEPTH 层，返回 {layout: DepthProfile}。浅色、深色两张图共用这份数据。"""
    return {layout: depth_profile(layout, n_layers=DEPTH) for layout in LAYOUT_LABELS}


@cache
def last_layer_gradients() -> dict[str, list[float]]:
    """{layout: [叠 n 层时最后一个块 FFN 权重的梯度范数，n 取 STACK_SIZES]}。"""
    return {layout: [last_layer_gradient(layout, n) for n in STACK_SIZES] for layout in ("post", "pre")}


@cache
def parameter_shares() -> dict[str, dict[str, list[int]]]:
    """两种常见配置下，各宽度的块里注意力、前馈网络、归一化各有多少参数（从模块里数）。

    在 meta 设备上建模块：只有形状、不分配内存，d_model = 4096 的块也是瞬间建好。
    """
    configs = {
        "gpt2": dict(norm="layer", ffn="gelu", bias=True),  # LayerNorm + GELU，带偏置
        "llama": dict(norm="rms", ffn="swiglu", bias=False),  # RMSNorm + SwiGLU，无偏置
    }
    out: dict[str, dict[str, list[int]]] = {}
    for name, kwargs in configs.items():
        parts: dict[str, list[int]] = {"attention": [], "ffn": [], "norms": []}
        for d in D_MODELS:
            with torch.device("meta"):
                block = TransformerBlock(d, d // 64, layout="pre", **kwargs)
            for part, n in parameter_breakdown(block).items():
                parts[part].append(n)
        out[name] = parts
    return out


@figure(
    "residual-depth",
    article="transformer-block",
    title="32 层随机初始化的块：四种拼法下残差流的标准差和梯度随深度的变化",
    caption="数据来自随机初始化（PyTorch 默认初始化，未训练）的 32 个块，输入是标准正态的随机张量，"
    "损失是输出与一个固定随机张量的内积。横轴 l 是经过 l 个块之后的残差流（l=0 是最初的输入）。"
    "左：它的标准差；右：损失对它的梯度范数，"
    "除以对最终输出的梯度范数，纵轴只画到 0.01，无残差的曲线出界后，它在第 0 层的值标在图中。"
    "两图纵轴都是对数刻度。",
)
def residual_depth():
    profiles = depth_profiles()
    fig, axes = new_figure(ncols=2, size="tall")
    layers = list(range(DEPTH + 1))
    markers = {"plain": "x", "residual": "^", "post": "s", "pre": "o"}
    for layout, label in LAYOUT_LABELS.items():
        p = profiles[layout]
        style = dict(marker=markers[layout], markevery=4, label=label)
        axes[0].plot(layers, p.std, **style)
        axes[1].plot(layers, p.grad, **style)
    plain_log_axis(axes[0], "y", [0.03, 0.1, 0.3, 1, 3, 10], base=10)
    axes[0].set_title("前向：残差流的尺度")
    axes[0].set_ylabel("残差流的标准差")
    # 无残差时梯度缩小几十个数量级：只画 0.01 以上的范围，出界的部分用文字标出最终的值
    floor = GRAD_FLOOR
    plain_log_axis(axes[1], "y", [floor, 0.1, 1, 10], base=10)
    axes[1].set_ylim(floor, 60)
    last_below = max(i for i, v in enumerate(profiles["plain"].grad) if v < floor)
    exponent = round(math.log10(profiles["plain"].grad[0]))
    axes[1].annotate(f"无残差、无归一化：出界，\n到第 0 层只剩约 $10^{{{exponent}}}$",
                     xy=(last_below + 0.5, floor * 1.05), xytext=(8, 0.025), color="C0", fontsize=9,
                     arrowprops=dict(arrowstyle="->", color="C0"))
    axes[1].set_title("反向：梯度传到第 l 层时的大小")
    axes[1].set_ylabel("梯度范数（相对最终输出处）")
    for ax in axes:
        ax.set_xlabel("层 l（0 为最初的输入）")
        ax.set_xticks(range(0, DEPTH + 1, 8))
        ax.grid(True, which="major")
    axes[0].legend(loc="center right", bbox_to_anchor=(1.0, 0.36))
    return fig


@figure(
    "prenorm-gradient",
    article="transformer-block",
    title="最后一个块的前馈网络权重梯度随总层数的变化：Post-LN 不变，Pre-LN 变小",
    caption="数据来自随机初始化（未训练）的块，总层数从 1 到 32；每个点是一次前向、反向后，"
    "最后一个块里前馈网络降维矩阵的梯度范数。损失是最终输出与固定随机张量的内积，按词元数平均。"
    "Pre-LN 的堆叠末尾另有一个 LayerNorm。横轴是对数刻度。",
)
def prenorm_gradient():
    grads = last_layer_gradients()
    fig, ax = new_figure(size="wide")
    ax.plot(STACK_SIZES, grads["post"], "s-", label="Post-LN")
    ax.plot(STACK_SIZES, grads["pre"], "o-", label="Pre-LN")
    plain_log_axis(ax, "x", STACK_SIZES)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("总层数 L")
    ax.set_ylabel("梯度范数")
    ax.set_title("初始化时，最靠近输出的那一层拿到多大的梯度")
    ax.grid(True)
    ax.legend()
    return fig


# 交互版的滑块：静态图的 6 种总层数，再多一档 PRENORM_DEEP 层（练习 prenorm-gradient-64 问的就是它）
EXPLORER_STACK_SIZES = [*STACK_SIZES, PRENORM_DEEP]


@cache
def explorer_gradients() -> dict[str, list[float]]:
    """{layout: [叠 n 层时最后一个块 FFN 降维矩阵的梯度范数，n 取 EXPLORER_STACK_SIZES]}，
    外加 "pre_std"：Pre-LN 残差流（末尾归一化之前）的标准差。"""
    out = {layout: [last_layer_gradient(layout, n) for n in EXPLORER_STACK_SIZES] for layout in ("post", "pre")}
    out["pre_std"] = [residual_stream_std("pre", n) for n in EXPLORER_STACK_SIZES]
    return out


@figure_data("prenorm-gradient", view="bars")
def prenorm_gradient_data():
    """网页上的交互版：滑块选总层数，两根柱子是 Post-LN、Pre-LN 最后一个块的梯度；旁边列出和 1 层时的比较。"""
    data = explorer_gradients()
    views = []
    for i, n in enumerate(EXPLORER_STACK_SIZES):
        post, pre, std = data["post"][i], data["pre"][i], data["pre_std"][i]
        views.append({
            "at": [i],
            "title": f"总层数 L = {n}：最后一个块前馈网络降维矩阵的梯度范数",
            "values": [post, pre],
            "stats": [
                {"label": "Post-LN 的梯度范数", "value": post, "digits": 3},
                {"label": "Pre-LN 的梯度范数", "value": pre, "digits": 3},
                {"label": "Pre-LN：是叠 1 层时的", "value": pre / data["pre"][0], "digits": 3, "suffix": " 倍"},
                {"label": "照 1/√L 应是叠 1 层时的", "value": 1 / math.sqrt(n), "digits": 3, "suffix": " 倍"},
                {"label": "Pre-LN 残差流的标准差（末尾归一化之前）", "value": std, "digits": 3},
                {"label": "叠 1 层时的标准差 ÷ 这个标准差", "value": data["pre_std"][0] / std, "digits": 3},
            ],
        })
    return {
        "note": f"拖动滑块改变总层数 L；左边的柱子是 Post-LN，右边的是 Pre-LN。"
        f"静态图画到 {STACK_SIZES[-1]} 层，这里多一档 {PRENORM_DEEP} 层。",
        "controls": [{"label": "总层数 L", "options": list(EXPLORER_STACK_SIZES), "kind": "slider"}],
        "views": views,
        "x_name": "左：Post-LN　右：Pre-LN", "y_name": "最后一个块 FFN 降维矩阵的梯度范数",
        "ymax": math.ceil(max(data["post"] + data["pre"])),
        "reference": {"value": data["pre"][0], "label": "Pre-LN 叠 1 层时"},
    }


@figure(
    "block-parameters",
    article="transformer-block",
    title="一个块的参数在注意力、前馈网络和归一化之间的分配，随 d_model 变化",
    caption="从 TransformerBlock 模块里逐个参数数出来的（不是按公式算的），每头 64 维。"
    "左：参数个数，双对数刻度，实线为 LayerNorm + GELU（带偏置），虚线为 RMSNorm + SwiGLU（无偏置）；"
    "右：LayerNorm + GELU 配置下三部分各占的比例。",
)
def block_parameters():
    shares = parameter_shares()
    fig, axes = new_figure(ncols=2, size="tall")
    labels = {"attention": "注意力", "ffn": "前馈网络", "norms": "归一化"}
    for i, (part, label) in enumerate(labels.items()):
        color = f"C{i}"
        axes[0].plot(D_MODELS, shares["gpt2"][part], "o-", color=color, label=f"{label}")
        axes[0].plot(D_MODELS, shares["llama"][part], "--", color=color)
    plain_log_axis(axes[0], "x", D_MODELS)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("d_model")
    axes[0].set_ylabel("参数个数")
    axes[0].set_title("各部分的参数量")
    axes[0].grid(True, which="major")
    # 图例：颜色表示部分，线型表示配置
    from matplotlib.lines import Line2D

    handles, _ = axes[0].get_legend_handles_labels()
    muted = axes[0].spines["left"].get_edgecolor()
    handles += [Line2D([], [], color=muted, linestyle="-", label="LayerNorm + GELU"),
                Line2D([], [], color=muted, linestyle="--", label="RMSNorm + SwiGLU")]
    axes[0].legend(handles=handles, fontsize=8)

    gpt2 = shares["gpt2"]
    totals = [sum(gpt2[p][i] for p in labels) for i in range(len(D_MODELS))]
    positions = range(len(D_MODELS))
    bottom = [0.0] * len(D_MODELS)
    for i, (part, label) in enumerate(labels.items()):
        pct = [100 * n / t for n, t in zip(gpt2[part], totals, strict=True)]
        axes[1].bar(positions, pct, bottom=bottom, color=f"C{i}", label=label, width=0.7)
        bottom = [b + v for b, v in zip(bottom, pct, strict=True)]
    for x, n, t in zip(positions, gpt2["norms"], totals, strict=True):
        axes[1].text(x, 101, f"{100 * n / t:.2f}%", ha="center", va="bottom", fontsize=7)
    axes[1].set_xticks(list(positions), labels=[str(d) for d in D_MODELS])
    axes[1].set_ylim(0, 110)
    axes[1].set_yticks([0, 25, 50, 75, 100])
    axes[1].set_xlabel("d_model（柱顶数字：归一化的占比）")
    axes[1].set_ylabel("占一个块参数的百分比")
    axes[1].set_title("LayerNorm + GELU 配置的占比")
    return fig


# ---------- 练习的答案（文章末尾「练习」一节）：构建时算出，不手写 ----------


@exercise_answer("block-params-96")
def block_params_96():
    """TransformerBlock(d_model=96, n_heads=4) 的可训练参数个数：Pre-LN、LayerNorm、GELU、带偏置，从模块里数。"""
    return sum(parameter_breakdown(TransformerBlock(96, 4)).values())


@exercise_answer("scaled-init-variance-32")
def scaled_init_variance_32():
    """Pre-LN 叠 32 个随机初始化的块，残差分支乘以 1/√(2L) 之后，最后一个块输出的方差。"""
    return residual_stream_std("pre", 32, scaled=True) ** 2


# Pre-LN 梯度练习：总层数从 1 加到 PRENORM_DEEP（静态图只画到 32），最后一个块的梯度变成原来的几倍；四个选项各管一段
PRENORM_RATIO_OPTIONS = (
    "降到约 1/64：每多一层，梯度就小一份",
    "降到约 1/8：按 $1/\\sqrt{L}$ 变小",
    "降到 0.3 到 0.5 倍之间",
    "基本不变，和 Post-LN 一样",
)


@exercise_answer("prenorm-gradient-64")
def prenorm_gradient_64():
    """Pre-LN 叠 PRENORM_DEEP 层时最后一个块 FFN 降维矩阵的梯度范数，除以叠 1 层时的，落在哪个选项里。"""
    ratio = last_layer_gradient("pre", PRENORM_DEEP) / last_layer_gradient("pre", STACK_SIZES[0])
    if ratio < 0.03:
        return PRENORM_RATIO_OPTIONS[0]
    if 0.09 < ratio < 0.17:
        return PRENORM_RATIO_OPTIONS[1]
    if 0.3 <= ratio <= 0.5:
        return PRENORM_RATIO_OPTIONS[2]
    if 0.85 < ratio < 1.2:
        return PRENORM_RATIO_OPTIONS[3]
    return f"倍数是 {ratio:.3f}，不在任何一个选项的范围里"


@exercise_answer("scores-crossover-768")
def scores_crossover_768():
    """d_model = 768 时，序列长到多少，block_flops 里注意力打分的运算量才追上其余两项之和（最小的 T）。"""
    T = 1
    while True:
        flops = block_flops(768, T)
        if flops["attention_scores"] >= flops["attention_proj"] + flops["ffn"]:
            return T
        T += 1


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
