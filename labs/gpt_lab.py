# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：从零训练一个小 GPT
#
# 这个实验配合文章[《从零训练一个小 GPT》](../articles/gpt-from-scratch.md)阅读。文章把训练一个语言模型拆成了几步：分词、取批次、算损失、按计划调学习率、裁剪梯度、更新参数。这里我们一步步亲手检验：分词器能不能把任何文字原样还原；手写的交叉熵和学习率计划是不是和 PyTorch 的一致；模型能不能把一小批数据背下来；最后读取文章里训练好的模型，看它在没见过的诗上表现如何、换个温度写出什么，以及它是不是真的只往前看。
#
# 页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行，只需要装好 torch、numpy 和 matplotlib：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里。

# %%
# 准备工作：找到实验要导入的代码（gpt_from_scratch.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "gpt_from_scratch.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import math

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from gpt_from_scratch import (
    MIN_COUNT,
    TrainSettings,
    evaluate,
    fixed_windows,
    lm_loss,
    load_poems,
    lr_at,
    poem_starts,
    pretrained_gpt,
    split_poems,
)
from kv_cache import generate
from tiny_transformer import TinyConfig, TinyTransformer, format_score
from tokenizer import N_BYTES, CharTokenizer

# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
# 图用浅色配色画在白色底上：网页切换到深色模式时，白底上的图依然清楚
plt.rcParams.update(figkit.rc_params("light"))
plt.rcParams.update({"figure.facecolor": "white", "savefig.facecolor": "white", "savefig.transparent": False})
# 模型很小，只用一个线程：机器忙的时候不会互相抢，结果也可以逐位复现
torch.set_num_threads(1)
print("PyTorch", torch.__version__)

# %% [markdown]
# ## 1. 分词：字符，加上字节回退
#
# 先读语料、按整首诗分出验证集，再在训练集上建词表：出现至少 2 次的字各占一个编号，其余的字拆成 UTF-8 字节。编号 0 到 255 留给 256 个字节。

# %%
poems = load_poems()
train_text, held_out_text = split_poems(poems)
tok = CharTokenizer.train(train_text, min_count=MIN_COUNT)
print(f"{len(poems)} 首诗：训练集 {len(train_text.splitlines())} 首，验证集 {len(held_out_text.splitlines())} 首")
print(f"词表大小 {tok.vocab_size}：{N_BYTES} 个字节词元 + {len(tok.chars)} 个字符词元")
print("最常见的 12 个字符:", " ".join(repr(c)[1:-1] for c in tok.chars[:12]))

# %% [markdown]
# 词表里有的字一个字一个词元；没有的（在训练集里出现不到 `MIN_COUNT` 次的字，比如不少简体字，还有表情符号、英文字母）拆成字节。不管哪种，解码之后都和原文一模一样。试着把下面的句子换成任何你想得到的文字。

# %%
for text in ["白日依山盡，黃河入海流。", "白日依山尽，黄河入海流。", "GPT 🙂"]:
    ids = tok.encode(text)
    pieces = " ".join(tok.token_text(i) for i in ids)
    print(f"{text!r}：{len(text)} 个字符 → {len(ids)} 个词元，还原一致：{tok.decode(ids) == text}")
    print("   ", pieces)
    fallback = "".join(dict.fromkeys(c for c in text if c not in tok.char_to_id))  # 不在词表里的字符，各记一次
    print("    拆成字节的字符：", " ".join(repr(c) for c in fallback) if fallback else "没有")

# %% [markdown]
# 语料是繁体字，繁体的句子每个字都在词表里。简体字要看它在训练集里出现了几次：出现够 `MIN_COUNT` 次的也有自己的编号，其余的只好拆成 UTF-8 字节（一个汉字几个字节，看上面 `<0x..>` 的个数）。哪些字拆成了字节，上面每句下面都列出来了。模型要学的是「哪几个字节连在一起是一个字」，这比直接认字难，所以词表要尽量覆盖常见的字。

# %% [markdown]
# ## 2. 损失：手算交叉熵，和 PyTorch 对答案
#
# 模型在每个位置输出一行分数（logits），交叉熵是「正确的下一个词元」的负对数概率，再对所有位置取平均。没训练过的模型差不多是在 $V$ 个词元里瞎猜，损失应当接近 $\ln V$。

