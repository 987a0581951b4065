# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：用 GRPO 和验证器的分数训练藏头诗模型
#
# 这个实验配合文章[《强化学习：GRPO 与可验证的奖励》](../articles/grpo.md)阅读。文章从 500 步 SFT 模型出发跑 60 步 GRPO（每步 8 组藏头、每组 8 首），在全部 342 组验证集藏头上每组写 8 首来评估。这里把流程缩小一号，亲手写一遍训练循环：先看组内归一化的优势怎么算、分数全同的一组为什么学不到东西；再用 `rollout`、`token_log_probs`、`group_advantages`、`grpo_loss` 这几块拼出 GRPO，训练 20 步（每步 4 组、每组 8 首）；然后在验证集的前 100 组藏头上比较训练前后；最后算一算 GRPO 和 Dr. GRPO 给长短回答的每个词元分多少梯度。
#
# 步数少、评估的藏头少，数会和文章不同，区间也宽得多。文章的奖励用 `code/verifiers.py` 的 `verify`，它顺带查押韵，要用 `pypinyin`；这个实验只用 torch、numpy 和 matplotlib，所以奖励在这里用同样的规则重写一遍（句首对上几个算几分、每个 1/4，格式对再加 0.25），不查押韵：奖励本来就不看押韵，分数和文章的一样。页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里（没有构建网站时的缓存，它会先训练第一阶段的模型、再做 500 步的微调，要多等几分钟）。

# %%
# 准备工作：找到实验要导入的代码（grpo_train.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "grpo_train.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import copy

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
from acrostic import head_hits, well_formed
from capable_sft import capable_model
from evaluation import held_out_heads, sample_acrostics
from grpo import group_advantages, grpo_loss
from grpo_train import rollout, token_log_probs
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
# ## 1. 组内比较：优势
#
# 同一组藏头写的几首诗，各减去组内的平均分，再除以组内的标准差，就是每首的优势：比兄弟们好的为正，差的为负，一组加起来是 0。一组分数全相同时，优势全是 0：这一组这一步什么也学不到。

# %%
rewards = torch.tensor([[0.25, 1.0, 0.5, 0.25], [0.5, 0.5, 0.5, 0.5], [0.0, 0.0, 0.0, 1.25]])
adv = group_advantages(rewards)
for r, a in zip(rewards.tolist(), adv.tolist(), strict=True):
    print("奖励", [f"{x:.2f}" for x in r], "→ 优势", [f"{x:+.3f}" for x in a], f"（组内之和 {sum(a):+.3f}）")
print("不除标准差（Dr. GRPO）：", [f"{x:+.3f}" for x in group_advantages(rewards, scale=False)[0].tolist()])


# %% [markdown]
# ## 2. 奖励：验证器的分数
#
# 句首对上几个算几分（每个 1/4），格式对再加 0.25，满分 1.25。这里用 `acrostic` 里的两个检查重写，不查押韵。

# %%
def reward(heads, text):
    return head_hits(heads, text) / 4 + 0.25 * well_formed(text)


for text in ("春风吹柳绿，夏日照荷红。秋月明千里，冬雪满长空。", "春风吹柳绿，山日照荷红。秋月明千里，冬雪满长空。",
             "春风吹柳绿，夏日照荷红。"):
    print(f"{reward('春夏秋冬', text):.2f}  {text}")

# %% [markdown]
# ## 3. 训练 20 步 GRPO
#
# 读取文章里 500 步全参数微调（种子 0）的模型，复制一份当策略，原模型冻住当参考模型。每步从训练集的藏头里随机取 4 组，每组按温度 1 写 8 首，打分、算优势，再用 GRPO 的损失走一步（β = 0.02）。每批只走一步，采样时的策略就是当前策略，所以 `old_logps` 就是 `logps.detach()`，截断不起作用。

