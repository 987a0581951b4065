"""《Transformer 与注意力机制》一文中的图。

每个函数用 @figure 声明一张图，并调用文章里展示的那些函数（code/attention.py 等）来计算数据。
构建网站时 python -m llmsite figures 会自动找到它们，分别按浅色、深色配色各画一遍。
单独运行本文件会把所有图画到 /tmp/llm-figures/ 下，方便调试。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math
from functools import cache

import torch
from attention import causal_mask, scaled_dot_product_attention
from figkit import exercise_answer, figure, figure_data, heatmap, new_figure, plain_log_axis
from multi_head_attention import MultiHeadAttention
from positional_encoding import apply_rope, sinusoidal_position_encoding

# 一句短短的中文，按词切成词元
TOKENS = ["我", "今天", "读", "了", "一篇", "注意力", "笔记"]
# 实验用的维度：从 4 到 512，每次翻倍
D_KS = [4, 8, 16, 32, 64, 128, 256, 512]


def _token_vectors(d: int) -> torch.Tensor:
    """给每个词元一个固定的随机向量（未训练），形状 (T, d)。"""
    generator = torch.Generator().manual_seed(7)
    return torch.randn(len(TOKENS), d, generator=generator)


# 掩码示意图用的随机向量：7 个位置，每个 16 维
MASK_DEMO_T, MASK_DEMO_D = 7, 16


def mask_demo_vectors() -> torch.Tensor:
    """掩码示意图的输入：未经训练的随机向量 x，形状 (7, 16)，各分量独立、均值 0、方差 1。"""
    generator = torch.Generator().manual_seed(7)
    return torch.randn(MASK_DEMO_T, MASK_DEMO_D, generator=generator)


@figure(
    "attention-weights",
    article="transformer-attention",
    title="随机向量（未训练）的注意力权重，Q = K = V = x：左为不加掩码，右为加因果掩码",
    caption="输入是 7 个未经训练的随机向量 x（16 维），并直接令 Q = K = V = x，不代表任何句子。"
    "每一行是一个查询位置，每一列是被关注的位置，颜色越亮权重越大。"
    "对角线最亮是这种构造的结果：每个向量和自己的点积是它长度的平方，比和别的随机向量的点积大得多。"
    "这张图要看的是掩码的结构：右图对角线右上方的权重全部为 0，而每一行加起来仍然是 1。",
)
def attention_weights():
    plain, masked = mask_demo_weights()
    labels = [f"$x_{i}$" for i in range(1, MASK_DEMO_T + 1)]
    fig, axes = new_figure(ncols=2, size="tall")
    for ax, weights, title in zip(axes, (plain, masked), ("不加掩码", "因果掩码"), strict=True):
        heatmap(ax, weights.numpy(), labels, labels, vmin=0.0, vmax=1.0, colorbar=ax is axes[-1])
        ax.set_title(title)
        ax.set_xlabel("被关注的位置（键）")
    axes[0].set_ylabel("查询位置")
    return fig


def mask_demo_weights() -> tuple[torch.Tensor, torch.Tensor]:
    """掩码示意图的两张权重表 (7, 7)：不加掩码、加因果掩码。"""
    x = mask_demo_vectors()
    # 为了让结构一目了然，直接令 Q = K = V = x：每个向量和自己的点积最大，所以对角线最亮
    _, plain = scaled_dot_product_attention(x, x, x)
    _, masked = scaled_dot_product_attention(x, x, x, mask=causal_mask(MASK_DEMO_T))
    return plain, masked


SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


@figure_data("attention-weights", view="heatmap")
def attention_weights_data():
    """网页上的交互版：同样的两张权重表，用按钮切换，指向格子读出权重。"""
    plain, masked = mask_demo_weights()
    labels = [f"x{str(i).translate(SUBSCRIPTS)}" for i in range(1, MASK_DEMO_T + 1)]
    return {
        "note": "静态图左右并排的两张表，在这里用按钮切换。",
        "controls": [{"label": "掩码", "options": ["不加掩码", "因果掩码"]}],
        "views": [
            {"at": [0], "title": "不加掩码：每个位置都能看到所有位置", "values": plain},
            {"at": [1], "title": "因果掩码：只能看到自己和前面的位置", "values": masked, "causal": True},
        ],
        "rows": labels, "cols": labels, "row_name": "查询", "col_name": "键", "value_name": "权重",
        "vmin": 0, "vmax": 1,
    }


@cache
def trained_heads() -> dict:
    """训练过的参考模型在一条新序列上的注意力权重，以及每个头的得分（256 条新序列上的平均）。"""
    # 训练过的参考模型：构建网站时只训练一次、缓存起来，动手实验读的是同一份参数
    from tiny_transformer import head_scores, make_repeat_batch, pretrained

    model, _ = pretrained(verbose=False)
    cfg, n = model.cfg, 8
    example = make_repeat_batch(1, n, cfg.vocab_size, torch.Generator().manual_seed(1))  # 实验第 1 节的那条序列
    scoring = make_repeat_batch(256, n, cfg.vocab_size, torch.Generator().manual_seed(7))  # 实验第 6 节打分用的
    with torch.no_grad():
        model(scoring)
        scores = [head_scores(w, scoring) for w in model.attention_weights]
        model(example)
    weights = [w[0] for w in model.attention_weights]  # 每层 (n_heads, T, T)
    return {"cfg": cfg, "n": n, "tokens": example[0].tolist(), "weights": weights, "scores": scores}


def head_title(layer: int, h: int, sep: str = "\n") -> str:
    """一个头的小标题：按得分起的名字，和它最高的那项得分。"""
    from tiny_transformer import SCORE_NAMES, format_score, name_head

    head = {k: v[h].item() for k, v in trained_heads()["scores"][layer].items()}
    best = max(head, key=head.get)
    return f"头 {h}：{name_head(head)}{sep}{SCORE_NAMES[best]}得分 {format_score(head[best])}"


@figure(
    "multi-head-weights",
    article="transformer-attention",
    title="训练过的小模型中 8 个注意力头的权重：第 0 层有前一个词头，第 1 层有归纳头",
    caption="数据来自训练过的模型：两层、每层 4 个头、只有注意力的小 Transformer（code/tiny_transformer.py 的 "
    "train_reference），在「一段随机词原样重复一遍、预测下一个词」的任务上训练了 1000 步；"
    "动手实验《注意力头在学什么》用的是同一个模型。输入是一条新的序列：起始符加 8 个随机词，再把它们重复一遍，"
    "虚线标出第二遍的开始。每张小图的第 i 行是第 i 个位置分给前面各位置的权重。"
    "小标题是按得分给头起的名字和它最高的那项得分（256 条新序列上的平均，门槛 0.3）："
    "「前一个词」是落在前一个位置上的权重，「归纳」是落在当前词上一次出现处的下一个位置上的权重。",
)
def multi_head_weights():
    heads = trained_heads()
    cfg, n = heads["cfg"], heads["n"]
    fig, axes = new_figure(ncols=cfg.n_heads, nrows=cfg.n_layers, size="tall")
    for layer in range(cfg.n_layers):
        for h in range(cfg.n_heads):
            ax = axes[layer, h]
            heatmap(ax, heads["weights"][layer][h].numpy(), vmin=0.0, vmax=1.0, colorbar=False)
            ax.set_title(head_title(layer, h), fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
            for edge in (n + 0.5,):  # 第二遍从位置 n + 1 开始
                ax.axhline(edge, color="white", linewidth=0.8, linestyle="--")
                ax.axvline(edge, color="white", linewidth=0.8, linestyle="--")
        axes[layer, 0].set_ylabel(f"第 {layer} 层")
    return fig


@figure_data("multi-head-weights", view="heatmap")
def multi_head_weights_data():
    """网页上的交互版：一次看一个头，按钮选层和头，指向格子读出位置、词和权重。"""
    from tiny_transformer import BOS

    heads = trained_heads()
    cfg, n, tokens = heads["cfg"], heads["n"], heads["tokens"]
    views = [
        {"at": [layer, h], "title": f"第 {layer} 层 " + head_title(layer, h, sep="，"),
         "values": heads["weights"][layer][h], "causal": True}
        for layer in range(cfg.n_layers) for h in range(cfg.n_heads)
    ]
    # 一开始显示最后一层归纳得分最高的头
    last = cfg.n_layers - 1
    start = int(heads["scores"][last]["induction"].argmax())
    return {
        "note": "静态图里的 8 张小图，在这里一次显示一张，用按钮选层和头。刻度是词的编号，「起」是起始符；"
                "虚线标出第二遍的开始。",
        "controls": [
            {"label": "层", "options": [f"第 {layer} 层" for layer in range(cfg.n_layers)], "initial": last},
            {"label": "头", "options": [f"头 {h}" for h in range(cfg.n_heads)], "initial": start},
        ],
        "views": views,
        "rows": [f"位置 {i}（{'起始符' if t == BOS else f'词 {t}'}）" for i, t in enumerate(tokens)],
        "cols": [f"位置 {i}（{'起始符' if t == BOS else f'词 {t}'}）" for i, t in enumerate(tokens)],
        "ticks": ["起" if t == BOS else str(t) for t in tokens],
        "row_name": "查询", "col_name": "键", "value_name": "权重", "vmin": 0, "vmax": 1,
        "dividers": [n + 1],  # 第二遍从位置 n + 1 开始
    }


def _random_qk(d_k: int, n_queries: int = 256, n_keys: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """各分量独立、均值 0、方差 1 的 q 和 k（float64，避免极端值下溢）。"""
    generator = torch.Generator().manual_seed(d_k)
    q = torch.randn(n_queries, d_k, generator=generator, dtype=torch.float64)
    k = torch.randn(n_keys, d_k, generator=generator, dtype=torch.float64)
    return q, k


@cache
def _weights(d_k: int, scaled: bool) -> torch.Tensor:
    q, k = _random_qk(d_k)
    v = torch.zeros(k.shape[0], 1, dtype=torch.float64)
    _, w = scaled_dot_product_attention(q, k, v, scale=None if scaled else 1.0)
    return w  # (n_queries, n_keys)


@cache
def _score_variance(d_k: int, scaled: bool) -> float:
    return torch.log(_weights(d_k, scaled)).var(dim=-1).mean().item()


@figure(
    "dot-product-variance",
    article="transformer-attention",
    title="点积 q·k 的方差随 d_k 增长，除以 √d_k 后回到 1",
    caption="数据是随机向量：256 个查询、64 个键，各分量独立、均值 0、方差 1；"
    "方差在每个查询的 64 个分数上计算，再取平均。"
    "圆点是实测的方差，虚线是理论值 $d_k$；方块是除以 $\\sqrt{d_k}$ 之后的方差，在 0.94 到 1.12 之间。"
    "两个坐标轴都是对数刻度。",
)
def dot_product_variance():
    # softmax 不改变同一行分数之间的差：log(权重) 与分数只差一个常数，所以行内方差就是分数的方差
    measured = [_score_variance(d_k, scaled=False) for d_k in D_KS]
    scaled = [_score_variance(d_k, scaled=True) for d_k in D_KS]
    fig, ax = new_figure(size="wide")
    ax.plot(D_KS, D_KS, linestyle="--", label="理论值 $d_k$")
    ax.plot(D_KS, measured, "o", label="实测：$q\\cdot k$")
    ax.plot(D_KS, scaled, "s-", label="实测：$q\\cdot k$ / √$d_k$")
    plain_log_axis(ax, "x", D_KS)
    plain_log_axis(ax, "y", [1, 4, 16, 64, 256])
    ax.set_xlabel("向量维度 $d_k$")
    ax.set_ylabel("分数的方差")
    ax.set_title("点积的方差与维度成正比")
    ax.grid(True, which="major")
    ax.legend()
    return fig


@figure(
    "softmax-saturation",
    article="transformer-attention",
    title="softmax 的最大权重随 d_k 变化：不缩放时一路升高，缩放后保持平稳",
    caption="数据是随机向量：256 个查询、64 个键，各分量独立、均值 0、方差 1。"
    "每个查询在 64 个键上做 softmax，纵轴是最大的那个权重（256 个查询取平均）。"
    "不缩放时 $d_k$ 越大，最大权重越高，一行的权重越来越集中到一个位置上，这就是饱和；"
    "缩放后它基本不随 $d_k$ 变化，在 0.10 到 0.13 之间。",
)
def softmax_saturation():
    unscaled = [_weights(d, scaled=False).max(dim=-1).values.mean().item() for d in D_KS]
    scaled = [_weights(d, scaled=True).max(dim=-1).values.mean().item() for d in D_KS]
    fig, ax = new_figure(size="wide")
    ax.plot(D_KS, unscaled, "o-", label="不缩放：softmax($q\\cdot k$)")
    ax.plot(D_KS, scaled, "s-", label="缩放：softmax($q\\cdot k$ / √$d_k$)")
    ax.axhline(1 / 64, linestyle=":", linewidth=1, label="均匀分布 1/64")
    plain_log_axis(ax, "x", D_KS)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("向量维度 $d_k$")
    ax.set_ylabel("最大权重的平均值")
    ax.set_title("softmax 饱和")
    ax.grid(True)
    ax.legend(loc="center right")
    return fig


def softmax_jacobian_norm(w: torch.Tensor) -> torch.Tensor:
    """softmax 对输入分数的雅可比矩阵 J = diag(p) - p pᵀ 的 Frobenius 范数，逐行计算。

    不必真的造出 n×n 的矩阵：‖J‖² = Σᵢ pᵢ²(1 - pᵢ)² + (Σᵢ pᵢ²)² - Σᵢ pᵢ⁴。
    """
    p2 = w * w
    squared = (p2 * (1 - w) ** 2).sum(-1) + p2.sum(-1) ** 2 - (p2 * p2).sum(-1)
    return squared.clamp_min(0).sqrt()


# 雅可比范数低于它的行，梯度几乎为 0（缩放后典型的一行约为 0.18）
NEAR_ZERO_GRADIENT = 0.01


@cache
def _jacobian_norms(d_k: int, scaled: bool) -> torch.Tensor:
    """每个查询一行：softmax 对这一行分数的雅可比范数，形状 (n_queries,)。"""
    return softmax_jacobian_norm(_weights(d_k, scaled))


@figure(
    "softmax-gradient",
    article="transformer-attention",
    title="softmax 的梯度随 d_k 变化：看中位数和梯度几乎为 0 的行所占的比例",
    caption="数据与上图相同（随机向量，256 个查询、64 个键）。每个查询的一行 softmax 有一个雅可比矩阵，"
    "它的范数衡量这一行的梯度有多大。左图纵轴是对数刻度：实线是 256 行的中位数，虚线是平均值；"
    "右图是范数小于 0.01、梯度几乎为 0 的行所占的比例。"
    "不缩放时，中位数在 $d_k$ = 16 时最大（0.33），之后一路下降，到 512 只剩 0.0009，"
    "256 行里有 160 行的梯度几乎为 0；平均值下降得慢得多，因为它被少数还没饱和的行撑着。"
    "除以 $\\sqrt{d_k}$ 之后，中位数始终在 0.17 到 0.18 之间，没有一行的范数小于 0.01。",
)
def softmax_gradient():
    fig, (ax_mid, ax_share) = new_figure(ncols=2, size="wide")
    for scaled, marker, label in ((False, "o", "不缩放"), (True, "s", "除以 √$d_k$")):
        norms = [_jacobian_norms(d, scaled) for d in D_KS]
        median = [n.median().item() for n in norms]
        mean = [n.mean().item() for n in norms]
        share = [100 * (n < NEAR_ZERO_GRADIENT).double().mean().item() for n in norms]
        (line,) = ax_mid.plot(D_KS, median, marker + "-", label=f"{label}：中位数")
        color = line.get_color()
        ax_mid.plot(D_KS, mean, linestyle="--", linewidth=1.2, color=color, label=f"{label}：平均值")
        ax_share.plot(D_KS, share, marker + "-", color=color, label=label)
    plain_log_axis(ax_mid, "y", [0.001, 0.01, 0.1, 1], base=10)
    ax_mid.set_ylim(5e-4, 1)
    ax_mid.set_ylabel("雅可比范数")
    ax_mid.set_title("每行梯度的大小")
    ax_mid.legend(fontsize=8, loc="lower left")
    ax_share.set_ylim(0, 100)
    ax_share.set_ylabel("范数 < 0.01 的行（%）")
    ax_share.set_title("梯度几乎为 0 的行")
    ax_share.legend(loc="upper left")
    for ax in (ax_mid, ax_share):
        plain_log_axis(ax, "x", D_KS)
        ax.tick_params(axis="x", labelsize=8)
        ax.set_xlabel("向量维度 $d_k$")
        ax.grid(True)
    return fig


def typical_query(d_k: int) -> int:
    """不缩放时雅可比范数居中的那个查询（256 行的中位数所在的那一行）：这个 d_k 下「典型的一行」。"""
    return int(_jacobian_norms(d_k, scaled=False).median(dim=0).indices)


EXPLORER_D_KS = (4, 64, 512)  # 静态图画的三个 d_k；网页上的滑块走遍 D_KS


@figure(
    "dk-explorer",
    article="transformer-attention",
    title="一个典型查询的 softmax 权重：不缩放时 d_k 越大越集中到一个键上，缩放后保持分散",
    caption="数据与上面几张图相同：随机向量，256 个查询、64 个键，各分量独立、均值 0、方差 1。"
    "每个 $d_k$ 下取不缩放时雅可比范数居中的那个查询（它的范数就是 256 行的中位数），"
    "柱子是它在 64 个键上的 softmax 权重，从大到小排列，虚线是均匀分布的 1/64；"
    "同一个查询缩放前后各画一次。静态图的上排不缩放、下排除以 $\\sqrt{d_k}$，从左到右 $d_k$ 为 4、64、512，"
    "小标题是这个查询的最大权重。",
)
def dk_explorer():
    fig, axes = new_figure(ncols=len(EXPLORER_D_KS), nrows=2, size="tall", sharey=True)
    for col, d_k in enumerate(EXPLORER_D_KS):
        row = typical_query(d_k)
        for r, scaled in enumerate((False, True)):
            w = _weights(d_k, scaled)[row].sort(descending=True).values
            ax = axes[r, col]
            ax.bar(range(len(w)), w.numpy(), width=1.0)
            ax.axhline(1 / len(w), linestyle=":", linewidth=1, color="C1")
            ax.set_ylim(0, 1.05)
            ax.set_xticks([])
            ax.set_title(f"$d_k$ = {d_k}：最大 {w[0].item():.3f}", fontsize=10)
        axes[1, col].set_xlabel("64 个键（按权重从大到小）")
    axes[0, 0].set_ylabel("不缩放：权重")
    axes[1, 0].set_ylabel("缩放：权重")
    return fig


@figure_data("dk-explorer", view="bars")
def dk_explorer_data():
    """网页上的交互版：滑块走遍 8 个 d_k，按钮切换缩放与否；旁边列出文中用到的统计量。"""
    views = []
    for i, d_k in enumerate(D_KS):
        row = typical_query(d_k)
        for j, scaled in enumerate((False, True)):
            w = _weights(d_k, scaled)
            norms = _jacobian_norms(d_k, scaled)
            n_rows = norms.shape[0]
            views.append({
                "at": [i, j],
                "title": f"dₖ = {d_k}，{'除以 √dₖ' if scaled else '不缩放'}：第 {row + 1} 个查询的权重",
                "values": w[row].sort(descending=True).values,
                "stats": [
                    {"label": "这个查询的最大权重", "value": w[row].max(), "digits": 3},
                    {"label": "这个查询的雅可比范数", "value": norms[row], "digits": 4},
                    {"label": f"{n_rows} 个查询的最大权重平均值", "value": w.max(dim=-1).values.mean(), "digits": 3},
                    {"label": "雅可比范数的中位数", "value": norms.median(), "digits": 4},
                    {"label": f"范数 < {NEAR_ZERO_GRADIENT} 的行（梯度几乎为 0）",
                     "value": int((norms < NEAR_ZERO_GRADIENT).sum()), "digits": 0, "suffix": f" / {n_rows}"},
                ],
            })
    return {
        "note": "拖动滑块改变 dₖ，用按钮切换缩放与否；静态图只画了其中 3 个 dₖ。",
        "controls": [
            {"label": "dₖ", "options": list(D_KS), "kind": "slider"},
            {"label": "缩放", "options": ["不缩放", "除以 √dₖ"]},
        ],
        "views": views,
        "x_name": "64 个键（按权重从大到小）", "y_name": "softmax 权重", "ymax": 1,
        "reference": {"value": 1 / 64, "label": "均匀分布 1/64"},
    }


@figure(
    "sinusoidal-encoding",
    article="transformer-attention",
    title="正弦位置编码的热力图：横轴是维度，纵轴是位置",
    caption="按公式计算，不含随机数，也没有训练。每一行是一个位置的编码向量。靠左的维度频率高，颜色随位置快速交替；"
    "越往右频率越低，要隔很多个位置才变化一次。每个位置都得到一个独一无二的条纹组合。",
)
def sinusoidal_encoding():
    pe = sinusoidal_position_encoding(seq_len=64, d_model=128)
    fig, ax = new_figure(size="tall")
    heatmap(ax, pe.numpy(), vmin=-1.0, vmax=1.0)
    ax.set_xlabel("编码维度（0–127）")
    ax.set_ylabel("位置 pos")
    ax.set_title("正弦位置编码（64 个位置 × 128 维）")
    return fig


@figure(
    "rope-relative",
    article="transformer-attention",
    title="RoPE 下，同一对 q、k 的注意力分数只随相对距离变化",
    caption="q、k 是一对固定的随机向量（64 维，未训练）。把它们放在不同的绝对位置，q 在位置 m，k 在位置 n，"
    "横轴是相对距离 n − m。三条曲线完全重合（差别小于 $10^{-9}$，只是浮点误差）：内容相同时，分数只随相对距离变化，"
    "和 q 在第几个位置无关。换一对 q、k，曲线的形状就会不同。",
)
def rope_relative():
    generator = torch.Generator().manual_seed(3)
    d = 64
    q = torch.randn(d, generator=generator, dtype=torch.float64)
    k = torch.randn(d, generator=generator, dtype=torch.float64)
    offsets = list(range(-32, 33))
    fig, ax = new_figure(size="wide")
    # 三条曲线会完全重合：第一条画成粗线，后两条只画标记点，才看得出它们落在同一条线上
    for m, style in ((0, dict(linewidth=4, alpha=0.5)), (100, dict(linestyle="none", marker="o", markevery=4)),
                     (1000, dict(linestyle="none", marker="x", markevery=(2, 4)))):
        scores = []
        for delta in offsets:
            positions = torch.tensor([m, m + delta], dtype=torch.float64)
            rotated_q = apply_rope(q[None], positions[:1])[0]
            rotated_k = apply_rope(k[None], positions[1:])[0]
            scores.append((rotated_q @ rotated_k).item() / math.sqrt(d))
        ax.plot(offsets, scores, label=f"q 在位置 {m}", **style)
    ax.set_xlabel("相对距离 n − m（k 的位置减去 q 的位置）")
    ax.set_ylabel("注意力分数 q·k / √d")
    ax.set_title("旋转位置编码：分数只看相对距离")
    ax.grid(True)
    ax.legend()
    return fig


# ---------- 文末练习的答案：构建时由这里算出，写进练习里（练习的写法见 CONTRIBUTING.md） ----------


@exercise_answer("causal-uniform-row4")
def causal_uniform_row4():
    """所有分数都相等（查询全为 0）时，加因果掩码，第 4 个位置分给第 1 个位置的权重。"""
    T, d = 6, 8
    generator = torch.Generator().manual_seed(0)
    q = torch.zeros(T, d)  # 查询全为 0：它和每个键的点积都是 0
    k, v = torch.randn(T, d, generator=generator), torch.randn(T, d, generator=generator)
    _, weights = scaled_dot_product_attention(q, k, v, mask=causal_mask(T))
    return weights[3, 0].item()  # 第 4 行（下标 3）、第 1 列（下标 0）


@exercise_answer("mha-params-96")
def mha_params_96():
    """MultiHeadAttention(d_model=96, n_heads=4) 的可训练参数个数（含偏置）。"""
    mha = MultiHeadAttention(d_model=96, n_heads=4)
    return sum(p.numel() for p in mha.parameters())


# RoPE 练习的四种放法：(q 的位置, k 的位置)；题目问哪一种和「q 在 5、k 在 7」的分数相同
ROPE_REFERENCE = (5, 7)
ROPE_CANDIDATES = ((7, 5), (0, 2), (5, 5), (10, 14))


def rope_score(q: torch.Tensor, k: torch.Tensor, m: int, n: int) -> float:
    """q 在位置 m、k 在位置 n 时的 RoPE 分数 (R_m q)·(R_n k)。"""
    rotated_q = apply_rope(q[None], torch.tensor([m], dtype=torch.float64))[0]
    rotated_k = apply_rope(k[None], torch.tensor([n], dtype=torch.float64))[0]
    return (rotated_q @ rotated_k).item()


@exercise_answer("rope-same-score")
def rope_same_score():
    """哪一种放法的分数和参照放法相同：用 rope-relative 图的那对随机 q、k 逐个算出来比较。"""
    generator = torch.Generator().manual_seed(3)
    q = torch.randn(64, generator=generator, dtype=torch.float64)
    k = torch.randn(64, generator=generator, dtype=torch.float64)
    target = rope_score(q, k, *ROPE_REFERENCE)
    same = [(m, n) for m, n in ROPE_CANDIDATES if abs(rope_score(q, k, m, n) - target) < 1e-9]
    return "、".join(f"q 在位置 {m}，k 在位置 {n}" for m, n in same)  # 恰好一种时就是那个选项的文字


# dk-explorer 练习的三个选项，按典型查询的最大权重（不缩放、d_k = 512）选出一个
DK_PREDICT_OPTIONS = (
    "基本不变，一直在均匀分布的 1/64 附近",
    "慢慢升高，到 512 时也不到一半",
    "升高到 0.9 以上，几乎全部权重落在一个键上",
)


@exercise_answer("dk512-typical-max")
def dk512_typical_max():
    """不缩放时 d_k 升到 512，dk-explorer 图里那个典型查询的最大权重落在哪个选项里。"""
    top = _weights(512, scaled=False)[typical_query(512)].max().item()
    if top < 2 / 64:
        return DK_PREDICT_OPTIONS[0]
    if top < 0.5:
        return DK_PREDICT_OPTIONS[1]
    if top > 0.9:
        return DK_PREDICT_OPTIONS[2]
    return f"最大权重是 {top:.3f}，不在任何一个选项的范围里"


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
