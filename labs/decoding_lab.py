# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：解码与 KV 缓存
#
# 这个实验配合文章[《解码：贪心、温度、top-k、top-p 与 KV 缓存》](../articles/decoding.md)阅读。文章讲了怎样从模型给出的分数里挑出下一个词元，以及 KV 缓存为什么省计算。这里我们亲手检验：先按公式算温度、top-k、top-p，和 `code/sampling.py` 对答案；再抽几万次签，看频率是不是对得上概率；然后用一个只看上一个字的小模型，看贪心解码怎样绕圈、重复惩罚怎样把它拉出来；最后在一个随机初始化的小 Transformer 上比较带缓存和不带缓存的生成，并用 PyTorch 数出两者各做了多少次乘加。
#
# 页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行，只需要装好 torch、numpy 和 matplotlib：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里。

# %%
# 准备工作：找到实验要导入的代码（sampling.py、kv_cache.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "kv_cache.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import math

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
from kv_cache import KVCache, generate, generation_macs, kv_cache_bytes
from sampling import apply_repetition_penalty, apply_temperature, greedy, sample, top_k_filter, top_p_filter
from tiny_transformer import TinyConfig, TinyTransformer
from torch.utils.flop_counter import FlopCounterMode

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
# ## 1. 亲手算温度
#
# 还是文章里那组编出来的 logits：提示「今天天气真」之后的 8 个候选词（不来自任何模型）。温度 $T$ 下的概率是 $\exp(z_i/T)/\sum_j\exp(z_j/T)$。先按公式手算，再和 `apply_temperature` 加 softmax 的结果比较。

# %%
words = ["好", "不错", "热", "冷", "晴朗", "闷", "糟", "奇怪"]
z = torch.tensor([3.0, 2.2, 1.8, 1.2, 0.8, 0.3, -0.5, -1.5], dtype=torch.float64)

print(f"{'温度':>6}  " + "  ".join(f"{w:>4}" for w in words) + "   与代码一致")
for T in (0.25, 0.5, 1.0, 2.0, 4.0):
    by_hand = torch.exp(z / T) / torch.exp(z / T).sum()
    ours = torch.softmax(apply_temperature(z, T), dim=-1)
    print(f"{T:>6}  " + "  ".join(f"{p:6.3f}" for p in by_hand.tolist())
          + f"   {torch.allclose(by_hand, ours)}")

# %% [markdown]
# 每一行的大小顺序都一样，变的只是差距：温度越低，「好」占得越多；温度越高，各个词越接近 1/8。

# %% [markdown]
# ## 2. 亲手做 top-k 和 top-p
#
# top-k：留下分数最高的 $k$ 个。top-p：按概率从高到低累加，留下「排在它前面的概率之和还不到 $p$」的那些词元。手算的办法是把概率排好序，逐个累加；再和 `top_k_filter`、`top_p_filter` 留下的集合比较（被去掉的词元，logit 变成 $-\infty$）。

# %%
def kept(filtered: torch.Tensor) -> list[str]:
    """过滤之后还剩哪些词（logit 不是 -inf 的）。"""
    return [w for w, keep in zip(words, torch.isfinite(filtered).tolist(), strict=True) if keep]


probs = torch.softmax(z, dim=-1)
order = probs.argsort(descending=True)
running = 0.0
print("排名  词      概率   排在它前面的概率之和")
for rank, i in enumerate(order.tolist(), 1):
    print(f"{rank:>4}  {words[i]:<4} {probs[i]:7.3f}   {running:7.3f}")
    running += probs[i].item()

for p in (0.5, 0.8, 0.9, 0.99):
    by_hand = [words[i] for i in order.tolist() if probs[probs > probs[i]].sum() < p]
    ours = kept(top_p_filter(z, p))
    print(f"top-p，p = {p}：手算留下 {by_hand}，代码留下 {ours}，一致: {by_hand == ours}")
print(f"top-k，k = 3：代码留下 {kept(top_k_filter(z, 3))}")

# 并列的情况：第 2、3 名分数相同，k = 2 时两个都留下
tie = torch.tensor([2.0, 1.0, 1.0, 0.0])
print("并列时 top-k（k = 2）留下的位置:", torch.isfinite(top_k_filter(tie, 2)).nonzero().flatten().tolist())

