# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：评测藏头诗模型
#
# 这个实验配合文章[《评测：怎样知道模型真的变好了》](../articles/evaluation.md)阅读。文章用验证器给课程里每个模型写的诗打分，再配上地板、区间和 pass@k。这里亲手做四件事：核对 pass@k 的公式和「把所有挑法列出来数」一致；看 Wilson 区间怎样随次数收窄；让 500 步微调出的模型给验证集的前 60 组藏头各写 8 首，和地板、对照比一比；最后算它的 pass@k。
#
# 文章评的是全部 342 组藏头；这里只取前 60 组（按语料的顺序，没有挑选），好在一分钟内跑完，所以数会和文章略有不同。押韵要用 `pypinyin` 查读音，这个实验只用 torch、numpy 和 matplotlib，不查押韵。页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里（没有构建网站时的缓存，它会先训练第一阶段的模型、再做 500 步的微调，要多等几分钟）。

# %%
# 准备工作：找到实验要导入的代码（evaluation.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "evaluation.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import itertools

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
from acrostic import head_hits, line_heads, usable, well_formed
from capable_sft import capable_model
from evaluation import mean_pass_at_k, pass_at_k, prior_baselines, sample_acrostics
from gpt_from_scratch import load_poems, split_poems
from verifiers import wilson_interval

# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
# 图用浅色配色画在白色底上：网页切换到深色模式时，白底上的图依然清楚
plt.rcParams.update(figkit.rc_params("light"))
plt.rcParams.update({"figure.facecolor": "white", "savefig.facecolor": "white", "savefig.transparent": False})
# 模型很小，只用一个线程：机器忙的时候不会互相抢，结果也更容易复现
torch.set_num_threads(1)
print("PyTorch", torch.__version__)

# %% [markdown]
# ## 1. pass@k：公式和枚举
#
# 一组藏头写了 $n$ 首，其中 $c$ 首四句全对。从这 $n$ 首里不放回地挑 $k$ 首，至少挑到一首对的概率，公式是 $1-\binom{n-c}{k}/\binom{n}{k}$。把所有挑法列出来、一个一个数，应当得到同样的数；有放回的 $1-(1-c/n)^k$ 会偏低。

# %%
def enumerate_pass(n: int, c: int, k: int) -> float:
    """前 c 首是对的：所有 C(n, k) 种挑法里，至少挑到一首对的占多少。"""
    picks = list(itertools.combinations(range(n), k))
    return sum(any(i < c for i in pick) for pick in picks) / len(picks)


n = 8
worst = 0.0
for c in range(n + 1):
    for k in range(1, n + 1):
        worst = max(worst, abs(pass_at_k(n, c, k) - enumerate_pass(n, c, k)))
print(f"n = {n}，全部 c、k：公式和枚举最大相差 {worst:.1e}，{'一致' if worst < 1e-12 else '不一致'}（门槛 1e-12）")
for c, k in ((1, 4), (3, 4), (3, 8)):
    print(f"  c = {c}, k = {k}：无偏估计 {pass_at_k(n, c, k):.3f}，有放回的公式 {1 - (1 - c / n) ** k:.3f}")

# %% [markdown]
# ## 2. Wilson 区间随次数收窄
#
# 同样是 40% 的比例，在 10 次、100 次、1,000 次、10,000 次里量出来，95% Wilson 区间有多宽？宽度大约和 $1/\sqrt{n}$ 成正比：次数多 100 倍，区间窄 10 倍。

# %%
counts = [10, 30, 100, 300, 1000, 3000, 10000]
lows, highs = zip(*[wilson_interval(round(0.4 * m), m) for m in counts], strict=True)
fig, ax = plt.subplots(figsize=(6.4, 3.2))
ax.fill_between(counts, lows, highs, alpha=0.3, label="95% Wilson 区间")
ax.plot(counts, [0.4] * len(counts), "k--", label="量出的比例 0.4")
ax.set_xscale("log")
ax.set_xlabel("次数 n（对数坐标）")
ax.set_ylabel("比例")
ax.legend()
plt.show()
for m, lo, hi in zip(counts, lows, highs, strict=True):
    print(f"  n = {m:>6,}：{lo:.3f} – {hi:.3f}，宽 {hi - lo:.3f}")
