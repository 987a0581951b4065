"""《Transformer 与注意力机制》一文中的图。

每个函数用 @figure 声明一张图，并调用文章里展示的那些函数（code/attention.py 等）来计算数据。
构建网站时 scripts/build_figures.py 会自动找到它们，分别按浅色、深色配色各画一遍。
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
from figkit import figure, heatmap, new_figure, plain_log_axis
from positional_encoding import apply_rope, sinusoidal_position_encoding

# 一句短短的中文，按词切成词元
TOKENS = ["我", "今天", "读", "了", "一篇", "注意力", "笔记"]
# 实验用的维度：从 4 到 512，每次翻倍
D_KS = [4, 8, 16, 32, 64, 128, 256, 512]


def _token_vectors(d: int) -> torch.Tensor:
    """给每个词元一个固定的随机向量（未训练），形状 (T, d)。"""
    generator = torch.Generator().manual_seed(7)
    return torch.randn(len(TOKENS), d, generator=generator)


@figure(
    "attention-weights",
    article="transformer-attention",
    title="一句中文的注意力权重：左为不加掩码，右为加因果掩码",
    caption="每一行是一个查询词元，每一列是被关注的词元，颜色越亮权重越大。"
    "左图每个词元都能看到整句话；右图加了因果掩码，对角线右上方的权重全部为 0，但每一行加起来仍然是 1。",
)
def attention_weights():
    x = _token_vectors(16)
    # 为了看清结构，这里直接令 Q = K = V = x：一个词元和自己最相似
    _, plain = scaled_dot_product_attention(x, x, x)
    _, masked = scaled_dot_product_attention(x, x, x, mask=causal_mask(len(TOKENS)))
    fig, axes = new_figure(ncols=2, size="tall")
    for ax, weights, title in zip(axes, (plain, masked), ("不加掩码", "因果掩码"), strict=True):
        heatmap(ax, weights.numpy(), TOKENS, TOKENS, vmin=0.0, vmax=1.0, colorbar=ax is axes[-1])
        ax.set_title(title)
        ax.set_xlabel("被关注的词元（键）")
        ax.tick_params(axis="x", labelrotation=45)
    axes[0].set_ylabel("查询词元")
    return fig


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
    # 训练过的参考模型：构建网站时只训练一次、缓存起来，动手实验读的是同一份参数
    from tiny_transformer import SCORE_NAMES, format_score, head_scores, make_repeat_batch, name_head, pretrained

    model, _ = pretrained(verbose=False)
    cfg, n = model.cfg, 8
    example = make_repeat_batch(1, n, cfg.vocab_size, torch.Generator().manual_seed(1))  # 实验第 1 节的那条序列
    scoring = make_repeat_batch(256, n, cfg.vocab_size, torch.Generator().manual_seed(7))  # 实验第 6 节打分用的
    with torch.no_grad():
        model(scoring)
        scores = [head_scores(w, scoring) for w in model.attention_weights]
        model(example)
    fig, axes = new_figure(ncols=cfg.n_heads, nrows=cfg.n_layers, size="tall")
    for layer in range(cfg.n_layers):
        for h in range(cfg.n_heads):
            ax = axes[layer, h]
            head = {k: v[h].item() for k, v in scores[layer].items()}
            best = max(head, key=head.get)
            heatmap(ax, model.attention_weights[layer][0, h].numpy(), vmin=0.0, vmax=1.0, colorbar=False)
            ax.set_title(f"头 {h}：{name_head(head)}\n{SCORE_NAMES[best]}得分 {format_score(head[best])}", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
            for edge in (n + 0.5,):  # 第二遍从位置 n + 1 开始
                ax.axhline(edge, color="white", linewidth=0.8, linestyle="--")
                ax.axvline(edge, color="white", linewidth=0.8, linestyle="--")
        axes[layer, 0].set_ylabel(f"第 {layer} 层")
    return fig


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
    caption="圆点是实测的方差，虚线是理论值 $d_k$；方块是除以 $\\sqrt{d_k}$ 之后的方差，稳定在 1 附近。"
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
    title="softmax 的最大权重随 d_k 变化：不缩放时趋近 1，缩放后保持平稳",
    caption="每个查询在 64 个键上做 softmax，纵轴是最大的那个权重（取平均）。"
    "不缩放时 $d_k$ 越大越接近 1，几乎只看一个位置，这就是饱和；缩放后基本不随 $d_k$ 变化。",
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


@cache
def _gradient(d_k: int, scaled: bool) -> float:
    return softmax_jacobian_norm(_weights(d_k, scaled)).mean().item()


@figure(
    "softmax-gradient",
    article="transformer-attention",
    title="softmax 的梯度随 d_k 变化：不缩放时趋近 0，缩放后保持不变",
    caption="纵轴是 softmax 对分数的梯度（雅可比矩阵的范数，取平均）。"
    "不缩放时，$d_k$ 超过 16 以后梯度迅速变小，反向传播几乎推不动参数；"
    "除以 $\\sqrt{d_k}$ 之后，梯度在各种维度下都保持在同一水平。",
)
def softmax_gradient():
    unscaled = [_gradient(d, scaled=False) for d in D_KS]
    scaled = [_gradient(d, scaled=True) for d in D_KS]
    fig, ax = new_figure(size="wide")
    ax.plot(D_KS, unscaled, "o-", label="不缩放")
    ax.plot(D_KS, scaled, "s-", label="除以 √$d_k$")
    plain_log_axis(ax, "x", D_KS)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("向量维度 $d_k$")
    ax.set_ylabel("梯度大小（雅可比范数）")
    ax.set_title("缩放让梯度活下来")
    ax.grid(True)
    ax.legend()
    return fig


@figure(
    "sinusoidal-encoding",
    article="transformer-attention",
    title="正弦位置编码的热力图：横轴是维度，纵轴是位置",
    caption="每一行是一个位置的编码向量。靠左的维度频率高，颜色随位置快速交替；"
    "越往右频率越低，要隔很多个位置才变化一次。每个位置都得到一个独一无二的条纹组合。",
)
def sinusoidal_encoding():
    pe = sinusoidal_position_encoding(seq_len=64, d_model=128)
    fig, ax = new_figure(size="tall")
    heatmap(ax, pe.numpy(), vmin=-1.0, vmax=1.0)
    ax.set_xlabel("编码维度 i")
    ax.set_ylabel("位置 pos")
    ax.set_title("正弦位置编码（64 个位置 × 128 维）")
    return fig


@figure(
    "rope-relative",
    article="transformer-attention",
    title="RoPE 下注意力分数只取决于相对距离",
    caption="把同一对 q、k 放在不同的绝对位置 m，横轴是 k 相对 q 的距离。"
    "三条曲线完全重合：分数只取决于相对距离，而和 q 在第几个位置无关。",
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


if __name__ == "__main__":
    from figkit import save, theme

    out = Path("/tmp/llm-figures")
    out.mkdir(exist_ok=True)
    for fn in list(globals().values()):
        if callable(fn) and hasattr(fn, "figure_name"):
            with theme("light"):
                save(fn(), out / f"{fn.figure_name}.svg")
            print("已保存", out / f"{fn.figure_name}.svg")
