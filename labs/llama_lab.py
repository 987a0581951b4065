# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：Llama 式的块
#
# 这个实验配合文章[《现代的块：RMSNorm、SwiGLU、RoPE 与 GQA》](../articles/llama-block.md)阅读。文章把第一阶段的块换成了 Llama 的样子，这里亲手检验其中三件事：RoPE 的分数只看相对距离；GQA 等于「把键值头复制给组里每个查询头」的多头注意力，复制的顺序错了结果就错；键值头越少，参数和 KV 缓存各少多少。最后在唐诗上把 Llama 式的小模型训练几十步，看验证集损失降下来。
#
# 页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行，只需要装好 torch、numpy 和 matplotlib：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里。

# %%
# 准备工作：找到实验要导入的代码（llama.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from dataclasses import replace
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "llama.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from gpt_from_scratch import load_poems, split_poems, train_gpt
from llama import (
    GroupedQueryAttention,
    KVCache,
    MiniLlama,
    MiniLlamaConfig,
    added_position_scores,
    format_bytes,
    kv_cache_bytes_per_token,
    kv_cache_table,
    param_count,
    rope_scores,
)
from llama_train import COMPARE_SETTINGS, held_out_loss, llama_poem_config
from positional_encoding import apply_rope
from tokenizer import CharTokenizer

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
# ## 1. RoPE：整块位置往后挪，分数不变
#
# 取一对随机的 16 维向量 $q$、$k$，放在位置 $s, s+1, \dots, s+11$ 上，两两算旋转之后的点积，得到一张 $12\times12$ 的表。把起点 $s$ 从 0 挪到 500，RoPE 的表应当不变；作为对照，把正弦位置编码直接加到 $q$、$k$ 上，表就会变。用 float64 算，剩下的差别只是舍入误差。

# %%
q, k = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
for name, fn in (("RoPE", rope_scores), ("正弦编码加到 q、k 上", added_position_scores)):
    diff = (fn(q, k, offset=0, size=12) - fn(q, k, offset=500, size=12)).abs().max().item()
    print(f"{name}：起点 0 和 500 的两张表最大相差 {diff:.1e}，{'不变' if diff < 1e-9 else '变了'}（门槛 1e-9）")

table = rope_scores(q, k, offset=0, size=12)
# 每条对角线（q 和 k 的距离相同）上的数都相同吗？
spread = max((torch.diagonal(table, -d).max() - torch.diagonal(table, -d).min()).item() for d in range(12))
print(f"RoPE 的表里，同一条对角线上的数最多相差 {spread:.1e}")

fig, axes = figkit.new_figure(ncols=2, size="wide")
for ax, (name, fn) in zip(axes, (("RoPE", rope_scores), ("正弦编码加到 q、k 上", added_position_scores)), strict=True):
    figkit.heatmap(ax, (fn(q, k, 500, 12) - fn(q, k, 0, 12)).numpy())
    ax.set_title(f"{name}：起点 500 减起点 0")
    ax.set_xlabel("k 的位置（从起点数）")
    ax.set_ylabel("q 的位置（从起点数）")
fig.suptitle("一对随机向量 q、k：两个起点的点积表之差")
plt.show()

# %% [markdown]
# 左图全是 0：RoPE 的分数只取决于 $q$、$k$ 的距离。右图不是 0：加上去的位置编码带进了只看绝对位置的项。

# %% [markdown]
# ## 2. GQA 就是「复制了键值头」的多头注意力
#
# 建一个 `GroupedQueryAttention`：$d_{\text{model}}=32$，4 个查询头，2 个键值头。用它自己的投影矩阵，手写一遍：算出 $q$、$k$、$v$，旋转 $q$、$k$，再用 `repeat_interleave` 把每个键值头复制给它那一组的两个查询头（第 0、1 个查询头用第 0 个键值头，第 2、3 个用第 1 个），交给 PyTorch 的 `F.scaled_dot_product_attention`。再故意用 `repeat` 复制一次：它把键值头轮流分给查询头（0、1、0、1），形状一样，结果却不同。

# %%
attn = GroupedQueryAttention(d_model=32, n_heads=4, n_kv_heads=2).double()
B, T = 2, 10
H, H_kv, d = attn.n_heads, attn.n_kv_heads, attn.head_dim  # 查询头数、键值头数、每头的维数，都从模型里读
g = H // H_kv  # 每个键值头要复制给几个查询头
x = torch.randn(B, T, 32, dtype=torch.float64)
positions = torch.arange(T)
mask = torch.ones(T, T, dtype=torch.bool).triu(1)  # True 表示屏蔽未来的位置
with torch.no_grad():
    ours = attn(x, positions, mask)
    qh = apply_rope(attn.q(x).view(B, T, H, d).transpose(1, 2), positions)
    kh = apply_rope(attn.k(x).view(B, T, H_kv, d).transpose(1, 2), positions)
    vh = attn.v(x).view(B, T, H_kv, d).transpose(1, 2)
    for how in ("repeat_interleave", "repeat"):
        if how == "repeat_interleave":
            k_full, v_full = kh.repeat_interleave(g, dim=1), vh.repeat_interleave(g, dim=1)  # 2 个键值头时：0,0,1,1
        else:
            k_full, v_full = kh.repeat(1, g, 1, 1), vh.repeat(1, g, 1, 1)  # 2 个键值头时：0,1,0,1
        y = F.scaled_dot_product_attention(qh, k_full, v_full, is_causal=True)
        ref = attn.out(y.transpose(1, 2).reshape(B, T, H * d))
        diff = (ours - ref).abs().max().item()
        print(f"用 {how:<17} 复制键值头：和 GroupedQueryAttention 最大相差 {diff:.1e}，"
              f"{'一致' if diff < 1e-10 else '不一致'}（门槛 1e-10，float64）")

