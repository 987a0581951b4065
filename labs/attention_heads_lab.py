# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：注意力头在学什么
#
# 这个实验配合文章[《Transformer 与注意力机制》](../articles/transformer-attention.md)阅读，最好先做完上一个实验[《一步一步算注意力》](attention_lab.ipynb)。
#
# 上一个实验里，注意力的权重是随机的。这一次我们在 CPU 上训练一个很小的 Transformer，然后打开它，看每个注意力头到底学会了做什么。我们不靠猜：先给每个头算几个「分数」，再根据分数下结论，最后把头关掉，看模型是不是真的离不开它。文章里那张「训练过的注意力头」的图，用的就是这里的同一个模型。
#
# 页面上的数字和图都是构建网站时实际运行得到的（随机种子固定）。

# %%
# 准备工作：找到实验要导入的代码（attention.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "attention.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
from tiny_transformer import (
    SCORE_NAMES,
    TinyConfig,
    TinyTransformer,
    format_score,
    head_scores,
    make_repeat_batch,
    name_head,
    pretrained,
    repeat_metrics,
    train,  # noqa: F401 （第 9 节的练习用它重新训练）
)

# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
# 图用浅色配色画在白色底上：网页切换到深色模式时，白底上的图依然清楚
plt.rcParams.update(figkit.rc_params("light"))
plt.rcParams.update({"figure.facecolor": "white", "savefig.facecolor": "white", "savefig.transparent": False})
# 模型很小，多线程帮不上什么忙；只用一个线程，机器忙的时候不会互相抢，结果也更容易复现
torch.set_num_threads(1)
torch.manual_seed(0)
print("PyTorch", torch.__version__)

# %% [markdown]
# ## 1. 任务：把一段随机序列再重复一遍
#
# 每条训练序列是这样的：开头一个起始符 `BOS`（编号 0），接着 $n$ 个互不相同的随机词（编号 1 到 47），然后把这 $n$ 个词原样再来一遍。模型的任务和所有语言模型一样：看着前面的词，预测下一个词。
#
# - 前一半是随机的，谁也猜不准；
# - 后一半却能「照抄」：读到第二遍的某个词时，到前面找到它上一次出现的位置，那里的**下一个词**就是答案。
#
# 要照抄，模型得先知道「前面哪个位置的前一个词是我」。这需要两步配合，单靠一层注意力做不到：第一层的某个头先把「我前面是哪个词」搬到每个位置上（**前一个词头**，previous-token head），第二层的某个头再拿当前的词去找「前一个词和我相同」的位置，把那里的词抄过来（**归纳头**，induction head）。这是我们要检验的猜想。下文和代码一样从 0 开始编号：第一层叫「第 0 层」，第二层叫「第 1 层」。
#
# 为了不让模型偷懒，每一步训练都随机选一个 $n$（4 到 16）：如果 $n$ 固定，模型只要学会「往回数 $n-1$ 个位置」就行了，根本不用看内容。

# %%
cfg = TinyConfig()
gen = torch.Generator().manual_seed(1)
example = make_repeat_batch(1, 8, cfg.vocab_size, gen)  # 一条 n = 8 的序列
print("序列:", example[0].tolist())
print("长度:", example.size(1), "= 1（BOS）+ 8 + 8")
print("第二遍从位置 9 开始；位置 10 起的词都能靠前面的内容猜对")

# %% [markdown]
# ## 2. 模型：两层、每层 4 个头，只有注意力
#
# 模型在仓库的 `code/tiny_transformer.py` 里，由上一个实验用过的 `MultiHeadAttention` 和 `causal_mask` 搭成：词嵌入加上正弦位置编码，经过两层「LayerNorm → 因果多头注意力 → 加回残差」，最后映射回词表。没有 MLP，所以模型能做的事情全部写在注意力里，方便我们观察。每次前向计算后，`model.attention_weights` 里存着每一层的注意力权重，形状是 (批, 头数, T, T)。