# %% [markdown]
# ## 3. 抽签的频率对得上概率吗
#
# 从「温度 0.8、top-p 0.9」处理后的分布里抽 N 次。每个词被抽中的次数服从二项分布，均值 $Np$、标准差 $\sqrt{Np(1-p)}$。下面算出每个词的次数偏离均值几个标准差；抽签没有写错的话，偏离都应该在 4 个标准差以内，被 top-p 去掉的词一次也不会出现。

# %%
N = 50_000
gen = torch.Generator().manual_seed(0)
target = torch.softmax(top_p_filter(apply_temperature(z, 0.8), 0.9), dim=-1)
draws = sample(z.expand(N, -1), gen, temperature=0.8, top_p=0.9)
counts = torch.bincount(draws, minlength=len(words))

worst, removed_drawn = 0.0, 0
print("词      目标概率   抽中次数   期望次数   偏离（标准差）")
for w, p, c in zip(words, target.tolist(), counts.tolist(), strict=True):
    if p == 0:
        removed_drawn += c
        print(f"{w:<6} {p:8.4f}  {c:>9}          0   （被 top-p 去掉）")
        continue
    sd = math.sqrt(N * p * (1 - p))
    dev = (c - N * p) / sd
    worst = max(worst, abs(dev))
    print(f"{w:<6} {p:8.4f}  {c:>9}  {N * p:9.1f}   {dev:+.2f}")

ok = worst < 4 and removed_drawn == 0
print(f"\n最大偏离 {worst:.2f} 个标准差，被去掉的词抽中 {removed_drawn} 次："
      + ("频率与概率一致（门槛 4 个标准差）" if ok else "频率与概率对不上，抽签可能写错了"))

again = sample(z.expand(10, -1), torch.Generator().manual_seed(1), temperature=0.8, top_p=0.9)
same = sample(z.expand(10, -1), torch.Generator().manual_seed(1), temperature=0.8, top_p=0.9)
print("同一个种子抽两遍，结果相同:", torch.equal(again, same))

# %% [markdown]
# ## 4. 贪心为什么会绕圈
#
# 用下面这段话（为这个实验写的）数出「字 → 下一个字」的次数，得到一个只看上一个字的「模型」：它给每个字的 logits 就是 $\log$（下一个字出现的频率），没出现过的是 $-\infty$。为了让每个字都有下一个字，把这段话首尾相接。
#
# 这个模型的下一个字只取决于当前的字。贪心解码时，只要某个字第二次出现，后面就只能把上一次的路再走一遍。

# %%
text = (
    "模型每一步只给出一串分数，我们要从分数里选出下一个字。"
    "选得太保守，文字就会原地打转，一句话说了又说；选得太随意，文字就会离题，前言不搭后语。"
    "温度、top-k 和 top-p 都是在保守和随意之间找平衡。"
    "生成的每一步都要看前面所有的字，所以把算过的键和值存起来，下一步就不用重算。"
)
chars = sorted(set(text))
index = {c: i for i, c in enumerate(chars)}
V = len(chars)
bigram = torch.zeros(V, V, dtype=torch.float64)
for a, b in zip(text, text[1:] + text[0], strict=True):
    bigram[index[a], index[b]] += 1
logp = (bigram / bigram.sum(dim=1, keepdim=True)).log()  # 每行是一个分布的对数概率，全都 <= 0
print(f"{V} 个不同的字，{len(text)} 个字的文本")


def run(start: str, steps: int, penalty: float = 1.0, **sampling) -> str:
    """从 start 这个字开始，每步取上一个字那一行的 logits，选出下一个字。"""
    out = [index[start]]
    for _ in range(steps):
        logits = logp[out[-1]][None]  # (1, V)
        if penalty != 1.0:
            logits = apply_repetition_penalty(logits, torch.tensor([out]), penalty)
        nxt = sample(logits, **sampling) if sampling else greedy(logits)
        out.append(int(nxt))
    return "".join(chars[i] for i in out)