# %%
start, tok = capable_model(0)  # 构建网站时缓存了就直接读取
train_heads, held_heads, _ = held_out_heads(tok)
held_heads = held_heads[:100]  # 验证集的前 100 组（按语料的顺序，没有挑选）
STEPS, PROMPTS, GROUP, BETA = 20, 4, 8, 0.02
torch.manual_seed(0)
policy, ref = copy.deepcopy(start), start
opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(0)
curve, flat = [], 0
for _ in range(STEPS):
    heads = [train_heads[i] for i in torch.randint(0, len(train_heads), (PROMPTS,), generator=gen).tolist()]
    batch = rollout(policy, tok, heads, GROUP, 1.0, gen)
    r = torch.tensor([reward(heads[i // GROUP], t) for i, t in enumerate(batch.texts)]).view(PROMPTS, GROUP)
    flat += int((r.max(1).values == r.min(1).values).sum())
    policy.train()
    logps = token_log_probs(policy, batch.tokens)
    with torch.no_grad():
        ref_logps = token_log_probs(ref, batch.tokens)
    loss = grpo_loss(logps, logps.detach(), ref_logps, group_advantages(r).flatten(), batch.mask, beta=BETA)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    opt.step()
    policy.eval()
    curve.append(r.mean().item())
fig, ax = plt.subplots(figsize=(6.4, 3.2))
ax.plot(range(1, STEPS + 1), curve, "o-")
ax.set_xlabel("训练步数")
ax.set_ylabel("这一批的平均奖励")
plt.show()
half = STEPS // 2
print(f"平均奖励：前 {half} 步 {sum(curve[:half]) / half:.3f}，后 {half} 步 {sum(curve[half:]) / half:.3f}")
print(f"分数全同、学不到东西的组：{flat} / {STEPS * PROMPTS}")


# %% [markdown]
# ## 4. 训练前后：验证集上的句首和格式
#
# 验证集的前 100 组藏头（训练时没有拿来采样），每组按温度 1 写 4 首。句首命中逐句数，格式逐首数，都配上 95% Wilson 区间。

# %%
def rates(model):
    poems = sample_acrostics(model, tok, held_heads, 4, seed=0)
    lines = sum(head_hits(h, p) for h, ps in zip(held_heads, poems, strict=True) for p in ps)
    form = sum(well_formed(p) for ps in poems for p in ps)
    n = 4 * len(held_heads)
    return {"句首命中": (lines, 4 * n), "格式正确": (form, n)}


found = {"SFT": rates(start), "GRPO": rates(policy)}
for key in ("句首命中", "格式正确"):
    spans = []
    for name in ("SFT", "GRPO"):
        k, n = found[name][key]
        lo, hi = wilson_interval(k, n)
        spans.append((lo, hi))
        print(f"{key}（{name}）：{k / n:.3f}（95% 区间 {lo:.3f} – {hi:.3f}）")
    (lo0, hi0), (lo1, hi1) = spans
    verdict = "区间不重叠，上升了" if lo1 > hi0 else "区间不重叠，下降了" if hi1 < lo0 else "区间重叠，这么少的步数和样本还说不准"
    print(f"结论（{key}）：{verdict}")

# %% [markdown]
# ## 5. 长回答和短回答：每个词元分到多少梯度
#
# 两个回答，一个 5 个词元、一个 20 个词元，优势都是 +1。GRPO 原文先在每个回答里对词元求平均，短回答的每个词元分到的梯度更大；Dr. GRPO 把所有词元加起来除以同一个数，每个词元一样大。

# %%
mask = torch.arange(20)[None, :] < torch.tensor([5, 20])[:, None]
for per_sequence, name in ((True, "GRPO（逐条平均）"), (False, "Dr. GRPO")):
    logps = torch.zeros(2, 20, requires_grad=True)
    grpo_loss(logps, logps.detach(), logps.detach(), torch.ones(2), mask, beta=0.0,
              per_sequence=per_sequence).backward()
    short, long = logps.grad[0, 0].abs().item(), logps.grad[1, 0].abs().item()
    print(f"{name}：短回答每个词元 {short:.4f}，长回答每个词元 {long:.4f}，相差 {short / long:.1f} 倍")
