# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：字节级 BPE
#
# 这个实验配合文章[《分词：从字到 BPE》](../articles/bpe-tokenizer.md)阅读。我们在唐人五言绝句的训练集上训练自己写的字节级 BPE：一步步看最早的几次合并在做什么，检查任何文字都能原样还原，量一量词表多大时一个字才差不多是一个词元，最后用两个不用神经网络的计数模型体会：不同分词器的模型，为什么只能按每个字符比较。
#
# 页面上的数字和图都是构建网站时实际运行得到的，结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行，只需要装好 torch、numpy 和 matplotlib：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里。

# %%
# 准备工作：找到实验要导入的代码（bpe.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "bpe.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import math
from collections import Counter
from itertools import pairwise

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
from bpe import BPE, bits_per_char, pretokenize, tokens_per_char_prefixes, train_bpe
from gpt_from_scratch import MIN_COUNT, load_poems, split_poems
from tokenizer import CharTokenizer

# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
# 图用浅色配色画在白色底上：网页切换到深色模式时，白底上的图依然清楚
plt.rcParams.update(figkit.rc_params("light"))
plt.rcParams.update({"figure.facecolor": "white", "savefig.facecolor": "white", "savefig.transparent": False})

# %% [markdown]
# ## 1. 训练一次，训练到底
#
# 读语料、按整首诗分出验证集（和第一阶段相同：每 10 首留 1 首），在训练集上训练 BPE，一直训练到最常见的一对也不到 2 次。BPE 是贪心的，前 k 次合并就是词表 256 + k 的分词器，所以训练一次就够了。

# %%
poems = load_poems()
train_text, held_out_text = split_poems(poems)
full = train_bpe(train_text, vocab_size=10**6)  # 上限定得够大：直到没有哪一对出现两次
print(f"训练集 {len(train_text):,} 个字符；一共 {len(full.merges)} 次合并，词表 {full.vocab_size}")


def first(size: int) -> BPE:
    """词表大小为 size 的分词器：前 size - 256 次合并。"""
    return BPE(full.merges[: size - 256])


# %% [markdown]
# ## 2. 最早的几次合并
#
# 先自己数一遍：训练文本按预分词切段、每段拆成字节之后，哪几对相邻的字节最多？

# %%
pair_counts = Counter(pair for piece in pretokenize(train_text) for pair in pairwise(piece.encode("utf-8")))
top = pair_counts.most_common(6)
for (a, b), n in top:
    print(f"({a:02X}, {b:02X})  {n:,} 次")
tied = [pair for pair, n in pair_counts.items() if n == top[0][1]]
print(f"并列第一的有 {len(tied)} 对；每首诗有两个「，」和两个「。」，训练集 {train_text.count(chr(10))} 首诗")

# %% [markdown]
# 并列时选编号小的一对。下面是最早的 12 次合并：前四次拼出了「。」和「，」，之后是汉字的前两个字节（同一段码位的汉字共用开头），然后才合出第一个完整的汉字。再往后，半截的字、整个的字和两字搭配交替着合并，并没有先后分明的阶段：下面的程序也数了数，第一个两字词元出现以后，还合出了多少个单字。

# %%
for k, (a, b) in enumerate(full.merges[:12]):
    print(f"第 {k + 1:>2} 次：{full.token_text(a)} + {full.token_text(b)} → {full.token_text(full.ranks[a, b][1])}")


def chars_in(token: bytes) -> int:
    """一个词元是几个完整的字；不成字（半截的字节）记 0。"""
    try:
        return len(token.decode("utf-8"))
    except UnicodeDecodeError:
        return 0


made = [full.tokens[full.ranks[pair][1]] for pair in full.merges]  # 每次合并造出的词元
first_han = next(k for k, t in enumerate(made, 1) if chars_in(t) == 1 and t.decode() not in "，。")
first_two = next(k for k, t in enumerate(made, 1) if chars_in(t) == 2)
singles_after = sum(chars_in(t) == 1 for t in made[first_two:])
print(f"第一个完整的汉字「{made[first_han - 1].decode()}」在第 {first_han} 次合并，"
      f"第一个两字词元「{made[first_two - 1].decode()}」在第 {first_two} 次；"
      f"在那之后又合出了 {singles_after} 个单字")

# %% [markdown]
# ## 3. 任何文字都能原样还原
#
# 词表的前 256 个编号是 256 个字节，所以简体字、英文、表情符号、生僻字都能编码；解码时把字节接起来按 UTF-8 还原。试着把下面的句子换成你想得到的任何文字。

# %%
bpe = first(3009)
for text in ["玉階生白露，夜久侵羅襪。", "玉阶生白露，夜久侵罗袜。", "BPE 🙂 café 𠀀\n"]:
    ids = bpe.encode(text)
    print(f"{text!r}：{len(text)} 个字符 → {len(ids)} 个词元，还原一致：{bpe.decode(ids) == text}")
    print("   ", " | ".join(bpe.token_text(i) for i in ids))

# %% [markdown]
# 反过来不一定成立：一个字的前两个字节本身可能就是一个词元，单独解码只能显示成替换字符 �。

