# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：用 DPO 给藏头诗模型做偏好对齐
#
# 这个实验配合文章[《偏好对齐：从 RLHF 到 DPO》](../articles/preference-dpo.md)阅读。文章用 500 步 SFT 模型自己写的诗造偏好对，再用 DPO 训练它。这里把整个流程缩小一号，亲手走一遍：先核对 DPO 损失在起点等于 $\ln 2$；再造偏好对、看好回答和差回答差在哪里；然后训练几十步 DPO，看好回答、差回答的对数概率怎样变；最后在验证集的一部分藏头上比较训练前后，并逐个词元看 DPO 改了什么。
#
# 文章用 768 组藏头造偏好对、训练 60 步、在全部 342 组验证集藏头上评估；这里只用 192 组藏头、每步 16 对训练 40 步、评估前 150 组验证集藏头（按语料的顺序，没有挑选），好在一分钟内跑完，所以数会和文章不同，区间也宽得多。押韵要用 `pypinyin` 查读音，这个实验只用 torch、numpy 和 matplotlib，打分时不查押韵（文章的打分里押韵只占 0.25 分），评估也不数押韵。页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里（没有构建网站时的缓存，它会先训练第一阶段的模型、再做 500 步的微调，要多等几分钟）。

# %%
# 准备工作：找到实验要导入的代码（dpo_train.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "dpo_train.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import math

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
from acrostic import build_sft_data, head_hits, well_formed
from capable_sft import capable_model
from dpo_train import DPOSettings, build_pairs, evaluate_policy, head_token_shifts, train_dpo
from lora_train import poem_lists
from preference import dpo_loss
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
# ## 1. 起点：DPO 的损失是 ln 2
#
# 策略刚从参考模型复制出来时，两者给每个回答的对数概率相同，隐含奖励之差是 0，损失是 $-\log\sigma(0)=\ln 2$。策略把好回答的对数概率提高、差回答的降低，损失就变小；反过来就变大。

# %%
ref_good, ref_bad = torch.tensor([-95.0, -100.0]), torch.tensor([-110.0, -98.0])
print(f"策略 = 参考模型：{dpo_loss(ref_good, ref_bad, ref_good, ref_bad).item():.4f}（ln 2 = {math.log(2):.4f}）")
for dg, db in ((2, -2), (0, -4), (-2, -6), (-2, 2)):
    loss = dpo_loss(ref_good + dg, ref_bad + db, ref_good, ref_bad, beta=0.1).item()
    print(f"  好回答变化 {dg:+d} 奈特、差回答变化 {db:+d} 奈特（β = 0.1）：损失 {loss:.4f}")
print("前三行的损失一样：DPO 只看两者之差，好回答自己降了也不要紧")

# %% [markdown]
# ## 2. 造偏好对
#
# 读取文章里 500 步全参数微调（种子 0）的模型。从训练集里随机取 192 组藏头，每组按温度 1 写 4 首，验证器打分（句首对上几个算几分，格式对加 0.5；这里不查押韵），最高分的当好回答，最低分的当差回答；4 首同分的一组丢掉。

# %%
start, tok = capable_model(0)  # 构建网站时缓存了就直接读取
train_poems, held_poems = poem_lists()
train_heads = build_sft_data(train_poems, tok).heads
held_heads = build_sft_data(held_poems, tok).heads[:150]
gen = torch.Generator().manual_seed(0)
picked = [train_heads[i] for i in torch.randperm(len(train_heads), generator=gen)[:192].tolist()]
pairs = build_pairs(start, tok, picked, 4, 1.0, gen, rhyme=False)  # 不查押韵：不用 pypinyin


def describe(texts, heads):
    hits = sum(head_hits(h, t) for h, t in zip(heads, texts, strict=True)) / len(texts)
    form = sum(map(well_formed, texts)) / len(texts)
    return hits, form


print(f"{pairs.n_prompts} 组藏头 → {len(pairs)} 个偏好对（{pairs.ties} 组同分丢掉）")
for name, texts in (("好回答", pairs.chosen_text), ("差回答", pairs.rejected_text)):
    hits, form = describe(texts, pairs.heads)
    print(f"  {name}：平均对上 {hits:.2f} 个句首，格式正确 {form:.3f}")
same = sum(head_hits(h, c) == head_hits(h, r) for h, c, r in zip(pairs.heads, pairs.chosen_text,
                                                                    pairs.rejected_text, strict=True))