# %%
torch.manual_seed(0)
untrained = TinyTransformer(TinyConfig(vocab_size=tok.vocab_size, d_model=64, n_heads=4, n_layers=4, max_len=64,
                                       mlp=True, positions="learned"))
train_ids = torch.tensor(tok.encode(train_text))
newline = tok.encode("\n")[0]
x, y = fixed_windows(train_ids, poem_starts(train_ids, newline, 64), 8, 64)
with torch.no_grad():
    logits = untrained(x)
probs = torch.softmax(logits, dim=-1)
by_hand = -probs.gather(-1, y[..., None]).log().mean()  # 先 softmax 再取对数：直白，但分数差得大时概率下溢成 0，取对数得 -inf
print(f"手算        {by_hand.item():.5f}")
print(f"lm_loss     {lm_loss(logits, y).item():.5f}")
print(f"F.cross_entropy {F.cross_entropy(logits.reshape(-1, tok.vocab_size), y.reshape(-1)).item():.5f}")
print(f"ln V = ln {tok.vocab_size} = {math.log(tok.vocab_size):.5f}")

# %% [markdown]
# 先算 softmax 再取对数，在分数很大时会出问题：把 logits 放大 100 倍试试。

# %%
big = 100 * logits
naive = -torch.softmax(big, dim=-1).gather(-1, y[..., None]).log().mean()
print("先 softmax 再取对数:", naive.item())
print("lm_loss（log_softmax）:", lm_loss(big, y).item())
print("F.cross_entropy:", F.cross_entropy(big.reshape(-1, tok.vocab_size), y.reshape(-1)).item())

# %% [markdown]
# ## 3. 学习率：预热，再余弦衰减
#
# `lr_at` 按公式算每一步的学习率。PyTorch 没有现成的「预热 + 余弦」，但可以把两个调度器接起来：`LinearLR` 负责预热，`CosineAnnealingLR` 负责衰减，`SequentialLR` 在第 `warmup` 步换手。两者应当逐步一致。

# %%
s = TrainSettings()
param = torch.nn.Parameter(torch.zeros(1))
opt = torch.optim.SGD([param], lr=s.peak_lr)
sched = torch.optim.lr_scheduler.SequentialLR(opt, [
    torch.optim.lr_scheduler.LinearLR(opt, start_factor=1 / s.warmup, end_factor=1.0, total_iters=s.warmup - 1),
    torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=s.steps - s.warmup, eta_min=s.min_lr),
], milestones=[s.warmup])
ours, theirs = [], []
for step in range(s.steps):
    ours.append(lr_at(step, s.steps, s.peak_lr, s.warmup, s.min_lr))
    theirs.append(opt.param_groups[0]["lr"])
    opt.step()
    sched.step()
gap = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
print(f"{s.steps} 步里两者最大相差 {gap:.1e}")

fig, ax = plt.subplots(figsize=(6, 2.8))
ax.plot(ours, label="lr_at")
ax.plot(theirs, "--", label="PyTorch 调度器")
ax.set_xlabel("训练步数")
ax.set_ylabel("学习率")
ax.legend()
plt.show()

# %% [markdown]
# ## 4. 先让模型背下一小批数据
#
# 训练一个新模型之前，先拿一小批固定的数据反复训练：模型和训练循环都没写错的话，损失应当很快降到接近 0（它把这一批背下来了）。背不下来，说明哪里有错——比如目标没有错开一位、梯度没有清零、学习率不对。这一步只训练一个小模型、反复用同一小批数据，很快就能跑完，比完整训练一遍之后才发现问题省事得多。

# %%
torch.manual_seed(0)
small = TinyTransformer(TinyConfig(vocab_size=tok.vocab_size, d_model=64, n_heads=4, n_layers=2, max_len=32,
                                   mlp=True, positions="learned"))