# %%
model = TinyTransformer(cfg)
print(model)
print(f"参数量: {sum(p.numel() for p in model.parameters()):,}")
with torch.no_grad():
    model(example)
print("每层注意力权重的形状:", [tuple(w.shape) for w in model.attention_weights])

# %% [markdown]
# ## 3. 训练
#
# 训练 1000 步，每步 64 条序列，优化器是 AdamW。损失只在「能靠照抄猜对」的位置上算：前一半是随机词，把它们算进来只会给训练添噪声（`train(..., loss_on="all")` 可以试试算上它们会怎样）。
#
# 这个模型就是 `code/tiny_transformer.py` 里的 `train_reference()`：上面这个配置，种子 0，训练 1000 步。构建网站时它只训练一次，存进缓存，文章里的图和这个实验读的是同一份参数，下面的 `pretrained()` 直接读取它。下载的 Notebook 没有这份缓存，`pretrained()` 就现场训练，并打印用了多少时间。种子相同、都用单线程时，在同一台机器、同一个 PyTorch 版本上每次训练得到的参数逐位相同，后面的数字也一样；换一台机器或换一个 PyTorch 版本，浮点运算的细节可能不同，数字可能和网站上的略有出入。

# %%
model, history = pretrained()  # 想换参数重新训练（见第 9 节），把这一行换成：history = train(model, steps=1000, seed=0)
cfg = model.cfg
print(f"训练了 {len(history.loss)} 步")
print(f"最后 50 步的平均损失 {sum(history.loss[-50:]) / 50:.3f}，"
      f"重复部分的平均准确率 {sum(history.repeat_acc[-50:]) / 50:.1%}")


def first_step_above(values: list[float], level: float) -> int | None:
    """准确率第一次超过 level 的那一步（按 20 步的滑动平均）。"""
    for i in range(20, len(values) + 1):
        if sum(values[i - 20 : i]) / 20 > level:
            return i - 1
    return None


steps_at = {level: first_step_above(history.repeat_acc, level) for level in (0.1, 0.5, 0.9)}
for level, step in steps_at.items():
    print(f"准确率（20 步滑动平均）第一次超过 {level:.0%}：" + (f"第 {step} 步" if step is not None else "没有达到"))
if steps_at[0.1] is not None and steps_at[0.9] is not None:
    rise = steps_at[0.9] - steps_at[0.1]
    print(f"从 10% 到 90% 用了 {rise} 步，占全部 {len(history.loss)} 步的 {rise / len(history.loss):.0%}")

# %%
def smooth(values: list[float], k: int = 20) -> list[float]:
    """k 步的滑动平均，让曲线好读一些。"""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= k:
            total -= values[i - k]
        out.append(total / min(i + 1, k))
    return out


fig, axes = figkit.new_figure(ncols=2)
axes[0].plot(history.loss, alpha=0.25, linewidth=1)
axes[0].plot(smooth(history.loss), color=axes[0].lines[0].get_color())
axes[0].set_title("损失（重复的那一半）")
axes[0].set_xlabel("训练步数")
axes[1].plot([a * 100 for a in smooth(history.repeat_acc)], color=figkit.THEMES["light"]["colors"][1])
axes[1].set_ylim(0, 102)
axes[1].set_title("重复部分的准确率（%）")
axes[1].set_xlabel("训练步数")
fig.suptitle("参考模型的训练记录（在每一步训练用的序列上量）")
plt.show()

# %% [markdown]
# 对照上面打印的步数看曲线：准确率从 10% 升到 90% 花了多少步？Olsson 等人（2022，[*In-context Learning and Induction Heads*](https://arxiv.org/abs/2209.11895)）在真实文本上训练了大小不同的模型，发现归纳头集中在训练早期很短的一段里形成，模型利用上文的能力也在同一段里突然变强，训练损失曲线上能看到一个小鼓包；他们把这叫作「相变」（phase change）。为什么这么突然，一种解释是：两层的头必须配合起来才有用，单独一个头学会了也换不来更低的损失，所以一开始几乎没有梯度把它们往那个方向推；一旦有了一点苗头，两边互相加强，很快就连成一片。我们的任务很干净、损失只算在能照抄的位置上，这个过程通常快得多，开头那段损失几乎不动的平台可能短到看不出来。