print(f"好回答和差回答对上的句首一样多（只差在格式）的偏好对：{same} / {len(pairs)}")
for h, c, r in list(zip(pairs.heads, pairs.chosen_text, pairs.rejected_text, strict=True))[:3]:
    print(f"  藏头「{h}」 好：{c}  差：{r}")

# %% [markdown]
# ## 3. 训练 DPO
#
# 复制一份 SFT 模型当策略，原模型冻住当参考模型。β = 0.1，每步 16 个偏好对，训练 40 步。训练中记下每一批上好回答、差回答的对数概率相对参考模型的变化。

# %%
s = DPOSettings(steps=40, batch_size=16)
policy, history = train_dpo(start, pairs, s)
steps = range(1, s.steps + 1)
fig, ax = plt.subplots(figsize=(6.4, 3.2))
ax.plot(steps, history.chosen_shift, "-", label="好回答")
ax.plot(steps, history.rejected_shift, "--", label="差回答")
ax.axhline(0, color="0.5", linewidth=0.8)
ax.set_xlabel("训练步数")
ax.set_ylabel("log π − log π_ref（奈特）")
ax.legend()
plt.show()
tail = s.steps // 4


def late(xs):
    return sum(xs[-tail:]) / tail


print(f"损失：第 1 步 {history.loss[0]:.3f}，最后 {tail} 步平均 {late(history.loss):.3f}")
print(f"最后 {tail} 步平均：好回答 {late(history.chosen_shift):+.2f} 奈特，差回答 {late(history.rejected_shift):+.2f} 奈特")
print("结论：间隔主要靠" + ("压低差回答" if -late(history.rejected_shift) > abs(late(history.chosen_shift))
                          else "抬高好回答") + "拉开")

# %% [markdown]
# ## 4. 训练前后：句首和格式
#
# 验证集的前 150 组藏头（训练时没见过），每组按温度 1 采样写 2 首。比较 SFT 模型和 DPO 之后的策略：句首命中逐句数，格式逐首数，都配上 95% Wilson 区间。

# %%
before = evaluate_policy(start, start, tok, held_heads, s, rhyme=False)
after = evaluate_policy(policy, start, tok, held_heads, s, rhyme=False)
intervals = {}
for key, label, count, total in (("lines", "采样的句首命中", lambda e: e["sampled"]["lines"], lambda e: 4 * e["sampled"]["n"]),
                                 ("form", "采样的格式正确", lambda e: e["sampled"]["form"], lambda e: e["sampled"]["n"])):
    row = []
    for name, ev in (("SFT", before), ("DPO", after)):
        lo, hi = wilson_interval(count(ev), total(ev))
        row.append((lo, hi))
        print(f"{label}（{name}）：{count(ev) / total(ev):.3f}（95% 区间 {lo:.3f} – {hi:.3f}）")
    intervals[key] = row
print(f"DPO 之后到参考模型的 KL：{after['kl']:.2f} 奈特")
for key, label in (("lines", "句首命中"), ("form", "格式正确")):
    (lo0, hi0), (lo1, hi1) = intervals[key]
    verdict = "区间不重叠，上升了" if lo1 > hi0 else "区间不重叠，下降了" if hi1 < lo0 else "区间重叠，说不上变了"
    print(f"结论（{label}）：{verdict}")

# %% [markdown]
# ## 5. 逐个词元看 DPO 改了什么
#
# 在训练用的偏好对上，看每个词元的对数概率比参考模型变了多少：句首写对了要求的字、句首写错了、其余的字，分开求平均。写错的那些句首，再看要求的那个字（没写出来的那个）变了多少。

# %%
shifts = head_token_shifts(policy, start, pairs, tok)
for which, name in (("chosen", "好回答"), ("rejected", "差回答")):
    o = shifts[which]
    print(f"{name}：句首写对 {o['right']:+.3f}（{o['n_right']} 个），句首写错 {o['wrong']:+.3f}（{o['n_wrong']} 个），"
          f"其余的字 {o['other']:+.3f}（{o['n_other']} 个）；写错处要求的字 {o['required']:+.3f}")
o = shifts["rejected"]
print(f"结论：差回答里写错的句首字变化 {o['wrong']:+.3f} 奈特，同一位置上要求的字" +
      (f"只升高了 {o['required']:.3f} 奈特" if o["required"] > 0 else f"没有升高，反而变化 {o['required']:+.3f} 奈特"))