# %%
shan = "山".encode()  # E5 B1 B1
half = next(i for i in range(256, bpe.vocab_size) if bpe.tokens[i] == shan[:2])
print(f"「山」的 UTF-8 是 {shan.hex(' ').upper()}；词元 {half} 是 {bpe.token_text(half)}，单独解码得到 {bpe.decode([half])!r}")

# %% [markdown]
# ## 4. 词表多大才够
#
# 在验证集（训练时没见过的 370 首诗）和训练集上，量不同词表大小下每个字符编成几个词元，再和第一阶段的字符级分词器比一比。

# %%
sizes = [256, 300, 500, 1000, 2000, 3009, 5000, full.vocab_size]
# tokens_per_char_prefixes 一次算出「只用前 n 次合并」时的结果，和逐个 tokens_per_char(text, first(v)) 相同
held = tokens_per_char_prefixes(held_out_text, full, [v - 256 for v in sizes])
train = tokens_per_char_prefixes(train_text, full, [v - 256 for v in sizes])
char_tok = CharTokenizer.train(train_text, min_count=MIN_COUNT)
char_held = len(char_tok.encode(held_out_text)) / len(held_out_text)
for v, h, t in zip(sizes, held, train, strict=True):
    print(f"词表 {v:>5}：验证集每个字符 {h:.3f} 个词元，训练集 {t:.3f}")
print(f"字符级分词器（词表 {char_tok.vocab_size}）：验证集每个字符 {char_held:.3f} 个词元")

fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(sizes, held, "o-", label="验证集")
ax.plot(sizes, train, "s--", label="训练集")
ax.plot([char_tok.vocab_size], [char_held], "x", markersize=9, mew=2, label="字符级分词器")
ax.set_xscale("log")
ax.set_xlabel("词表大小")
ax.set_ylabel("每个字符的词元数")
ax.grid(True)
ax.legend()
plt.show()

gap = held[-1] - train[-1]
bpe_3009 = held[sizes.index(3009)]
print(f"训练到底时，验证集比训练集每个字符多 {gap:.3f} 个词元："
      + ("后面的合并多是训练集特有的搭配，换一批诗就用不上。" if gap > 0 else "两者没有差别。"))
print(f"词表同为 3009 左右时，BPE 是 {bpe_3009:.3f}，字符级是 {char_held:.3f}："
      + ("BPE 略少一些。" if bpe_3009 < char_held else "BPE 并不更少。"))

# %% [markdown]
# 看一首验证集里的诗在几个词表下被切成什么样。

# %%
poem = poems[709] + "\n"  # 李白《玉階怨》，验证集里的一首（第 710 首）
for v in (256, 300, 1000, 3009, full.vocab_size):
    b = first(v)
    ids = b.encode(poem)
    print(f"词表 {v:>5}，{len(ids):>2} 个词元：", " | ".join(b.token_text(i) for i in ids))

# %% [markdown]
# ## 5. 为什么只能按每个字符比较
#
# 最简单的语言模型不看上文：每个词元的概率就是它在训练集里出现的频率（加一平滑，没见过的词元概率也不是 0）。分别用字符级分词器和词表 3009 的 BPE 建这样一个一元模型，在验证集上量两个数：每个词元的平均损失，和每个字符的比特。


# %%
def unigram(tok, text_train: str, text_eval: str) -> tuple[float, float]:
    """加一平滑的一元模型：返回 (验证集每词元的平均损失（奈特）, 每个字符的比特)。"""
    counts = Counter(tok.encode(text_train))
    total = sum(counts.values())
    ids = tok.encode(text_eval)
    nats = -sum(math.log((counts[i] + 1) / (total + tok.vocab_size)) for i in ids) / len(ids)
    return nats, bits_per_char(nats, len(ids), len(text_eval))


results = {"字符级": unigram(char_tok, train_text, held_out_text), "BPE 3009": unigram(bpe, train_text, held_out_text)}
for name, (nats, bpc) in results.items():
    print(f"{name:<8} 每词元 {nats:.3f} 奈特，每个字符 {bpc:.3f} 比特")
(c_nats, c_bpc), (b_nats, b_bpc) = results["字符级"], results["BPE 3009"]
print("按每词元看，" + ("BPE 的损失更高；" if b_nats > c_nats else "BPE 的损失更低；")
      + "按每个字符看，" + ("BPE 更好。" if b_bpc < c_bpc else "BPE 更差。")
      + ("两种看法结论不同：每个词元装的字不一样多，每词元的数不能直接比。" if (b_nats > c_nats) == (b_bpc < c_bpc)
         else "两种看法这次碰巧一致，但只有每个字符的数才是在比同一件事。"))

# %% [markdown]
# 一元模型不看上文，一个装了两个字的词元只能靠它本身的频率来猜，所以每词元的损失高；可它一次就猜出了两个字，摊到每个字符上就不一定吃亏。文章里两个小 GPT 的比较也是按每个字符算的。
#
# 自己试试：把 `bpe` 换成 `first(9336)`（训练到底的词表），或者 `first(500)`，每词元和每个字符的数各怎样变？
