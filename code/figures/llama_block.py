"""《现代的块：RMSNorm、SwiGLU、RoPE 与 GQA》一文中的图和文末练习的答案。

@figure 声明一张构建时画的图，@figure_data 给它一个网页上可以操作的版本，@exercise_answer 算出文末练习的答案
（写法见 CONTRIBUTING.md）。单独运行本文件会把图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from figkit import exercise_answer, figure, figure_data, new_figure
from llama import (
    LLAMA2_7B,
    LLAMA3_8B,
    LlamaBlock,
    MiniLlamaConfig,
    added_position_scores,
    kv_cache_bytes_per_token,
    rope_scores,
)
from llama_train import comparison

# ---------- RoPE：分数只取决于相对距离 ----------

ROPE_DIM = 16  # 一个头的维数
ROPE_SIZE = 16  # 表里放 16 个位置
ROPE_SEED = 0
OFFSETS = (0, 16, 32, 64, 128, 256, 512, 1024)  # 整块位置往后挪多少
CURVE_OFFSETS = (0, 64, 1024)  # 静态图画的三种挪法
CURVE_DISTANCES = 32  # 静态图：距离 0 .. 31


def rope_pair() -> tuple[torch.Tensor, torch.Tensor]:
    """一对随机的 q、k（标准正态，float64，固定种子）：没有训练，只用来看位置怎样进入分数。"""
    gen = torch.Generator().manual_seed(ROPE_SEED)
    return (torch.randn(ROPE_DIM, generator=gen, dtype=torch.float64),
            torch.randn(ROPE_DIM, generator=gen, dtype=torch.float64))


def score_table(kind: str, offset: int, size: int = ROPE_SIZE) -> torch.Tensor:
    q, k = rope_pair()
    return rope_scores(q, k, offset, size) if kind == "rope" else added_position_scores(q, k, offset, size)


def scores_by_distance(kind: str, offset: int, n: int = CURVE_DISTANCES) -> torch.Tensor:
    """k 在位置 offset，q 在 offset + Δ（Δ = 0 .. n-1）的分数：表的第 0 列。"""
    return score_table(kind, offset, n)[:, 0]


@figure(
    "rope-shift-table",
    article="llama-block",
    title="同一对 q、k 在不同位置上的注意力分数：RoPE 与加到 q、k 上的正弦编码",
    caption="一对随机的 16 维向量 q、k（标准正态，固定种子，没有训练）。k 放在位置 s，q 放在 s + 距离，"
    "横轴是距离，三条线是 s 取 0、64、1024。左：RoPE，三条线完全重合，分数只取决于距离；"
    "右：把正弦位置编码直接加到 q、k 上（投影取单位矩阵），同样的距离在不同的 s 下分数不同。",
)
def rope_relative_figure():
    fig, axes = new_figure(ncols=2, size="wide", sharey=True)
    for ax, kind, title in zip(axes, ("rope", "added"), ("RoPE：旋转 q 和 k", "正弦编码加到 q、k 上"), strict=True):
        # 第一条画成半透明的粗线，后两条细一些：RoPE 下三条线重合，也看得出它们都在
        styles = ({"linewidth": 5, "alpha": 0.35}, {"linestyle": "--", "marker": "."},
                  {"linestyle": ":", "marker": "x"})
        for offset, style in zip(CURVE_OFFSETS, styles, strict=True):
            ax.plot(range(CURVE_DISTANCES), scores_by_distance(kind, offset).numpy(), label=f"s = {offset}", **style)
        ax.set_title(title)
        ax.set_xlabel("距离（q 的位置 − k 的位置）")
        ax.axhline(0, linewidth=0.6, color="0.6")
    axes[0].set_ylabel("分数 q·k")
    axes[0].legend()
    return fig


@figure_data("rope-shift-table", view="heatmap")
def rope_relative_data():
    """网页上的交互版：整张 16 × 16 的分数表；滑块把整块位置往后挪，按钮切换两种位置编码。"""
    kinds = (("rope", "RoPE"), ("added", "正弦编码加到 q、k 上"))
    views = []
    for i, offset in enumerate(OFFSETS):
        for j, (kind, label) in enumerate(kinds):
            views.append({"at": [i, j], "title": f"{label}：q、k 的位置都从 {offset} 开始",
                          "values": score_table(kind, offset), "causal": True})
    limit = max(score_table(kind, o).abs().max().item() for o in OFFSETS for kind, _ in kinds)
    labels = [f"s+{i}" for i in range(ROPE_SIZE)]
    return {
        "note": "静态图画的是这张表的第一列（k 在位置 s）；这里是整张表，只画因果掩码留下的下三角。"
                "拖动滑块把整块位置往后挪，RoPE 的表一格都不变，每条对角线上的数也都相同。",
        "controls": [{"label": "起点 s", "options": list(OFFSETS), "kind": "slider"},
                     {"label": "位置编码", "options": [label for _, label in kinds]}],
        "views": views, "rows": labels, "cols": labels, "ticks": [str(i) for i in range(ROPE_SIZE)],
        "row_name": "q 的位置", "col_name": "k 的位置", "value_name": "分数 q·k",
        "vmin": -round(limit, 1) - 0.1, "vmax": round(limit, 1) + 0.1,
    }


# ---------- GQA：KV 缓存每个词元多少字节 ----------

KV_GROUPS = (32, 16, 8, 4, 2, 1)  # 键值头的个数（查询头固定 32 个）


def kv_kib_per_token(n_kv_heads: int) -> float:
    """Llama 3 8B 的形状（32 层、每头 128 维），换成 n_kv_heads 个键值头，float16 下每个词元的 KV 缓存（KiB）。"""
    return kv_cache_bytes_per_token(LLAMA3_8B.n_layers, n_kv_heads, LLAMA3_8B.head_dim) / 1024


@figure(
    "kv-bytes-gqa",
    article="llama-block",
    title="32 层、32 个查询头、每头 128 维：键值头越少，每个词元的 KV 缓存越小",
    caption="按公式计算（float16，每个数 2 字节），不是实测。层数、头数和每头维数取自 Meta 在 Hugging Face 上发布的 "
    "config.json：Llama 2 7B 是 32 个键值头（普通的多头注意力），Llama 3 8B 是 8 个（GQA）。"
    "其余的柱子是同样的形状换一个键值头数，不对应真实的模型；1 个键值头就是 MQA。",
)
def kv_bytes_figure():
    fig, ax = new_figure(size="wide")
    values = [kv_kib_per_token(n) for n in KV_GROUPS]
    bars = ax.bar(range(len(KV_GROUPS)), values)
    names = {LLAMA2_7B.n_kv_heads: "Llama 2 7B", LLAMA3_8B.n_kv_heads: "Llama 3 8B"}
    for i, (n, v) in enumerate(zip(KV_GROUPS, values, strict=True)):
        label = f"{v:g} KiB" + (f"\n{names[n]}" if n in names else "")
        ax.annotate(label, (i, v), ha="center", va="bottom", xytext=(0, 3), textcoords="offset points")
        if n in names:
            bars[i].set_hatch("//")
    ax.set_xticks(range(len(KV_GROUPS)), labels=[str(n) for n in KV_GROUPS])
    ax.set_xlabel("键值头的个数（32 个查询头平均分给它们）")
    ax.set_ylabel("每个词元的 KV 缓存（KiB）")
    ax.set_ylim(0, max(values) * 1.25)
    return fig


# ---------- 唐诗上的比较（训练得到） ----------


@figure(
    "llama-vs-gpt",
    article="llama-block",
    title="同样的预算下，Llama 式的块和第一阶段的 GPT 在验证集上的损失",
    caption="训练得到：在唐人五言绝句（繁体）上各训练 75 步，每步 8 段、每段 64 个词元，种子 0、1、2 各一次；"
    "两个模型都是 4 层、4 个头、d_model = 64，参数量只差 1 个。每 25 步在验证集固定的 48 段上量一次损失，"
    "实线是 Llama 式的块，虚线是 GPT，每个种子一条线。",
)
def llama_vs_gpt_figure():
    result = comparison(verbose=False)
    fig, ax = new_figure(size="wide")
    for kind, style, label in (("gpt", "--", "GPT（LayerNorm、GELU、可学习位置嵌入）"),
                               ("llama", "-", "Llama 式（RMSNorm、SwiGLU、RoPE、GQA）")):
        for i, run in enumerate(result["runs"][kind]):
            h = run["history"]
            ax.plot(h.eval_steps, h.eval_held_out, style, color="C0" if kind == "llama" else "C1",
                    label=label if i == 0 else None, alpha=0.85)
    ax.set_xlabel("训练步数")
    ax.set_ylabel("验证集损失（nat / 词元）")
    ax.legend()
    return fig


# ---------- 文末练习的答案 ----------


@exercise_answer("llama-block-params-96")
def llama_block_params_96():
    """一个 LlamaBlock（d_model = 96、4 个查询头、2 个键值头、SwiGLU 取默认的约 8/3 d）的参数个数，建出来数。"""
    block = LlamaBlock(MiniLlamaConfig(d_model=96, n_heads=4, n_kv_heads=2))
    return sum(p.numel() for p in block.parameters())


@exercise_answer("llama-kv-bytes-28-4")
def kv_bytes_28_4():
    """假想的配置：28 层、4 个键值头、每头 128 维、float16，每个词元的 KV 缓存（字节）。"""
    return kv_cache_bytes_per_token(n_layers=28, n_kv_heads=4, head_dim=128, bytes_per_value=2)


SHIFT_OPTIONS = ("一格都不变", "每条对角线上的数整体变大", "表的样子完全变了")


@exercise_answer("llama-rope-shift")
def rope_shift():
    """先猜再看：RoPE 下把起点 s 从 0 挪到 1024，分数表怎样变（逐项比较两张表，返回选项的文字）。"""
    before, after = score_table("rope", 0), score_table("rope", 1024)
    if torch.allclose(before, after, atol=1e-9):
        return SHIFT_OPTIONS[0]
    diag_before = torch.diagonal(before).mean()
    return SHIFT_OPTIONS[1] if torch.diagonal(after).mean() > diag_before else SHIFT_OPTIONS[2]


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