lo, hi = wilson_interval(0, 60)
print(f"60 组一首也没成：常见的 p ± 1.96·标准误给出 [0, 0]，Wilson 区间是 [{lo:.3f}, {hi:.3f}]")

# %% [markdown]
# ## 3. 500 步微调的模型：命中率、地板和对照
#
# 读取文章里 500 步全参数微调（种子 0）的模型，给验证集的前 60 组藏头各写 8 首（温度 1，两个采样种子各 4 首）。再算两条地板（每句都写训练集最常见的句首字、按位置猜），和一个对照（把诗拿去和下一组藏头比）。

# %%
model, tok = capable_model(0)  # 构建网站时缓存了就直接读取
train_text, held_text = split_poems(load_poems())
train_heads = [line_heads(p) for p in train_text.splitlines() if usable(p, tok)]
heads = [line_heads(p) for p in held_text.splitlines() if usable(p, tok)][:60]
poems = [a + b for a, b in zip(sample_acrostics(model, tok, heads, 4, seed=0),
                               sample_acrostics(model, tok, heads, 4, seed=1), strict=True)]
hits = sum(head_hits(h, p) for h, ps in zip(heads, poems, strict=True) for p in ps)
lines = 4 * sum(len(ps) for ps in poems)
lo, hi = wilson_interval(hits, lines)
# 对照：第 i 组写的诗拿去和第 i+1 组的藏头比（和 evaluation.other_prompt_control 一样，只是不查押韵）
shifted = heads[1:] + heads[:1]
control_hits = sum(head_hits(h, p) for h, ps in zip(shifted, poems, strict=True) for p in ps)
control_high = wilson_interval(control_hits, lines)[1]
floors = prior_baselines(train_heads, heads)
print(f"前 {len(heads)} 组藏头，每组 8 首：句首命中 {hits} / {lines} = {hits / lines:.3f}（95% 区间 {lo:.3f} – {hi:.3f}）")
print(f"对照（和下一组藏头比）：{control_hits / lines:.3f}")
for name, (guess, r) in floors.items():
    print(f"地板（{'最常见的字' if name == 'commonest' else '按位置'}，猜「{guess}」）：{r.value:.3f}")
print(f"格式正确的诗：{sum(map(well_formed, [p for ps in poems for p in ps])) / (8 * len(heads)):.3f}")
above = lo > max(r.value for _, r in floors.values()) and lo > control_high
print("结论：区间的下限" + ("高于" if above else "不高于") + "两条地板和对照的上限，模型" + ("确实" if above else "看不出") + "在用提示里的字")
for h, ps in list(zip(heads, poems, strict=True))[:3]:
    print(f"  藏头「{h}」 {ps[0]}  句首对上 {head_hits(h, ps[0])} 句")

# %% [markdown]
# ## 4. 多写几首：它的 pass@k
#
# 数出每组 8 首里四句全对的首数，算 $k=1,2,4,8$ 的 pass@k。它随 $k$ 涨得多快？

# %%
correct = [sum(head_hits(h, p) == 4 for p in ps) for h, ps in zip(heads, poems, strict=True)]
ks = [1, 2, 4, 8]
values = [mean_pass_at_k(correct, 8, k) for k in ks]
fig, ax = plt.subplots(figsize=(6.4, 3.2))
ax.plot(ks, values, "o-")
ax.set_xscale("log", base=2)
ax.set_xticks(ks, labels=[str(k) for k in ks])
ax.set_xlabel("k")
ax.set_ylabel("pass@k")
plt.show()
for k, v in zip(ks, values, strict=True):
    print(f"  pass@{k} = {v:.3f}")
print(f"至少写对过一首的藏头：{sum(c > 0 for c in correct)} / {len(heads)} 组")
