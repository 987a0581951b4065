"""《微调：SFT 与 LoRA——教模型写藏头诗》一文中的图和文末练习的答案。

训练得到的数都来自 code/lora_train.py 的构建产物 compare_finetuning()：第一阶段的唐诗 GPT
（gpt_from_scratch.pretrained_gpt）在训练集的藏头样本上全参数微调、加秩为 1、4、8 的 LoRA 微调，
再在验证集的藏头上评估。@figure 声明构建时画的图，@figure_data 给它网页上可以操作的版本，
@exercise_answer 算出文末练习的答案（写法见 CONTRIBUTING.md）。单独运行本文件会把图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from functools import cache

import torch
from acrostic import IGNORE, acrostic_prompt, build_sft_data
from figkit import exercise_answer, figure, figure_data, new_figure, plain_log_axis
from gpt_from_scratch import MIN_COUNT, load_poems, poem_config, split_poems
from lora import add_lora, lora_parameters, trainable_parameters
from lora_train import LORA_TARGETS, METHOD_LABELS, finetuning
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer

RANKS = (1, 2, 4, 8, 16, 32, 64)  # 参数图的横轴：秩（64 是 d_model，再大就超过矩阵本身的秩了）
ORDER = ("base", "lora-1", "lora-4", "lora-8", "full")  # 图里各种方法的先后
SHOWN_HEADS = 8  # 交互图：验证集里前 8 组藏头（按语料里的顺序，没有挑选）
STATIC_HEADS = 3  # 静态图：其中的前 3 组
STATIC_METHODS = ("base", "lora-4", "full")


@cache
def tokenizer() -> CharTokenizer:
    """第一阶段的字符级分词器（训练集里出现至少 2 次的字）。"""
    return CharTokenizer.train(split_poems(load_poems())[0], min_count=MIN_COUNT)


def lora_count(r: int) -> int:
    """第一阶段的唐诗 GPT（随机初始化即可，只数参数）在每层的 qkv、out 上加秩为 r 的 LoRA 后的可训练参数。"""
    torch.manual_seed(0)
    model = TinyTransformer(poem_config(tokenizer().vocab_size))
    add_lora(model, LORA_TARGETS, r=r, alpha=8.0)
    return trainable_parameters(model)


def full_count() -> int:
    torch.manual_seed(0)
    return trainable_parameters(TinyTransformer(poem_config(tokenizer().vocab_size)))


@cache
def result() -> dict:
    return finetuning(verbose=False)


# ---------- 图 1：可训练参数随秩的变化（数出来的，不是训练得到的） ----------


@figure(
    "lora-params",
    article="lora-finetune",
    title="第一阶段的唐诗 GPT：全参数微调与不同秩的 LoRA 各要训练多少个参数",
    caption="数出来的，不是训练得到的：把 code/lora.py 的 add_lora 加在第一阶段唐诗 GPT（4 层、d_model = 64）"
    "每层注意力的 qkv（64 → 192）和 out（64 → 64）上，数 requires_grad 为 True 的参数。"
    "纵轴是对数坐标；虚线是全参数微调，也就是模型的全部参数。LoRA 的参数与秩成正比，每层每个秩 384 个。",
    data=("data/tang_wujue/poems.txt",),
)
def lora_params_figure():
    counts = [lora_count(r) for r in RANKS]
    full = full_count()
    fig, ax = new_figure(size="wide")
    ax.plot(RANKS, counts, "o-", label="LoRA（qkv 和 out，4 层）")
    for r, n in zip(RANKS, counts, strict=True):
        ax.annotate(f"{n:,}", (r, n), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=9)
    ax.axhline(full, linestyle="--", color="C1", label=f"全参数微调：{full:,}")
    plain_log_axis(ax, "x", RANKS)
    ax.set_yscale("log")
    ax.set_ylim(min(counts) / 2, full * 3)
    ax.set_xlabel("LoRA 的秩 r")
    ax.set_ylabel("可训练参数（对数坐标）")
    ax.legend(loc="lower right")
    return fig


# ---------- 图 2：微调的结果（训练得到的） ----------


@figure(
    "lora-results",
    article="lora-finetune",
    title="全参数微调与 LoRA：验证集上的 SFT 损失、格式正确的比例和藏头诗的成功率",
    caption="训练得到：第一阶段的唐诗 GPT 在训练集的藏头样本上各微调 80 步，每步 8 条，种子相同；"
    "评估只用验证集的诗（从未参与预训练和微调）。左：SFT 损失（只算回答的词元），"
    "每 20 步在验证集的前 64 条样本上量一次，"
    "第 0 步就是基座模型。右：按验证集的每组藏头贪心解码写一首诗，"
    "格式正确（四句、每句五个字）的比例，"
    "和四句句首全对（藏头成功）的比例。",
)
def lora_results_figure():
    r = result()
    runs = r["runs"]
    fig, axes = new_figure(ncols=2, size="tall", gridspec_kw={"width_ratios": [1.3, 1]})
    ax = axes[0]
    for i, name in enumerate(ORDER[1:]):
        h = runs[name]["history"]
        ax.plot(h.eval_steps, h.eval_held_out, marker="o", markersize=3, color=f"C{i}", label=METHOD_LABELS[name])
    ax.set_xlabel("微调步数")
    ax.set_ylabel("验证集 SFT 损失（nat / 词元）")
    ax.grid(True)
    ax.legend()
    ax = axes[1]
    x = torch.arange(len(ORDER)).float()
    for offset, key, label, alpha in ((-0.2, "well_formed", "格式正确", 1.0), (0.2, "success", "藏头成功", 0.45)):
        values = [runs[n][key] for n in ORDER]
        ax.bar(x + offset, values, width=0.4, color="C0", alpha=alpha, label=label)
        for xi, v in zip(x.tolist(), values, strict=True):
            ax.annotate(f"{v:.0%}", (xi + offset, v), textcoords="offset points", xytext=(0, 3), ha="center",
                        fontsize=8)
    ax.set_xticks(x.tolist(), labels=[METHOD_LABELS[n].replace(" ", "\n", 1) for n in ORDER], fontsize=9)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel(f"验证集 {len(r['heads'])} 组藏头上的比例")
    ax.legend(loc="upper left")
    return fig


# ---------- 图 3：写出来的诗（训练得到的；可以操作） ----------


def lines_of(poem: str) -> list[str]:
    """写出的诗按「，」「。」断开的前四句。"""
    from acrostic import LINE_END

    return [line for line in LINE_END.split(poem) if line][:4]


def mark_heads(poem: str, heads: str) -> str:
    """写出的每一句（至多四句）的句首对没对上：✓ 或 ✗，一句一个。"""
    return "".join("✓" if line[0] == heads[i] else "✗" for i, line in enumerate(lines_of(poem)))


@figure(
    "lora-poems",
    article="lora-finetune",
    title="验证集的三组藏头：基座模型、LoRA r=4 和全参数微调写出的诗",
    caption="训练得到：验证集里前三组藏头（按语料的顺序，没有挑选；这些诗从未参与训练），"
    "每个模型贪心解码写一首，原样列出（到换行为止）。右边每句一个记号：✓ 表示这一句的句首是要求的字，✗ 表示不是。"
    "文字是繁体，和语料一样。"
    "网页上可以换成前八组里的任意一组、五个模型中的任意一个，柱子是写出的每一句有几个字。",
)
def lora_poems_figure():
    r = result()
    fig, ax = new_figure(size="tall")
    ax.set_axis_off()
    rows = [(i, name) for i in range(STATIC_HEADS) for name in STATIC_METHODS]
    for k, (i, name) in enumerate(rows):
        y = 1 - (k + 0.5) / len(rows)
        heads = r["heads"][i]
        if name == STATIC_METHODS[0]:
            ax.text(0.0, y, f"藏头「{heads}」", ha="left", va="center", fontsize=11, color="C1", transform=ax.transAxes)
        ax.text(0.2, y, METHOD_LABELS[name], ha="left", va="center", fontsize=9, color="C0", transform=ax.transAxes)
        poem = r["runs"][name]["poems"][i]
        ax.text(0.34, y, poem, ha="left", va="center", fontsize=11, transform=ax.transAxes)
        ax.text(1.0, y, "句首 " + (mark_heads(poem, heads) or "（没写出一句）"), ha="right", va="center", fontsize=10,
                color="C2", transform=ax.transAxes)
    return fig


@figure_data("lora-poems", view="bars")
def lora_poems_data():
    """网页上的交互版：选一组藏头、一个模型，标题是它写的诗，四根柱子是每一句的字数。"""
    from acrostic import acrostic_ok, head_hits, well_formed

    r = result()
    heads = r["heads"][:SHOWN_HEADS]
    views = []
    for i, h in enumerate(heads):
        for j, name in enumerate(ORDER):
            run = r["runs"][name]
            poem = run["poems"][i]
            lengths = [len(line) for line in lines_of(poem)]
            views.append({
                "at": [i, j], "title": f"藏头「{h}」· {METHOD_LABELS[name]}：{poem}",
                "values": lengths + [0] * (4 - len(lengths)),
                "stats": [{"label": "格式正确", "value": int(well_formed(poem)), "digits": 0},
                          {"label": "句首对上的句数", "value": head_hits(h, poem), "digits": 0},
                          {"label": "藏头成功", "value": int(acrostic_ok(h, poem)), "digits": 0},
                          {"label": f"验证集 {len(r['heads'])} 组上格式正确的比例", "value": run["well_formed"],
                           "digits": 3},
                          {"label": f"验证集 {len(r['heads'])} 组上藏头成功的比例", "value": run["success"],
                           "digits": 3}],
            })
    return {
        "note": "静态图只列出前三组藏头、三个模型；这里是前八组、五个模型。柱子从左到右是写出的第一到第四句各有几个字"
                "（五言绝句每句五个字；不到四句的，缺的记为 0）。格式、句首、成功三项是 1 表示是、0 表示否。",
        "controls": [{"label": "藏头", "options": heads},
                     {"label": "模型", "options": [METHOD_LABELS[n] for n in ORDER]}],
        "views": views, "x_name": "第一到第四句", "y_name": "这一句有几个字", "ymax": 10,
        "reference": {"value": 5, "label": "五言"},
    }


# ---------- 文末练习的答案 ----------


@exercise_answer("lora-r2-trainable", data=("data/tang_wujue/poems.txt",))
def lora_r2_trainable():
    """唐诗 GPT 每层的 qkv、out 加秩为 2 的 LoRA：可训练参数（建出来数）。"""
    return lora_count(2)


@exercise_answer("lora-4096-ratio")
def lora_4096_ratio():
    """一个 4096 × 4096 的矩阵，全参数微调的参数个数是秩为 8 的 LoRA 的多少倍。"""
    with torch.device("meta"):
        full = torch.nn.Linear(4096, 4096, bias=False).weight.numel()
    return full // lora_parameters(4096, 4096, 8)


@exercise_answer("acrostic-masked-positions", data=("data/tang_wujue/poems.txt",))
def acrostic_masked_positions():
    """提示「藏头：春夏秋冬\\n」的样本里，labels 中有几个位置不算损失（不计右边补齐的）。"""
    poem = "春" + "一" * 4 + "，夏" + "一" * 4 + "。秋" + "一" * 4 + "，冬" + "一" * 4 + "。"
    data = build_sft_data([poem], tokenizer())
    assert data.prompt_lengths[0] == len(tokenizer().encode(acrostic_prompt("春夏秋冬")))
    return int((data.labels[0] == IGNORE).sum())


R1_OPTIONS = ("明显低于全参数微调（低 10 个百分点以上）", "和全参数微调相差不到 10 个百分点",
              "明显高于全参数微调（高 10 个百分点以上）")


@exercise_answer("lora-r1-form-vs-full")
def lora_r1_form_vs_full():
    """先猜再看：LoRA r=1 写出格式正确的诗的比例，和全参数微调比（按算出的差挑选项）。"""
    runs = result()["runs"]
    gap = runs["lora-1"]["well_formed"] - runs["full"]["well_formed"]
    return R1_OPTIONS[0] if gap < -0.1 else R1_OPTIONS[2] if gap > 0.1 else R1_OPTIONS[1]


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
