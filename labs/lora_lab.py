# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：SFT 与 LoRA
#
# 这个实验配合文章[《微调：SFT 与 LoRA——教模型写藏头诗》](../articles/lora-finetune.md)阅读。文章从唐诗语料里造出藏头诗的指令数据，只在回答上算损失，再用全参数微调和 LoRA 教第一阶段的唐诗 GPT 按要求藏头。这里亲手检验四件事：LoRA 刚加上时模型一点不变；低秩的旁路能学会多大秩的改动；合并之后输出不变；只在回答上算的损失是怎样一个掩码。最后读取文章里微调好的模型，让它们给你选的四个字写藏头诗，再看它们还会不会像微调前那样，只给一个换行就写出一首诗。
#
# 页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行，只需要装好 torch、numpy 和 matplotlib：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里（没有构建网站时的缓存，它会先训练基座模型、再做文章里的微调，要多等一会儿）。

# %%
# 准备工作：找到实验要导入的代码（lora.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "lora.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from acrostic import IGNORE, acrostic_ok, build_sft_data, sft_loss, write_acrostics
from lora import LoRALinear, lora_parameters, merge_lora, trainable_parameters
from lora_train import METHOD_LABELS, finetuned_model, finetuning, poem_lists, summary
from torch import nn

# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
# 图用浅色配色画在白色底上：网页切换到深色模式时，白底上的图依然清楚
plt.rcParams.update(figkit.rc_params("light"))
plt.rcParams.update({"figure.facecolor": "white", "savefig.facecolor": "white", "savefig.transparent": False})
# 模型很小，只用一个线程：机器忙的时候不会互相抢，结果也更容易复现
torch.set_num_threads(1)
torch.manual_seed(0)
print("PyTorch", torch.__version__)

# %% [markdown]
# ## 1. 刚加上的 LoRA 什么也不改
#
# 取一个 64 → 192 的线性层（和唐诗 GPT 每层的 qkv 一样大），套上秩为 4 的 `LoRALinear`。$B$ 初始化为 0，所以旁路的输出恰好是 0：同一个输入，套上前后的输出应当逐位相同。再数一数要训练的参数。

# %%
base = nn.Linear(64, 192)
layer = LoRALinear(base, r=4, alpha=8)
x = torch.randn(8, 64)
with torch.no_grad():
    same = torch.equal(layer(x), base(x))
print(f"套上 LoRA 前后输出逐位相同：{same}")
print(f"原来的层有 {base.weight.numel() + base.bias.numel():,} 个参数，现在要训练的只有 {trainable_parameters(layer):,} 个"
      f"（r × (d_in + d_out) = 4 × (64 + 192) = {lora_parameters(64, 192, 4):,}）")
print("要训练的参数：", [name for name, p in layer.named_parameters() if p.requires_grad])

# %% [markdown]
# ## 2. 秩为 r 的旁路能学会什么
#
# LoRA 学到的改动 $\Delta W = \frac{\alpha}{r}BA$ 的秩至多是 $r$。造一个目标：在一个冻住的 $W$ 上加一个秩恰好为 2 的改动 $\Delta W^\ast$，让秩为 1、2、4 的 LoRA 去拟合「目标层」在随机输入上的输出（均方误差，Adam 训练 300 步）。秩不够时，误差应当降不到 0；秩够了，就能降到几乎为 0。

# %%
torch.manual_seed(1)
frozen = nn.Linear(32, 32, bias=False)
target_delta = torch.randn(32, 2) @ torch.randn(2, 32) / 4  # 秩为 2 的改动
inputs = torch.randn(256, 32)
with torch.no_grad():
    targets = frozen(inputs) + inputs @ target_delta.T
print(f"目标改动的秩：{torch.linalg.matrix_rank(target_delta).item()}")