# %% [markdown]
# ## 3. 键值头越少，省下什么
#
# 第一阶段唐诗模型的形状（4 层、4 个查询头、$d_{\text{model}}=64$），键值头取 4（MHA）、2（GQA）、1（MQA）。参数按公式数（`param_count`），再建出模型逐个数一遍；KV 缓存按公式算每个词元多少字节（float32，每个数 4 字节），再真的带缓存跑 20 个词元，看缓存实际占了多少。

# %%
for n_kv in (4, 2, 1):
    cfg = MiniLlamaConfig(vocab_size=3009, d_model=64, n_layers=4, n_heads=4, n_kv_heads=n_kv, max_len=64)
    model = MiniLlama(cfg).eval()
    counted = sum(p.numel() for p in model.parameters())
    cache = KVCache(cfg.n_layers)
    with torch.no_grad():
        model(torch.randint(0, cfg.vocab_size, (1, 20)), cache)
    per_token = kv_cache_bytes_per_token(cfg.n_layers, n_kv, cfg.head_dim, bytes_per_value=4)
    print(f"键值头 {n_kv}：参数 {param_count(cfg):,}（逐个数出 {counted:,}）；每个词元的 KV 缓存 {per_token:,} 字节，"
          f"20 个词元实际占 {cache.nbytes():,} 字节（公式 × 20 = {per_token * 20:,}）")

print("\n真实模型（float16，按 Meta 发布的 config.json 里的形状算）：")
for row in kv_cache_table(seq_len=4096):
    print(f"  {row['model']:<28} 键值头 {row['n_kv_heads']:>2}：每个词元 {format_bytes(row['bytes_per_token'])}，"
          f"4096 个词元 {format_bytes(row['total_bytes'])}")

# %% [markdown]
# 参数只少了一点（键值投影本来就只占块的一小部分，词嵌入和输出层才是这个小模型的大头），缓存却按键值头数成比例缩小。

# %% [markdown]
# ## 4. 在唐诗上训练几十步
#
# 用文章里比较时的模型（4 层、4 个头、2 个键值头、SwiGLU 隐藏维度 205）和第一阶段同一个训练循环 `train_gpt`，只训练 40 步、每步 8 段，看验证集损失从随机初始化时降了多少。文章里的比较每个模型训练 75 步、3 个种子，这里只为了亲眼看到它在学。
#
# 打印的「训练前」「训练后」两个损失用的是 `held_out_loss`（`code/llama_train.py`，文章比较两个模型时也用它）：从验证集里隔几首诗截一段，对全部这些段取平均。图上的曲线是 `train_gpt` 训练中途在固定的几段上量的（段数见图例），验证集那条和 `held_out_loss` 量的不是同一批文本，所以曲线上验证集的最后一个点和打印的「训练后」损失一般不一样。

# %%
train_text, held_out_text = split_poems(load_poems())
tok = CharTokenizer.train(train_text, min_count=2)
torch.manual_seed(0)
model = MiniLlama(llama_poem_config(tok.vocab_size))
before = held_out_loss(model, tok, held_out_text)
settings = replace(COMPARE_SETTINGS, steps=40, warmup=5, eval_every=10)
history = train_gpt(model, tok, train_text, held_out_text, settings)
after = held_out_loss(model, tok, held_out_text)
print(f"词表 {tok.vocab_size} 个词元，均匀乱猜的损失 ln V = {torch.log(torch.tensor(float(tok.vocab_size))):.3f}")
print(f"验证集损失：训练前 {before:.3f}，训练 {settings.steps} 步后 {after:.3f}，"
      f"{'降低了' if after < before else '没有降低'}")

fig, ax = figkit.new_figure(size="wide")
ax.plot(history.eval_steps, history.eval_held_out, marker="o", label=f"验证集（固定的 {settings.eval_windows} 段）")
ax.plot(history.eval_steps, history.eval_train, marker=".", label=f"训练集（固定的 {settings.eval_windows} 段）")
ax.set_xlabel("训练步数")
ax.set_ylabel("损失")
ax.legend()
plt.show()

# %% [markdown]
# ## 5. 自己试试
#
# - 把第 2 节建 `GroupedQueryAttention` 时的 `n_kv_heads=2` 改成 1（MQA）或 4（MHA），重新运行那一格（头数和复制的倍数都从 `attn` 里读，不用改别处），`repeat` 和 `repeat_interleave` 还会不会给出不同的结果？为什么？
# - 把第 1 节的起点从 500 改成几万、几百万，再到十亿（`offset=10**9`），RoPE 的两张表最大相差多少，还过得了 1e-9 的门槛吗？（提示：`rope_scores` 总在 float64 里算；角度是位置乘频率，位置越大，角度里的舍入误差越大。）
# - 第 4 节的配置来自 `llama_poem_config`，要改键值头数，把建模型那一行换成 `model = MiniLlama(replace(llama_poem_config(tok.vocab_size), n_kv_heads=4))`（`replace` 来自 `dataclasses`，第一格已经导入），再从这一格运行。参数量（`sum(p.numel() for p in model.parameters())`）变成多少？训练 40 步后的损失差得多吗？
