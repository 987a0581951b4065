"""《从零训练一个小 GPT》一文中的图。

数据全部来自 code/gpt_from_scratch.py 的参考模型 train_poem_gpt()：在 3707 首唐人五言绝句
（data/tang_wujue/poems.txt，繁体字）的训练集上训练 300 步。构建网站时只训练一次，
图和动手实验读同一份缓存。单独运行本文件会把所有图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from functools import cache

import torch
from figkit import exercise_answer, figure, figure_data, heatmap, new_figure

# 画注意力用的诗：王之涣《登鹳雀楼》，按语料原样用繁体；它在训练集里（第 873 首）
HEATMAP_POEM = "白日依山盡，黃河入海流。欲窮千里目，更上一層樓。"


@cache
def trained():
    """(模型, 分词器, 训练记录)：构建时读取缓存的参考模型，没有缓存就现场训练。"""
    from gpt_from_scratch import pretrained_gpt

    return pretrained_gpt(verbose=False)


def moving_average(values: list[float], window: int) -> list[float]:
    """前 window 步的平均（开头不足 window 步时取已有的）：每步的批次损失抖得厉害，平均后看得清走势。"""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


@figure(
    "gpt-loss-curve",
    article="gpt-from-scratch",
    title="小 GPT 在五言绝句上训练 300 步：训练集与验证集的损失，以及学习率",
    caption="数据来自训练：code/gpt_from_scratch.py 的 train_poem_gpt()，4 层、d_model = 64 的模型，"
    "在 3337 首唐人五言绝句（繁体）上训练 300 步，每步 16 段、每段 64 个词元。"
    "左：浅色线是每一步训练批次的损失，深色线是它前 20 步的平均；方点和圆点每 25 步量一次，"
    "是固定的 48 段训练集文本和 48 段验证集文本（另外 370 首诗，从未参与训练）上的平均交叉熵。"
    "虚线是 ln V：完全随机地猜（V 是词表大小）时的损失。右：每一步的学习率。",
)
def gpt_loss_curve():
    import math

    _, tok, h = trained()
    fig, axes = new_figure(ncols=2, size="tall", gridspec_kw={"width_ratios": [2.2, 1]})
    ax = axes[0]
    steps = list(range(1, len(h.loss) + 1))  # 第 i 个批次损失是第 i 步更新之前量的：横轴记为训练了 i - 1 步
    ax.plot([s - 1 for s in steps], h.loss, color="C0", alpha=0.3, linewidth=0.8, label="训练批次（每步）")
    ax.plot([s - 1 for s in steps], moving_average(h.loss, 20), color="C0", linewidth=1.5,
            label="训练批次（20 步平均）")
    ax.plot(h.eval_steps, h.eval_train, "s-", color="C1", markersize=4, label="训练集（固定 48 段）")
    ax.plot(h.eval_steps, h.eval_held_out, "o-", color="C2", markersize=4, label="验证集（固定 48 段）")
    ax.axhline(math.log(tok.vocab_size), color="C3", linestyle="--", linewidth=1)
    ax.text(len(h.loss), math.log(tok.vocab_size) + 0.1, f"ln V = ln {tok.vocab_size}", ha="right", va="bottom",
            fontsize=8, color="C3")
    ax.set_xlabel("训练步数")
    ax.set_ylabel("交叉熵（nat / 词元）")
    ax.set_title("损失")
    ax.set_ylim(4, 9)
    ax.grid(True)
    ax.legend(fontsize=8)
    axes[1].plot(range(len(h.lr)), [lr * 1000 for lr in h.lr], color="C4")
    axes[1].set_xlabel("训练步数")
    axes[1].set_ylabel("学习率（× 10⁻³）")
    axes[1].set_title("预热，然后余弦衰减")
    axes[1].grid(True)
    return fig


@figure(
    "gpt-samples",
    article="gpt-from-scratch",
    title="同一个小 GPT 在训练 0、25、100、300 步时写出的「诗」",
    caption="数据来自训练：每个检查点都让模型从换行（一首诗的开头）接着写 24 个词元，温度 0.8，"
    "随机数种子相同，所以几行之间的差别只来自模型本身。右边是那一刻验证集上的损失。"
    "文字是繁体，和训练语料一样；� 是模型生成了拼不成汉字的字节。",
)
def gpt_samples():
    _, _, h = trained()
    held = dict(zip(h.eval_steps, h.eval_held_out, strict=True))
    fig, ax = new_figure(size="wide")
    ax.set_axis_off()
    rows = sorted(h.samples.items())
    for i, (step, text) in enumerate(rows):
        y = 1 - (i + 0.5) / len(rows)
        ax.text(0.0, y, f"第 {step} 步", ha="left", va="center", fontsize=11, color="C0", transform=ax.transAxes)
        shown = text.replace("\n", "↵")  # 换行画成 ↵，看得出模型在哪里结束一首诗
        ax.text(0.14, y, shown, ha="left", va="center", fontsize=13, transform=ax.transAxes)
        ax.text(1.0, y, f"验证集损失 {held[step]:.2f}", ha="right", va="center", fontsize=9, color="C2",
                transform=ax.transAxes)
    ax.set_title("温度 0.8 采样，同一个种子（↵ 表示换行）")
    return fig


@cache
def poem_attention() -> dict:
    """参考模型读《登鹳雀楼》（前面加一个换行）时每层每个头的注意力权重。"""
    model, tok, _ = trained()
    ids = tok.encode("\n" + HEATMAP_POEM)
    with torch.no_grad():
        model(torch.tensor([ids]))
    weights = [w[0] for w in model.attention_weights]  # 每层 (n_heads, T, T)
    labels = [tok.token_text(i).replace("\n", "↵") for i in ids]
    return {"weights": weights, "labels": labels}


MID = 12  # 换行之后第 12 个位置是第二句末尾的句号：一首诗的前一半到这里结束


@cache
def full_stop_scores() -> tuple[torch.Tensor, int]:
    """每个头的「句号」得分 (n_layers, n_heads)：后一半（位置 13–24）分给位置 12 那个句号的平均权重，
    在验证集里恰好编码成 25 个词元（换行 + 24 个字，没有字节回退）的诗上平均。返回 (得分, 诗的数目)。"""
    from gpt_from_scratch import load_poems, split_poems

    model, tok, _ = trained()
    _, held_out = split_poems(load_poems())
    rows = [tok.encode("\n" + p) for p in held_out.splitlines()]
    batch = torch.tensor([r for r in rows if len(r) == 25])
    with torch.no_grad():
        model(batch)
    scores = torch.stack([w[:, :, MID + 1 :, MID].mean(dim=(0, 2)) for w in model.attention_weights])
    return scores, batch.size(0)


def full_stop_head() -> tuple[int, int]:
    """句号得分最高的 (层, 头)。"""
    scores, _ = full_stop_scores()
    flat = int(scores.argmax())
    return flat // scores.size(1), flat % scores.size(1)


@figure(
    "gpt-attention",
    article="gpt-from-scratch",
    title="训练好的小 GPT：一个头在后半首诗里主要看前半首末尾的句号",
    caption="数据来自训练好的模型（训练 300 步）。左：句号得分最高的那个头读《登鸛雀樓》（前面加一个换行；"
    "这首诗在训练集里）时的注意力权重，第 i 行是第 i 个字分给它前面各个位置的权重，颜色越亮权重越大。"
    "右：全部 16 个头的句号得分，即后半首（位置 13 到 24）分给位置 12 那个句号的平均权重，"
    "在验证集中没有字节回退的诗（从未参与训练）上平均。网页上可以切换到任意一层、任意一个头。",
)
def gpt_attention():
    data = poem_attention()
    labels = data["labels"]
    scores, _ = full_stop_scores()
    layer, h = full_stop_head()
    fig, axes = new_figure(ncols=2, size="tall", gridspec_kw={"width_ratios": [1.6, 1]})
    heatmap(axes[0], data["weights"][layer][h].numpy(), labels, labels, vmin=0.0, vmax=1.0, colorbar=False)
    axes[0].set_title(f"第 {layer} 层头 {h} 读《登鸛雀樓》", fontsize=10)
    axes[0].tick_params(labelsize=7)
    n_layers, n_heads = scores.shape
    heatmap(axes[1], scores.numpy(), [f"头 {i}" for i in range(n_heads)], [f"第 {i} 层" for i in range(n_layers)],
            vmin=0.0, vmax=1.0)
    for i in range(n_layers):
        for j in range(n_heads):
            value = scores[i, j].item()
            axes[1].text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                         color="black" if value > 0.5 else "white")
    axes[1].set_title("每个头的句号得分", fontsize=10)
    return fig


@figure_data("gpt-attention", view="heatmap")
def gpt_attention_data():
    """网页上的交互版：按钮选层和头，指向格子读出查询的字、键的字和权重。"""
    data = poem_attention()
    labels = data["labels"]
    scores, _ = full_stop_scores()
    n_layers, n_heads = scores.shape
    layer0, head0 = full_stop_head()
    views = [{"at": [layer, h], "title": f"第 {layer} 层头 {h}：句号得分 {scores[layer, h].item():.2f}",
              "values": data["weights"][layer][h], "causal": True}
             for layer in range(n_layers) for h in range(n_heads)]
    return {
        "note": "静态图左边的那个头之外，这里可以看全部 16 个头读同一首诗。↵ 是换行（一首诗的开头）。",
        "controls": [
            {"label": "层", "options": [f"第 {layer} 层" for layer in range(n_layers)], "initial": layer0},
            {"label": "头", "options": [f"头 {h}" for h in range(n_heads)], "initial": head0},
        ],
        "views": views,
        "rows": [f"位置 {i}（{c}）" for i, c in enumerate(labels)],
        "cols": [f"位置 {i}（{c}）" for i, c in enumerate(labels)],
        "ticks": labels,
        "row_name": "查询", "col_name": "键", "value_name": "权重", "vmin": 0, "vmax": 1,
    }


# ---------- 练习的答案（文章末尾「练习」一节）：构建时算出，不手写 ----------


@exercise_answer("uniform-guess-loss", data=("data/tang_wujue/poems.txt",))
def uniform_guess_loss():
    """给词表里每个词元同样的概率时的交叉熵 ln V；V 是在训练集上建出的词表大小。"""
    import math

    from gpt_from_scratch import MIN_COUNT, load_poems, split_poems
    from tokenizer import CharTokenizer

    train_text, _ = split_poems(load_poems())
    tok = CharTokenizer.train(train_text, min_count=MIN_COUNT)
    return math.log(tok.vocab_size)


@exercise_answer("gpt-param-count")
def gpt_param_count():
    """参考模型的可训练参数个数：从训练好的模型里逐个数出来。"""
    model, _, _ = trained()
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# 「读完一整首之后」那道题用的诗：验证集里的一首，没有字节回退，连同前面的换行恰好 25 个词元。
# 训练集里没有它的异文：它的四句没有一句在训练集的诗里出现过
HELD_OUT_POEM = "玉管朝朝弄，清歌日日新。折花當驛路，寄與隴頭人。"
NEXT_TOKEN_OPTIONS = {"\n": "换行：这首诗结束了", "，": "逗号", "。": "句号"}
NEXT_TOKEN_OTHER = "又一个汉字：接着写下一句"


@exercise_answer("next-after-poem")
def next_after_poem():
    """训练好的模型读完换行加上 HELD_OUT_POEM 之后，概率最大的下一个词元落在哪个选项里。"""
    from gpt_from_scratch import load_poems, split_poems

    model, tok, _ = trained()
    _, held_out = split_poems(load_poems())
    if HELD_OUT_POEM not in held_out.splitlines():
        return "这首诗不在验证集里：题目说它从未参与训练"
    with torch.no_grad():
        logits = model(torch.tensor([tok.encode("\n" + HELD_OUT_POEM)]))
    text = tok.token_text(int(logits[0, -1].argmax()))
    if text in NEXT_TOKEN_OPTIONS:
        return NEXT_TOKEN_OPTIONS[text]
    return NEXT_TOKEN_OTHER if len(text) == 1 and "\u4e00" <= text <= "\u9fff" else f"首选是 {text!r}，不在选项里"


# gpt-attention 那道「先猜再看」题：句号得分最高的头读《登鸛雀樓》到位置 11（第二句末尾的「流」）时看哪里
BEFORE_STOP_QUERY = 11
BEFORE_STOP_OPTIONS = {
    0: "位置 0 的换行：一首诗的开头",
    6: "位置 6 的逗号：第一句的末尾",
    10: "位置 10 的「海」：紧挨着的前一个字",
}
BEFORE_STOP_SPREAD = "分散在前面各个位置上，没有哪个占到一半"


@exercise_answer("stop-head-before-stop")
def stop_head_before_stop():
    """gpt-attention 交互图打开时的那个头，第 BEFORE_STOP_QUERY 行的权重最多落在哪个位置（超过一半才算）。"""
    weights = poem_attention()["weights"]
    layer, h = full_stop_head()
    row = weights[layer][h][BEFORE_STOP_QUERY]
    top = int(row.argmax())
    if row[top].item() <= 0.5:
        return BEFORE_STOP_SPREAD
    return BEFORE_STOP_OPTIONS.get(top, f"最大的权重在位置 {top}，不在选项里")


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
