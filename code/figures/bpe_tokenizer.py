"""《分词：从字到 BPE》一文中的图和文末练习的答案。

@figure 声明一张构建时画的图，@figure_data 给它一个网页上可以操作的版本，@exercise_answer 算出文末练习的答案
（写法见 CONTRIBUTING.md）。构建网站时 python -m llmsite figures 会自动找到它们；
单独运行本文件会把图画到 /tmp/llm-figures/ 下。模板里的例子都用 code/bpe_tokenizer.py 的 main_idea，换成你的内容。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from bpe_tokenizer import main_idea
from figkit import exercise_answer, figure, figure_data, new_figure

# 模板示例：四个分数，在几种温度下做 softmax（分数除以温度）
SCORES = (2.0, 1.0, 0.0, -1.0)
TEMPERATURES = (0.5, 1.0, 2.0)


def weights(temperature: float = 1.0) -> torch.Tensor:
    return main_idea(torch.tensor(SCORES) / temperature)


@figure(
    "bpe-tokenizer-weights",
    article="bpe-tokenizer",
    title="四个分数在温度 1 下的 softmax 权重",
    caption="分数是 2、1、0、−1，温度为 1。网页上可以切换温度：温度越低，权重越集中到最大的分数上。",
)
def weights_figure():
    fig, ax = new_figure(size="wide")
    ax.bar(range(len(SCORES)), weights().numpy())
    ax.set_xticks(range(len(SCORES)), labels=[f"{s:g}" for s in SCORES])
    ax.set_xlabel("分数")
    ax.set_ylabel("权重")
    ax.set_ylim(0, 1)
    return fig


@figure_data("bpe-tokenizer-weights", view="bars")
def weights_figure_data():
    """网页上的交互版：按钮切换温度，旁边列出最大的权重。"""
    views = [
        {"at": [i], "title": f"温度 {t:g}", "values": weights(t),
         "stats": [{"label": "最大的权重", "value": weights(t).max(), "digits": 3}]}
        for i, t in enumerate(TEMPERATURES)
    ]
    return {
        "controls": [{"label": "温度", "options": [f"{t:g}" for t in TEMPERATURES], "initial": 1}],
        "views": views, "x_name": "四个分数（2、1、0、−1）", "y_name": "权重", "ymax": 1,
    }


# ---------- 文末练习的答案：构建时算出，写进练习里 ----------


@exercise_answer("bpe-tokenizer-top-weight")
def top_weight():
    """计算题：温度为 1 时最大的那个权重（返回一个数）。"""
    return weights().max().item()


# 选择题的三个选项：哪一组分数经过 softmax 后四个权重都相等
UNIFORM_CANDIDATES = {"2、1、0、−1": (2.0, 1.0, 0.0, -1.0), "5、5、5、5": (5.0, 5.0, 5.0, 5.0),
                      "0、1、0、1": (0.0, 1.0, 0.0, 1.0)}


@exercise_answer("bpe-tokenizer-uniform")
def uniform():
    """选择题：逐组算出权重，返回权重都相等的那一组（正确选项的文字）。"""
    equal = [text for text, scores in UNIFORM_CANDIDATES.items()
             if torch.allclose(w := main_idea(torch.tensor(scores)), torch.full_like(w, 1 / len(scores)))]
    return "、".join(equal)  # 恰好一组时就是那个选项的文字；否则构建会停下，指出它不是选项之一


@exercise_answer("bpe-tokenizer-colder")
def colder():
    """先猜再看：温度从 1 降到 0.5，最大的权重怎样变（正确选项的文字）。"""
    before, after = weights(1.0).max().item(), weights(0.5).max().item()
    return "变大" if after > before else "变小" if after < before else "不变"


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