def loop_period(s: str, tail: int = 30) -> int | None:
    """最后 tail 个字是不是在循环：返回最短的周期，不循环则为 None。"""
    end = s[-tail:]
    for p in range(1, tail // 2 + 1):
        if all(end[i] == end[i + p] for i in range(len(end) - p)):
            return p
    return None


greedy_text = run("模", 80)
period = loop_period(greedy_text)
print("贪心：", greedy_text)
print("  " + (f"最后 30 个字在以 {period} 个字为周期循环" if period else "最后 30 个字没有循环"))
for penalty in (1.5, 3.0):
    penalized = run("模", 80, penalty=penalty)
    p = loop_period(penalized)
    print(f"重复惩罚 {penalty}：", penalized)
    print(f"  用到 {len(set(penalized))} 个不同的字（贪心只用到 {len(set(greedy_text))} 个），"
          + (f"最后 30 个字以 {p} 个字为周期循环" if p else "最后 30 个字没有循环"))
sampled = run("模", 80, generator=torch.Generator().manual_seed(0), top_p=0.9)
p = loop_period(sampled)
print("采样（温度 1，top-p 0.9）：", sampled)
print("  " + (f"最后 30 个字以 {p} 个字为周期循环" if p else "最后 30 个字没有循环"))

# %% [markdown]
# 怎样读上面的结果：
#
# - 这个模型的下一个字只由当前的字决定，所以贪心只要遇到一个出现过的字，就会把上次的路原样再走一遍，再也出不来。
# - 重复惩罚压低出现过的字。可是圈里的字全都出现过、受到同样的惩罚，惩罚不够大时，它们之间的先后可能不变，只是换到一个更大的圈里；惩罚大到能让没出现过的字胜出，才跳得出去。上面每种惩罚下有没有循环，看它下面那一行。
# - 这里的 logits 是对数概率，有限的都不大于 0：负的那些，惩罚是乘以 $\theta$；一个字后面只跟过一种字时（这段话里这样的字不少），那一格是 $\log 1 = 0$，乘以 $\theta$ 还是 0，惩罚对它不起作用。把它们整体加上 10，softmax 之后的分布一模一样，可有限的 logits 全变成了正数，惩罚变成除以 $\theta$，效果就不同了（文章「容易写错的地方」第 7 条，动手试试第 2 题）。
# - 采样靠随机性打破循环，代价是文字更容易前言不搭后语。

# %% [markdown]
# ## 5. KV 缓存：结果相同，计算少得多
#
# 换成真正的 Transformer：`code/tiny_transformer.py` 的 `TinyTransformer`，2 层、4 个头、每层带一个 MLP、可学习的位置嵌入，随机初始化，不训练。这里只比较两种算法，不需要它写出有意义的东西。
#
# 同一段提示，分别用 `use_cache=True` 和 `use_cache=False` 生成 40 个词元（贪心一次，采样一次，采样用同一个种子），比较生成的词元和每一步的 logits。

# %%
torch.manual_seed(0)
cfg = TinyConfig(mlp=True, positions="learned")
model = TinyTransformer(cfg)
prompt = torch.randint(0, cfg.vocab_size, (2, 8), generator=torch.Generator().manual_seed(3))
n_new = 40
for do_sample in (False, True):
    runs = {use_cache: generate(model, prompt, n_new, use_cache=use_cache, do_sample=do_sample, top_p=0.9,
                                generator=torch.Generator().manual_seed(7)) for use_cache in (True, False)}
    same_tokens = torch.equal(runs[True].tokens, runs[False].tokens)
    diff = (runs[True].logits - runs[False].logits).abs().max().item()
    name = "采样" if do_sample else "贪心"
    print(f"{name}：词元相同 {same_tokens}，logits 最大差别 {diff:.1e}，"
          + ("在容差 1e-5 以内" if diff < 1e-5 else "超出了容差 1e-5"))
print("第 0 条序列（提示 + 生成）:", runs[True].tokens[0].tolist())

# %% [markdown]
# 再数一数计算量。PyTorch 的 `FlopCounterMode` 在运行时记下每一次矩阵乘法的浮点运算数（1 次乘加 = 2 次运算）。把它和按形状推出来的公式 `generation_macs` 对照，再看有缓存和没有缓存各做了多少。

# %%
def counted_macs(use_cache: bool, n: int) -> int:
    with FlopCounterMode(display=False) as counter:
        generate(model, prompt[:1], n, use_cache=use_cache)
    return counter.get_total_flops() // 2


print(f"{'生成的词元数':>8} {'无缓存（实数）':>14} {'公式':>12} {'有缓存（实数）':>14} {'公式':>12}  倍数")
for n in (8, 24, 40):
    full, cached = counted_macs(False, n), counted_macs(True, n)
    formula_full = sum(generation_macs(cfg, prompt.size(1), n, use_cache=False))
    formula_cached = sum(generation_macs(cfg, prompt.size(1), n, use_cache=True))
    print(f"{n:>12} {full:>14,} {formula_full:>12,} {cached:>14,} {formula_cached:>12,}  {full / cached:5.1f}")
    assert (full, cached) == (formula_full, formula_cached), "实数与公式不符"
print("每一行的实数都和公式相同")

# %% [markdown]
# 生成得越长，差距越大：没有缓存时，每一步都要把整段序列（提示加上已经生成的词元）从头重算一遍：第 $t$ 步要算「提示长度 $+\,t-1$」个位置，每一步的代价随序列变长而增长；有缓存时，第 1 步把整段提示预填充一遍，之后每一步只算一个新词元。把每一步的乘加次数画出来（还是这个小模型，提示 8 个词元）：

# %%
steps_full = generation_macs(cfg, prompt.size(1), 56, use_cache=False)
steps_cached = generation_macs(cfg, prompt.size(1), 56, use_cache=True)
fig, ax = figkit.new_figure()
ax.plot(range(1, 57), steps_full, "o-", markersize=3, label="没有缓存")
ax.plot(range(1, 57), steps_cached, "s-", markersize=3, label="有缓存（第 1 步是整段提示的预填充）")
ax.set_yscale("log")
ax.set_xlabel("第几步")
ax.set_ylabel("这一步的乘加次数")
ax.set_title("随机初始化的小 TinyTransformer，每一步的计算量（按形状算出）")
ax.grid(True)
ax.legend()
plt.show()
ratio = steps_full[-1] / steps_cached[-1]
print(f"最后一步（序列已有 {prompt.size(1) + 55} 个词元）：没有缓存是有缓存的 {ratio:.0f} 倍")

# %% [markdown]
# ## 6. 缓存占多少内存
#
# 缓存的大小是 $2\times B\times L\times H\times d_{\text{head}}\times T\times$ 每个数的字节数，$B$ 是一批里的序列数（下面的小模型取 2 条）。`KVCache` 按 `max_len` 一次分配好，所以它实际占的内存，应当等于公式在 $T$ = `max_len` 时的值。
#
# 再按两个真实模型的形状算一条序列的缓存（float16，每个数 2 字节；文章里也算过这两个）：GPT-2 small 的层数、头数、每头维数和上下文长度取自 OpenAI 公开的 GPT-2 模型配置（`hparams.json`；Radford 等，2019），Llama 2 7B 的取自 Meta 发布的 `config.json`（Touvron 等，2023）。

# %%
cache = KVCache.for_model(model, batch_size=2)
formula = kv_cache_bytes(cfg.n_layers, cfg.n_heads, cfg.d_model // cfg.n_heads, cfg.max_len, batch_size=2,
                         bytes_per_value=4)  # float32：每个数 4 字节
print(f"这个小模型、2 条序列、max_len = {cfg.max_len}：缓存实际 {cache.nbytes:,} 字节，公式 {formula:,} 字节，"
      f"相同: {cache.nbytes == formula}")

# 真实模型，各一条序列：(层数, 头数, 每头维数, 上下文长度)，来源见上文
for name, (layers, heads, d_head, T) in {"GPT-2 small": (12, 12, 64, 1024), "Llama 2 7B": (32, 32, 128, 4096)}.items():
    per_token = kv_cache_bytes(layers, heads, d_head, 1)
    whole = kv_cache_bytes(layers, heads, d_head, T)
    print(f"{name}（float16）：每个词元 {per_token / 2**10:.0f} KiB，"
          f"一条 {T} 个词元的序列 {whole / 2**20:,.0f} MiB（{whole / 2**30:.3g} GiB）")

# %% [markdown]
# ## 7. 动手试试
#
# 改完直接重新运行对应的单元：
#
# 1. 第 3 节里把 N 改成 500：最大偏离还在 4 个标准差以内吗？多试几个种子。
# 2. 第 4 节里把 `logp` 换成 `logp + 10`：每个字的下一个字的分布完全不变（softmax 不在乎整体加一个常数），贪心的结果也不变。重复惩罚 1.5 和 3.0 的结果变了吗？为什么？
# 3. 第 4 节里把贪心换成温度 0.3 的采样（`run("模", 80, generator=..., temperature=0.3)`）：还会绕圈吗？
# 4. 在 `code/kv_cache.py` 的 `forward_with_cache` 里把 `positions` 改成从 0 开始（`torch.arange(T_new)`），重新运行第 5 节：词元和 logits 还对得上吗？
#
# 回到文章：[《解码：贪心、温度、top-k、top-p 与 KV 缓存》](../articles/decoding.md)
