"""《分词：从字到 BPE》一文中的图和文末练习的答案。

分词器全部由 code/bpe.py 的 train_bpe 在唐人五言绝句的训练集（data/tang_wujue/poems.txt 的 3337 首，
划分同 code/gpt_from_scratch.py 的 split_poems）上训练，在另外 370 首验证集的诗上量。训练一次，一直训练到
没有哪一对出现两次为止；更小的词表就是这份合并列表的前缀（训练是贪心的，tests/code/test_bpe.py 核对过）。
两个小 GPT 是构建产物：字符级的 tang-gpt（code/gpt_from_scratch.py）和 BPE 的 bpe-gpt（code/bpe_gpt.py）。
单独运行本文件会把图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from functools import cache

from bpe import BPE, bits_per_char, char_shares, tokens_per_char_prefixes, train_bpe
from figkit import exercise_answer, figure, figure_data, new_figure, plain_log_axis
from gpt_from_scratch import MIN_COUNT, load_poems, split_poems
from tokenizer import CharTokenizer

NO_LIMIT = 10**6  # 词表大小的上限定得够大：训练一直进行到最常见的一对也不到 2 次
CURVE_SIZES = (256, 260, 300, 400, 500, 700, 1000, 1500, 2000, 3009, 4000, 5000, 6000, 7000, 8000)  # 外加全部合并
# 验证集里的一首：李白《玉階怨》（语料原样，繁体）。它不在训练集里，但训练集里有它的异文（「晶」作「精」）
POEM = "玉階生白露，夜久侵羅襪。却下水晶簾，玲瓏望秋月。"
SEGMENT_SIZES = (256, 257, 258, 259, 260, 300, 500, 1000, 2000, 3009, 5000)  # 外加全部合并
STRIP_SIZES = (256, 300, 1000, 3009)  # 静态图画的几行（外加全部合并）


@cache
def texts() -> tuple[str, str]:
    """(训练文本, 验证文本)：每首诗后面接一个换行。"""
    return split_poems(load_poems())


@cache
def tang_bpe() -> BPE:
    """在训练集上一直训练到没有哪一对出现两次的 BPE（按字节的值打破平局）。"""
    return train_bpe(texts()[0], NO_LIMIT)


def prefix(size: int) -> BPE:
    """词表大小为 size 的 BPE：前 size - 256 次合并。"""
    return BPE(tang_bpe().merges[: size - 256])


def all_sizes(sizes: tuple[int, ...]) -> list[int]:
    return [*sizes, tang_bpe().vocab_size]


@cache
def char_tokenizer() -> CharTokenizer:
    """第一阶段的字符级分词器（出现至少 2 次的字，其余字节回退）。"""
    return CharTokenizer.train(texts()[0], min_count=MIN_COUNT)


# ---------- 图 1：每个字符几个词元，随词表大小变化 ----------


@figure(
    "bpe-tokens-per-char",
    article="bpe-tokenizer",
    title="在唐诗上训练的 BPE：词表越大，每个字符的词元越少",
    caption="数据是实测的：code/bpe.py 的 train_bpe 在 3337 首训练集的诗上训练，一直到没有哪一对出现两次"
    "（9336 个词元）；更小的词表取同一份合并列表的前缀。实线在验证集的 370 首诗上量（训练时没见过），"
    "虚线在训练集上量；横轴是对数刻度。叉号是第一阶段的字符级分词器（3009 个词元，其余字走字节回退）在验证集上的值。",
    data=("data/tang_wujue/poems.txt",),
)
def tokens_per_char_figure():
    train_text, held = texts()
    sizes = all_sizes(CURVE_SIZES)
    fig, ax = new_figure(size="wide")
    merges = [v - 256 for v in sizes]
    ax.plot(sizes, tokens_per_char_prefixes(held, tang_bpe(), merges), "o-", color="C0", markersize=4,
            label="验证集（370 首）")
    ax.plot(sizes, tokens_per_char_prefixes(train_text, tang_bpe(), merges), "s--", color="C1", markersize=3,
            label="训练集（3337 首）")
    char = char_tokenizer()
    ax.plot([char.vocab_size], [len(char.encode(held)) / len(held)], "x", color="C3", markersize=9, mew=2,
            label="字符级分词器（验证集）")
    ax.axhline(1.0, color="gray", linewidth=0.8, linestyle=":")
    plain_log_axis(ax, "x", ticks=[256, 500, 1000, 2000, 4000, 8000])
    ax.set_xlabel("词表大小（256 个字节 + 合并出的词元）")
    ax.set_ylabel("每个字符的词元数")
    ax.set_ylim(0.7, 3.0)
    ax.grid(True)
    ax.legend(fontsize=8)
    return fig


# ---------- 图 2：一首诗怎样被切开（可以拖动词表大小） ----------


def segment(size: int) -> list[str]:
    """POEM 加上结尾的换行，在词表 size 下切成的每个词元（不成字的字节写成 <0xE7><0x8E>）。"""
    bpe = prefix(size)
    return [bpe.token_text(i) for i in bpe.encode(POEM + "\n")]


@figure(
    "bpe-segmentation",
    article="bpe-tokenizer",
    title="同一首诗在不同大小的词表下切成的词元",
    caption="数据是实测的：BPE 在训练集的诗上训练（同上图），切的是验证集里的李白《玉階怨》"
    "（它不在训练集里，但训练集里有一个只差一个字的异文）连同结尾的换行。每一行是一个词表大小，每个方框是一个词元：方框盖住几个字（或一个字的几分之几），"
    "这个词元就由哪些字节组成；没有写字的方框不成字，只是一个字的一部分字节。"
    "网页上可以拖动滑块，从一次合并都没有开始逐步看。",
    data=("data/tang_wujue/poems.txt",),
)
def segmentation_figure():
    from matplotlib.patches import Rectangle

    sizes = all_sizes(STRIP_SIZES)
    text = POEM + "\n"
    fig, ax = new_figure(size="tall")
    for row, size in enumerate(sizes):
        bpe = prefix(size)
        owner = [i + k / len(c.encode()) for i, c in enumerate(text) for k in range(len(c.encode()))]
        owner.append(len(text))  # 最后一个字节之后的位置
        start = 0
        y = len(sizes) - 1 - row
        for token in bpe.encode(text):
            end = start + len(bpe.tokens[token])
            x0, x1 = owner[start], owner[end]
            ax.add_patch(Rectangle((x0 + 0.04, y + 0.12), x1 - x0 - 0.08, 0.76, facecolor=f"C{row}", alpha=0.25,
                                   edgecolor=f"C{row}"))
            label = bpe.token_text(token)
            if not label.startswith("<") and (x1 - x0) >= 0.99:
                ax.text((x0 + x1) / 2, y + 0.5, label, ha="center", va="center", fontsize=9)
            start = end
        n = len(bpe.encode(text))
        ax.text(len(text) + 0.3, y + 0.5, f"{n} 个词元", va="center", fontsize=9)
    ax.set_xlim(0, len(text) + 3.2)
    ax.set_ylim(0, len(sizes))
    ax.set_yticks([len(sizes) - 1 - r + 0.5 for r in range(len(sizes))], labels=[f"词表 {v}" for v in sizes])
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title("《玉階怨》连同换行（25 个字符）")
    return fig


@figure_data("bpe-segmentation", view="bars")
def segmentation_figure_data():
    """网页上的交互版：滑块选词表大小，柱子是每个字符分摊到的词元数，标题是切开后的样子。"""
    sizes = all_sizes(SEGMENT_SIZES)
    held = tokens_per_char_prefixes(texts()[1], tang_bpe(), [v - 256 for v in sizes])
    views = []
    for i, size in enumerate(sizes):
        bpe = prefix(size)
        shares = char_shares(POEM + "\n", bpe)
        views.append({
            "at": [i], "title": f"词表 {size}：" + " | ".join(segment(size)), "values": shares,
            "stats": [{"label": "这首诗的词元数", "value": len(bpe.encode(POEM + "\n")), "digits": 0},
                      {"label": "这首诗每个字符的词元数", "value": sum(shares) / len(shares), "digits": 3},
                      {"label": "验证集每个字符的词元数", "value": held[i], "digits": 3}],
        })
    return {
        "controls": [{"label": "词表大小", "kind": "slider", "options": [str(v) for v in sizes]}],
        "note": "静态图只画了其中 5 个词表大小。柱子从左到右是这首诗的 25 个字符（24 个字和最后的换行），"
                "高度是它分摊到的词元数：拆成 3 个字节时是 3，和别的字合成一个词元时是 0.5。",
        "views": views, "x_name": "《玉階怨》的 25 个字符", "y_name": "每个字符分摊到的词元数", "ymax": 3,
        "reference": {"value": 1, "label": "一字一词元"},
    }


# ---------- 图 3：两个小 GPT，按每个字符的比特比较 ----------


@cache
def gpt_results() -> dict[str, dict[str, float]]:
    """两个模型在验证集 370 首诗上的 poem_bits。"""
    from bpe_gpt import poem_bits, pretrained_bpe_gpt
    from gpt_from_scratch import pretrained_gpt

    held_poems = load_poems()[9::10]  # 与 split_poems 相同：第 10、20……首
    char_model, char_tok, _ = pretrained_gpt(verbose=False)
    bpe_model, bpe, _ = pretrained_bpe_gpt(verbose=False)
    return {"char": poem_bits(char_model, char_tok, held_poems), "bpe": poem_bits(bpe_model, bpe, held_poems)}


@figure(
    "bpe-gpt-bits",
    article="bpe-tokenizer",
    title="字符级与 BPE 的小 GPT：每词元的损失和每个字符的比特",
    caption="数据来自训练：两个模型形状相同（4 层、d_model = 64），词表都是 3009 个词元，"
    "按同样的设置在 3337 首训练集的诗上训练 300 步，每步 16 段、每段 64 个词元；只有分词器不同。"
    "在验证集的 370 首诗上量：每首诗前面放一个换行，预测诗的每个词元和结尾的换行。"
    "左：每个词元的平均损失（奈特），两个模型的词元不一样长，这个数不能直接比。"
    "右：换算成每个字符的比特，分成落在汉字上的和落在标点、换行上的两部分。",
    data=("data/tang_wujue/poems.txt",),
)
def gpt_bits_figure():
    r = gpt_results()
    names = ["字符级", "BPE"]
    fig, axes = new_figure(ncols=2, size="wide", gridspec_kw={"width_ratios": [1, 1.4]})
    per_token = [r["char"]["nats_per_token"], r["bpe"]["nats_per_token"]]
    axes[0].bar(names, per_token, color=["C0", "C1"], width=0.6)
    for k, v in enumerate(per_token):
        axes[0].text(k, v + 0.1, f"{v:.2f}", ha="center", fontsize=9)
    axes[0].set_ylabel("nat / 词元")
    axes[0].set_title("每词元的损失")
    axes[0].set_ylim(0, 7.5)
    chars = [r["char"]["char_bits"], r["bpe"]["char_bits"]]
    marks = [r["char"]["mark_bits"], r["bpe"]["mark_bits"]]
    axes[1].bar(names, chars, color=["C0", "C1"], width=0.6, label="汉字")
    axes[1].bar(names, marks, bottom=chars, color="C2", width=0.6, label="标点和换行")
    for k in range(2):
        axes[1].text(k, chars[k] + marks[k] + 0.1, f"{chars[k] + marks[k]:.2f}", ha="center", fontsize=9)
    axes[1].set_ylabel("比特 / 字符")
    axes[1].set_title("每个字符的比特")
    axes[1].set_ylim(0, 10)
    axes[1].legend(fontsize=8, loc="lower right")
    for ax in axes:
        ax.grid(True, axis="y")
    return fig


# ---------- 文末练习的答案 ----------


@exercise_answer("bytes-only-poem-tokens")
def bytes_only_poem_tokens():
    """计算题：一次合并都没有（只有 256 个字节词元）时，POEM 连同换行编成几个词元。"""
    return len(BPE([]).encode(POEM + "\n"))


@exercise_answer("bpc-from-nats")
def bpc_from_nats():
    """计算题：每词元 6.0 奈特、每 100 个字符 99 个词元，相当于每个字符多少比特。"""
    return bits_per_char(6.0, n_tokens=99, n_chars=100)


@exercise_answer("poem-tokens-at-3009", data=("data/tang_wujue/poems.txt",))
def poem_tokens_at_3009():
    """先猜再看：词表 3009 时 POEM 连同换行编成几个词元。"""
    return len(train_bpe(texts()[0], 3009).encode(POEM + "\n"))


PREFIX_OPTIONS = ("完全相同", "前面相同，后面不同", "从第一次合并起就不同")


@exercise_answer("prefix-same-as-training", data=("data/tang_wujue/poems.txt",))
def prefix_same_as_training():
    """选择题：直接训练到词表 1000，和训练到底再取前 744 次合并，两份合并列表比较的结果。"""
    direct = train_bpe(texts()[0], 1000).merges
    cut = tang_bpe().merges[:744]
    if direct == cut:
        return PREFIX_OPTIONS[0]
    return PREFIX_OPTIONS[1] if direct[0] == cut[0] else PREFIX_OPTIONS[2]


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