# %% [markdown]
# ## 4. 在没见过的序列上检验
#
# 准确率是在训练的序列上算的。换一批新序列，再试试训练时没用过的长度（训练时 $n$ 只在 4 到 16 之间）：

# %%
for n in (4, 8, 16, 20, 24):
    test = make_repeat_batch(256, n, cfg.vocab_size, torch.Generator().manual_seed(100 + n))
    with torch.no_grad():
        loss, acc = repeat_metrics(model(test), test, n)
    note = "（训练时没见过的长度）" if n > 16 else ""
    print(f"n = {n:>2}: 重复部分的损失 {loss:.3f}，准确率 {acc:.1%}{note}")

# %% [markdown]
# ## 5. 每个头在看哪里
#
# 拿第 1 节那条 $n = 8$ 的序列跑一遍模型，把两层共 8 个头的注意力权重画出来。每张图的第 $i$ 行是第 $i$ 个位置（查询）分给前面各个位置的权重；右上角被因果掩码挡住，全是 0。虚线标出第二遍开始的位置。

# %%
with torch.no_grad():
    model(example)
n = 8
labels = ["BOS"] + [str(t) for t in example[0, 1:].tolist()]
# squeeze=False：只有一层或一个头时 axes 仍是二维的，axes[layer, h] 照样能用（第 9 节的练习会用到）
fig, axes = figkit.new_figure(ncols=cfg.n_heads, nrows=cfg.n_layers, size="tall", squeeze=False)
for layer in range(cfg.n_layers):
    for h in range(cfg.n_heads):
        ax = axes[layer, h]
        figkit.heatmap(ax, model.attention_weights[layer][0, h], vmax=1.0, colorbar=False)
        ax.set_title(f"第 {layer} 层 · 第 {h} 个头", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        for edge in (n + 0.5,):
            ax.axhline(edge, color="white", linewidth=0.8, linestyle="--")
            ax.axvline(edge, color="white", linewidth=0.8, linestyle="--")
fig.suptitle(f"训练好的模型，在一条 n = {n} 的序列上的注意力权重")
plt.show()

# %% [markdown]
# 如果猜想成立，图里应该有两种亮线：
#
# - 前一个词头：紧贴对角线左侧的一条斜线，每个位置都在看**前一个**位置；
# - 归纳头：在横虚线下方、竖虚线左侧（第二遍的词看第一遍的位置），离对角线 $n - 1$ 格的一条斜线：第二遍的每个词都在看第一遍里**同一个词的下一个位置**。
#
# 对照上面的图找一找。不过「看起来像」不算数，下面给每个头打分。

# %% [markdown]
# ## 6. 给每个头打分
#
# 设 $A_{ij}$ 是某个头里位置 $i$ 分给位置 $j$ 的权重，在 256 条新序列上取平均：
#
# - **前一个词**得分：$A_{i,\,i-1}$ 的平均值，位置 $i = 1, \dots, T-1$；
# - **归纳**得分：设位置 $i$ 的词上一次出现在位置 $j$，取 $A_{i,\,j+1}$ 的平均值（只在前面出现过的位置上平均）；
# - **同词**得分：同上，但取 $A_{i,\,j}$，即直接看上一次出现的那个位置；
# - **自身**得分：$A_{i,\,i}$；**起始符**得分：$A_{i,\,0}$。Clark 等人（2019，[*What Does BERT Look At?*](https://arxiv.org/abs/1906.04341)）发现 BERT 的很多头把大量注意力放在特殊符号 [SEP] 上，推测这相当于这个头「这一次什么都不做」；我们的 `BOS` 也可能被这样用。
#
# 每个分数都在 0 到 1 之间。作为对照，再算一个「均匀注意力」：每个位置把权重平均分给它能看到的所有位置。一个头的某项得分要明显高于这个对照，才能说它「专门在做这件事」。下面先按定义手算一个分数，再用 `code/tiny_transformer.py` 里的 `head_scores` 算出全部分数。

# %%
scoring = make_repeat_batch(256, 8, cfg.vocab_size, torch.Generator().manual_seed(7))
with torch.no_grad():
    model(scoring)
weights = model.attention_weights  # 每层一个 (256, 4, T, T)
T = scoring.size(1)

# 按定义手算：第 0 层第 0 个头的「前一个词」得分
rows = torch.arange(1, T)
manual = weights[0][:, 0, rows, rows - 1].mean().item()
print(f"手算：第 0 层第 0 个头的前一个词得分 = {manual:.3f}")
print(f"head_scores 算出的同一个分数     = {head_scores(weights[0], scoring)['previous'][0].item():.3f}")

# 对照：均匀注意力（每行在能看到的位置上平均分配）
uniform = torch.tril(torch.ones(T, T))
uniform = (uniform / uniform.sum(dim=-1, keepdim=True)).expand(len(scoring), 1, T, T)
baseline = {k: v[0].item() for k, v in head_scores(uniform, scoring).items()}

# %% tags=["head-scores"]
THRESHOLD = 0.3  # 判断一个头「专门做某件事」的门槛，理由见下文
table: list[tuple[int, int, dict[str, float], str]] = []
for layer, w in enumerate(weights):
    s = head_scores(w, scoring)
    for h in range(w.size(1)):
        scores = {k: s[k][h].item() for k in SCORE_NAMES}
        table.append((layer, h, scores, name_head(scores, THRESHOLD)))

# 对齐表格：一个汉字在等宽字体里占两个字符宽。分数写两位小数；离门槛太近、四舍五入后会看错结论的，多写几位
header = "".join(" " * (8 - 2 * len(SCORE_NAMES[k])) + SCORE_NAMES[k] for k in SCORE_NAMES)
print(" " * 17 + header + "   判断")
for layer, h, scores, name in table:
    cells = "".join(f"{format_score(scores[k], THRESHOLD):>8}" for k in SCORE_NAMES)
    print(f"第 {layer} 层 第 {h} 个头" + cells + f"   {name}")
print("均匀注意力" + " " * 7 + "".join(f"{format_score(baseline[k], THRESHOLD):>8}" for k in SCORE_NAMES) + "   （对照）")

# %% [markdown]
# 门槛定为 0.3：均匀注意力的「前一个词」得分约 0.15、「归纳」得分约 0.08（见表中最后一行），0.3 是前者的 2 倍、后者的近 4 倍，不是随便分一分就能达到的。`name_head` 按得分最高的一项给头起名，最高分不到门槛（小于 0.3）就记为「没有明显分工」。表里的分数一般写两位小数；要是四舍五入会让一个分数看起来跨过了门槛（比如 0.2996 写成 0.30），`format_score` 就多写几位，让你按印出来的数自己判断时，结论和程序的一样。

# %% [markdown]
# ## 7. 结论：从分数读出来
#
# 下面这段话不是事先写好的，而是由上面的分数生成的：换一个随机种子或改了模型，结论会跟着变。

# %%
def heads_named(name: str) -> list[tuple[int, int]]:
    return [(layer, h) for layer, h, _, n in table if n == name]


def describe(heads: list[tuple[int, int]]) -> str:
    return "、".join(f"第 {layer} 层第 {h} 个头" for layer, h in heads) or "没有"


previous_heads = heads_named("前一个词头")
induction_heads = heads_named("归纳头")
print(f"前一个词头（前一个词得分 ≥ {THRESHOLD}，且是该头最高的一项）：{describe(previous_heads)}")
print(f"归纳头（归纳得分 ≥ {THRESHOLD}，且是该头最高的一项）：{describe(induction_heads)}")
others = [(layer, h, n) for layer, h, _, n in table if n not in ("前一个词头", "归纳头")]
for layer, h, n in others:
    print(f"第 {layer} 层第 {h} 个头：{n}")

if previous_heads and induction_heads:
    ordered = max(layer for layer, _ in previous_heads) < min(layer for layer, _ in induction_heads)
    if ordered:
        print("结论：前一个词头全部在归纳头之前的层里，正是猜想中「先记下前一个词、再按它去找」的两步分工。")
    else:
        print("结论：两种头都出现了，但层的先后和猜想不一致，值得再仔细看看。")
else:
    print("结论：这次训练没有同时出现两种头，猜想没有得到支持（试试更多的训练步数或别的随机种子）。")

best_prev = max(table, key=lambda row: row[2]["previous"])
best_ind = max(table, key=lambda row: row[2]["induction"])
print(f"前一个词得分最高的是第 {best_prev[0]} 层第 {best_prev[1]} 个头：{format_score(best_prev[2]['previous'])}"
      f"（均匀注意力 {format_score(baseline['previous'])}），"
      f"它另有 {format_score(best_prev[2]['self'])} 的注意力落在自己身上。")
print(f"归纳得分最高的是第 {best_ind[0]} 层第 {best_ind[1]} 个头：{format_score(best_ind[2]['induction'])}"
      f"（均匀注意力 {format_score(baseline['induction'])}）。")

# %% [markdown]
# ## 8. 关掉它们试试
#
# 分数说明的是「头在看哪里」，还不能证明模型「靠它完成任务」。更直接的办法是把头关掉：让某个头的输出变成 0，再看准确率掉了多少。`MultiHeadAttention` 把各头的输出拼起来之后交给 `out` 这个线性层，所以只要在 `out` 的输入上把对应的那一段清零就行（用 PyTorch 的 forward pre-hook，不用改模型代码）。

# %%
test = make_repeat_batch(256, 8, cfg.vocab_size, torch.Generator().manual_seed(11))
d_head = cfg.d_model // cfg.n_heads


def accuracy_without(heads: list[tuple[int, int]]) -> float:
    """把 heads 里列出的 (层, 头) 的输出清零后，重复部分的准确率。"""
    handles = []
    for layer in {layer for layer, _ in heads}:
        dropped = [h for lay, h in heads if lay == layer]

        def zero_heads(module: torch.nn.Module, args: tuple, dropped: list[int] = dropped) -> tuple:
            x = args[0].clone()  # (B, T, d_model)：各头的输出按顺序拼在一起
            for h in dropped:
                x[..., h * d_head : (h + 1) * d_head] = 0
            return (x,)

        handles.append(model.blocks[layer].attn.out.register_forward_pre_hook(zero_heads))
    try:
        with torch.no_grad():
            _, acc = repeat_metrics(model(test), test, 8)
    finally:
        for handle in handles:
            handle.remove()
    return acc.item()


all_heads = [(layer, h) for layer in range(cfg.n_layers) for h in range(cfg.n_heads)]
NEEDED = 0.9  # 关掉之后准确率低于 90%，才说模型「离不开」这个头（或这几个头）
HALF = 0.5
full = accuracy_without([])
print(f"完整的模型：准确率 {full:.1%}；门槛 {NEEDED:.0%}")
single = {head: accuracy_without([head]) for head in all_heads}
for (layer, h), acc in single.items():
    print(f"只关掉第 {layer} 层第 {h} 个头：{format_score(acc, NEEDED, 1, percent=True)}")
by_layer = {
    layer: accuracy_without([(lay, h) for lay, h in all_heads if lay == layer]) for layer in range(cfg.n_layers)
}
for layer, acc in by_layer.items():
    print(f"关掉第 {layer} 层的全部 {cfg.n_heads} 个头：{format_score(acc, HALF, 1, percent=True)}")
chance = 1 / (cfg.vocab_size - 1)
print(f"（随便猜的准确率约 {chance:.1%}）")

# %% [markdown]
# 单独关掉一个头影响不大，可能是因为它本来就没什么用，也可能是同一层还有别的头在做同样的事、替它顶上了。要分清这两种情况，就得把同一层的头**两两一起**关掉：如果两个头各自关掉都没关系，一起关掉准确率却掉到门槛以下，那它们就是在互相顶替。

# %%
pairs = {
    (layer, a, b): accuracy_without([(layer, a), (layer, b)])
    for layer in range(cfg.n_layers)
    for a in range(cfg.n_heads)
    for b in range(a + 1, cfg.n_heads)
}
for layer in range(cfg.n_layers):
    shown = "  ".join(f"头 {a}+{b}：{format_score(acc, NEEDED, 1, percent=True)}"
                      for (lay, a, b), acc in pairs.items() if lay == layer)
    print(f"第 {layer} 层，两个头一起关掉：{shown}")

# %%
# 下面的结论由上面的准确率生成，门槛是 90%
needed = [head for head, acc in single.items() if acc < NEEDED]
if needed:
    for layer, h in needed:
        print(f"只关掉第 {layer} 层第 {h} 个头，准确率就降到 {format_score(single[(layer, h)], NEEDED, 1, percent=True)}"
              f"（低于 {NEEDED:.0%}）：模型离不开它。")
else:
    worst = min(single.values())
    print(f"关掉任何一个头，准确率都不低于 {NEEDED:.0%}（最低 {format_score(worst, NEEDED, 1, percent=True)}）：单个头都不是必需的。")
backups = [(layer, a, b, acc) for (layer, a, b), acc in pairs.items()
           if acc < NEEDED and single[(layer, a)] >= NEEDED and single[(layer, b)] >= NEEDED]
for layer, a, b, acc in backups:
    print(f"第 {layer} 层的头 {a} 和头 {b}：单独关掉哪一个准确率都不低于 {NEEDED:.0%}，"
          f"一起关掉降到 {format_score(acc, NEEDED, 1, percent=True)}：它们可以互相顶替。")
if not backups:
    print(f"没有哪一对头是「各自关掉都不低于 {NEEDED:.0%}、一起关掉就低于 {NEEDED:.0%}」的：从这组实验看不出头之间互相顶替。")
if all(acc < HALF for acc in by_layer.values()):
    print(f"而关掉任意一整层，准确率都低于 {HALF:.0%}：两层缺一不可，和「两步配合」的猜想一致。")
else:
    kept = [layer for layer, acc in by_layer.items() if acc >= HALF]
    print(f"关掉第 {'、'.join(map(str, kept))} 层后准确率仍不低于 {HALF:.0%}：这一层不是必需的，和猜想不完全一致。")

# %% [markdown]
# ## 9. 动手试试
#
# 改动下面的参数，把第 3 节的 `pretrained()` 换成 `train(...)`，从第 1 节重新运行。每训练一次要等一会儿：用时和你的机器有关，下载的 Notebook 第一次运行时打印的「训练用时」可以作参考。
#
# 1. **只用一层**：第 1 节改成 `cfg = TinyConfig(n_layers=1)`。一层注意力还能学会照抄吗？打分表会变成什么样？
# 2. **固定长度**：`history = train(model, half_len=12)`。训练准确率照样很高，但第 4 节换成别的长度时呢？看看第 0 层的头在看哪里。
# 3. **在整条序列上算损失**：`history = train(model, loss_on="all")`。同样 1000 步，归纳头还来得及出现吗？
# 4. **一层只有一个头**：`cfg = TinyConfig(n_heads=1)`。第 8 节关掉一个头会怎样？
# 5. **换成可学习的位置嵌入**：`cfg = TinyConfig(positions="learned")`，比较第 0 层的前一个词得分。
#
# 回到文章：[《Transformer 与注意力机制》](../articles/transformer-attention.md)