bx, by = fixed_windows(train_ids, poem_starts(train_ids, newline, 32), 4, 32)  # 4 段、每段 32 个词元
optimizer = torch.optim.AdamW(small.parameters(), lr=3e-3, weight_decay=0.0)
losses = []
for _ in range(150):
    loss = lm_loss(small(bx), by)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
threshold = 0.1
print(f"第 0 步损失 {losses[0]:.3f}（ln V = {math.log(tok.vocab_size):.3f}），第 150 步 {format_score(losses[-1], threshold)}")
print("背下来了（损失低于 0.1）" if losses[-1] < threshold else "没有背下来：检查模型和训练循环")

# %% [markdown]
# ## 5. 读取文章里训练好的模型
#
# 文章的图用的模型就是 `code/gpt_from_scratch.py` 里的 `train_poem_gpt()`：4 层、每层 4 个头、$d_{\text{model}}=64$，在训练集上训练 300 步。构建网站时它只训练一次，存进缓存，下面的 `pretrained_gpt()` 直接读取。下载的 Notebook 没有这份缓存，`pretrained_gpt()` 就现场训练，并打印用了多少时间。种子相同、都用单线程时，在同一台机器、同一个 PyTorch 版本上每次训练得到的参数逐位相同；换一台机器或换一个 PyTorch 版本，浮点运算的细节可能不同，参数和后面的数字可能和网站上的略有出入。

# %%
model, tok, history = pretrained_gpt()
held_ids = torch.tensor(tok.encode(held_out_text))
hx, hy = fixed_windows(held_ids, poem_starts(held_ids, newline, 64), 48, 64)
n_params = sum(p.numel() for p in model.parameters())
print(f"参数量 {n_params:,}")
print(f"验证集（训练时没见过的 {len(held_out_text.splitlines())} 首诗）上的损失：训练前 {history.eval_held_out[0]:.3f}，"
      f"训练后 {evaluate(model, hx, hy):.3f}")
print(f"困惑度 exp(损失)：{math.exp(evaluate(model, hx, hy)):.0f}，相当于每个词元在这么多个候选里犹豫")

# %% [markdown]
# 让它写几首。温度低，用字保守、容易重复；温度高，用字更散，也更容易写出拼不成字的字节（显示成 �）。生成用的是下一篇文章要讲的 `generate`，每次都从换行（一首诗的开头）写起。

# %%
prompt = torch.tensor([tok.encode("\n")])
for temperature in (0.5, 0.8, 1.2):
    gen = torch.Generator().manual_seed(0)
    out = generate(model, prompt, 48, do_sample=True, temperature=temperature, generator=gen)
    lines = tok.decode(out.tokens[0, 1:]).split("\n")
    print(f"温度 {temperature}：", " / ".join(line for line in lines if line))

# %% [markdown]
# ## 6. 它真的只往前看吗
#
# GPT 是因果的：第 $t$ 个位置的输出只取决于第 0 到 $t$ 个词元。把一首诗后半首换掉，前半首每个位置的输出应当一点不变，后半首才变。

# %%
a = torch.tensor([tok.encode("\n白日依山盡，黃河入海流。欲窮千里目，更上一層樓。")])
b = torch.tensor([tok.encode("\n白日依山盡，黃河入海流。春眠不覺曉，處處聞啼鳥。")])
with torch.no_grad():
    la, lb = model(a), model(b)
same = 13  # 换行加前两句：位置 0 到 12
print("前两句（位置 0–12）的输出最大差别:", (la[:, :same] - lb[:, :same]).abs().max().item())
print("后两句（位置 13 起）的输出最大差别:", round((la[:, same:] - lb[:, same:]).abs().max().item(), 3))

# %% [markdown]
# ## 7. 自己动手
#
# - 把第 1 节的 `MIN_COUNT` 改成 1 或 5，看词表大小怎样变，验证集里有多少字要走字节回退。
# - 把第 4 节的学习率改成 `3e-1` 或 `3e-5`，看模型还背不背得下来。
# - 用 `train_gpt`（`code/gpt_from_scratch.py`）换一组 `TrainSettings` 重新训练，例如把 `steps` 加到 600、去掉预热（`warmup=1`）或把 `clip` 设得很大，比较损失曲线。每次训练要等一会儿，用时和你的机器有关。