curves = {}
for r in (1, 2, 4):
    torch.manual_seed(0)
    fit = LoRALinear(nn.Linear(32, 32, bias=False), r=r, alpha=r)
    fit.base.weight.data.copy_(frozen.weight)  # 同一个冻住的 W
    opt = torch.optim.Adam([fit.lora_A, fit.lora_B], lr=1e-2)
    curves[r] = []
    for _ in range(300):
        loss = F.mse_loss(fit(inputs), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        curves[r].append(loss.item())
    start = F.mse_loss(frozen(inputs), targets).item()
    verdict = "几乎降到 0" if curves[r][-1] < 1e-3 * start else "降不到 0"
    print(f"r = {r}：均方误差从 {start:.4f} 降到 {curves[r][-1]:.2e}（门槛：起点的千分之一 {1e-3 * start:.1e}），{verdict}")

fig, ax = figkit.new_figure(size="wide")
for r, values in curves.items():
    ax.plot(values, label=f"r = {r}")
ax.set_yscale("log")
ax.set_xlabel("训练步数")
ax.set_ylabel("均方误差（对数坐标）")
ax.set_title("拟合一个随机构造的秩为 2 的改动（随机输入）")
ax.legend()
plt.show()

# %% [markdown]
# 秩为 1 的旁路只能学到目标改动里「最大的那一个方向」，剩下的误差就是它学不到的部分；秩为 2 和 4 都够用。微调一个大模型时，LoRA 赌的是：新任务需要的改动，也落在一个很低的秩里。

# %% [markdown]
# ## 3. 合并之后输出不变
#
# 新建一个和第 1 节一样的层（64 → 192，秩 4，$\alpha=8$），把它的 $B$ 换成一份随机数（假装训练过），再合并进 $W$：`merge_lora` 把 `LoRALinear` 换回普通的 `nn.Linear`，权重是 $W+\frac{\alpha}{r}BA$。用 float64 算，合并前后的差只剩舍入误差。

# %%
torch.manual_seed(2)
layer = LoRALinear(nn.Linear(64, 192).double(), r=4, alpha=8)
with torch.no_grad():
    layer.lora_B.normal_()
    x = torch.randn(8, 64, dtype=torch.float64)
    before = layer(x)
    merged = merge_lora(nn.Sequential(layer))[0]
    diff = (merged(x) - before).abs().max().item()
print(f"合并后是 {type(merged).__name__}，和合并前最大相差 {diff:.1e}，{'一致' if diff < 1e-10 else '不一致'}（门槛 1e-10）")
print(f"改动 (alpha / r)·BA 的秩：{torch.linalg.matrix_rank(layer.delta_weight()).item()}（至多是 r = 4）")

# %% [markdown]
# ## 4. 只在回答上算损失
#
# 拿验证集的第一首诗做一条样本，逐个词元列出：输入是什么，这个位置要预测的下一个词元是什么，算不算损失。提示「藏头：XXXX」加换行里，「头」和「：」不在词表里，各拆成 3 个字节词元（写成 `<0x..>`）。

# %%
train_poems, held_poems = poem_lists()
result = finetuning()  # 文章里的微调结果：构建网站时缓存了就直接读取
model, tok = finetuned_model(result, "lora-4")
sample = build_sft_data(held_poems[:1], tok)
ids, labels = sample.inputs[0].tolist(), sample.labels[0].tolist()
print(f"提示有 {sample.prompt_lengths[0]} 个词元；不算损失的位置 {labels.count(IGNORE)} 个，算损失的 "
      f"{sum(label != IGNORE for label in labels)} 个")
for t in range(sample.prompt_lengths[0] + 3):
    target = "（不算）" if labels[t] == IGNORE else repr(tok.token_text(labels[t]))
    print(f"  位置 {t:>2}  输入 {tok.token_text(ids[t])!r:<8}  要预测 {target}")
print("  ……")

with torch.no_grad():
    logits = model(sample.inputs)
    ours = sft_loss(logits, sample.labels).item()
    reference = F.cross_entropy(logits[0], sample.labels[0], ignore_index=IGNORE).item()
print(f"sft_loss = {ours:.6f}，F.cross_entropy(ignore_index=-100) = {reference:.6f}，"
      f"{'一致' if abs(ours - reference) < 1e-6 else '不一致'}（门槛 1e-6）")

# %% [markdown]
# ## 5. 文章里的模型：给你选的四个字写藏头诗
#
# 先看文章里的结果（构建网站时训练、在验证集的藏头上评估），再让基座模型、LoRA r=4 和全参数微调的模型写几首。藏头的字要在词表里（语料是繁体字）；想换就改下面的 `my_heads`。最后一列是文章里的遗忘检查：不给藏头，只给一个换行，采样写的诗里格式正确的比例。

# %%
for name, row in summary(result).items():
    print(f"{METHOD_LABELS[name]:<8} 可训练参数 {row['trainable']:>7,}  验证集 SFT 损失 {row['held_out']:.3f}  "
          f"成功率 {row['success']:.1%}  只给换行时格式正确 {row['free_well_formed']:.0%}")

my_heads = ["春夏秋冬", "山水風月", "明月千里"]
for name in ("base", "lora-4", "full"):
    m, _ = finetuned_model(result, name)
    poems, _ = write_acrostics(m, tok, my_heads)
    print(f"\n{METHOD_LABELS[name]}：")
    for heads, poem in zip(my_heads, poems, strict=True):
        print(f"  藏头「{heads}」 {poem}  {'✓ 藏住了' if acrostic_ok(heads, poem) else '✗ 没藏住'}")
    print(f"  只给换行，贪心解码写的：{result['runs'][name]['free_greedy']}")

# %% [markdown]
# ## 6. 自己试试
#
# - 把第 2 节的目标改动换成秩为 4，再看 r = 1、2、4 的误差。
# - 只在 qkv 上加 LoRA，数一数可训练参数：先 `from lora import add_lora`，取一份还没加过 LoRA 的基座模型 `m, _ = finetuned_model(result, "base")`（第 4 节的 `model` 已经加过 LoRA，同一个模型不能再加一次），再 `add_lora(m, ("qkv",), r=4, alpha=8)`，用 `trainable_parameters(m)` 数。再加上前馈网络的 `up`、`down` 呢？（每换一种加法，都重新取一份基座模型。）
# - 文章里的模型一首也没藏住。《评测》一文把全参数微调加到 500 步、每步 16 条，就教会了它；LoRA 要训练多久才学得会？用 `lora_train` 里的 `finetune` 和 `evaluate_acrostics` 自己微调一次 LoRA r=4（数据用 `build_sft_data(poem_lists()[0], tok)` 和 `build_sft_data(held_poems, tok)`），把 `SFTSettings` 的 `steps` 加到几百步，看句首命中率（`line_hits`）会不会涨；再和同样步数的全参数微调（`rank=None`）比一比。顺便看看遗忘检查的 `free_well_formed`：训练得越久，它从换行写诗的本领丢得越多吗？
# - 在第 5 节换几组藏头，挑一个基座模型几乎没见过的字（比如只在语料里出现两三次的字）做句首，写出的诗有什么不同？
