# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：一步一步算注意力
#
# 这个实验配合文章[《Transformer 与注意力机制》](../articles/transformer-attention.md)阅读。文章把公式拆开讲了一遍，这里我们拿一句很短的中文，亲手把缩放点积注意力算出来：先算出 Q、K、V，再依次做打分、缩放、softmax 和加权求和，每一步都打印张量的形状；然后看因果掩码改变了什么、多头注意力的形状怎样变化，最后和 PyTorch 自带的实现对一对答案。
#
# 页面上的输出是构建网站时实际运行得到的。

# %%
# 准备工作：找到实验要导入的代码（attention.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import math
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
from attention import causal_mask, scaled_dot_product_attention
from multi_head_attention import MultiHeadAttention

# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
# 图用浅色配色画在白色底上：网页切换到深色模式时，白底上的图依然清楚
plt.rcParams.update(figkit.rc_params("light"))
plt.rcParams.update({"figure.facecolor": "white", "savefig.facecolor": "white", "savefig.transparent": False})
torch.manual_seed(0)
print("PyTorch", torch.__version__)

# %% [markdown]
# ## 1. 准备 Q、K、V
#
# 句子是「小猫 坐 在 垫子 上」，一共 5 个词。真实模型里每个词的向量来自词嵌入，这里直接随机生成：每个词一个 `d_model = 8` 维的向量，叠起来就是输入矩阵 $X$。
#
# Q、K、V 都是 $X$ 乘上一个矩阵得到的：$Q = XW_Q$，$K = XW_K$，$V = XW_V$。三个矩阵把 8 维的输入投影到 `d_k = 4` 维（真实模型里它们是训练出来的，这里也先随机取）。

# %%
words = ["小猫", "坐", "在", "垫子", "上"]
T, d_model, d_k = len(words), 8, 4

X = torch.randn(T, d_model)  # 每行是一个词的向量
W_q, W_k, W_v = (torch.randn(d_model, d_k) / math.sqrt(d_model) for _ in range(3))
Q, K, V = X @ W_q, X @ W_k, X @ W_v

print("X 的形状:", tuple(X.shape), "  （词数, d_model）")
print("W_q 的形状:", tuple(W_q.shape), "  （d_model, d_k）")
print("Q、K、V 的形状:", tuple(Q.shape), tuple(K.shape), tuple(V.shape), "  （词数, d_k）")

# %% [markdown]
# ## 2. 打分：Q 乘以 K 的转置
#
# 每个查询和每个键做点积，得到一张 $T\times T$ 的打分表：第 $i$ 行第 $j$ 列表示「第 $i$ 个词在找东西时，第 $j$ 个词有多相关」。

# %%
scores = Q @ K.T
print("scores 的形状:", tuple(scores.shape), "  （查询数, 键数）")
print(scores.round(decimals=2))

# %% [markdown]
# ## 3. 缩放：除以 √d_k
#
# 两个 $d_k$ 维随机向量的点积，方差大约是 $d_k$。除以 $\sqrt{d_k}$ 把它拉回 1 左右，softmax 才不会把几乎全部权重都交给分数最大的那一个、别的词几乎分不到（第 9 节会看到不缩放的后果）。

# %%
scaled = scores / math.sqrt(d_k)
print(f"缩放前的标准差 {scores.std():.3f}，缩放后 {scaled.std():.3f}（除以 √{d_k} = {math.sqrt(d_k):.0f}）")

# %% [markdown]
# ## 4. softmax：把每一行变成权重
#
# 对每一行做 softmax：每个数都变成正数，而且每行加起来等于 1。这一行就是第 $i$ 个词分给各个词的注意力。

# %%
weights = torch.softmax(scaled, dim=-1)
print("weights 的形状:", tuple(weights.shape))
print(weights.round(decimals=3))
print("每行之和:", weights.sum(dim=-1).round(decimals=6).tolist())

# %% [markdown]
# ## 5. 加权求和：乘上 V
#
# 用权重对 V 的各行加权平均，每个词得到一个新的 `d_k` 维向量。它混合了整句话的信息，混合的比例就是上面那一行权重。

# %%
out = weights @ V
print("输出的形状:", tuple(out.shape), "  （词数, d_k）")

# 和 code/attention.py 里的实现对一对答案
out_ref, weights_ref = scaled_dot_product_attention(Q, K, V)
print("与 scaled_dot_product_attention 的输出一致:", torch.allclose(out, out_ref))
print("权重一致:", torch.allclose(weights, weights_ref))

# %% [markdown]
# 把权重画成热力图：每一行是一个词（查询）在看谁，颜色越亮权重越大。

# %%
fig, ax = figkit.new_figure(size="square")
figkit.heatmap(ax, weights, xlabels=words, ylabels=words, vmax=1.0)
ax.set_xlabel("被看的词（键）")
ax.set_ylabel("正在看的词（查询）")
ax.set_title("注意力权重（随机向量、未训练；每行之和为 1）")
plt.show()

# %% [markdown]
# ## 6. 因果掩码：不许偷看后面的词
#
# 生成文本时，模型写到第 $i$ 个词时还不知道后面的词。因果掩码把对角线右上方（未来的位置）标成 `True`，打分时在这些位置填上 $-\infty$，softmax 之后它们的权重就严格等于 0。

# %%
mask = causal_mask(T)
print("因果掩码（True 表示屏蔽）：")
print(mask)

masked_scores = scaled.masked_fill(mask, float("-inf"))
causal_weights = torch.softmax(masked_scores, dim=-1)
print("加掩码后的权重：")
print(causal_weights.round(decimals=3))
print("第一个词「小猫」只能看自己，权重:", causal_weights[0].tolist())

# %%
fig, axes = figkit.new_figure(ncols=2)
figkit.heatmap(axes[0], weights, xlabels=words, ylabels=words, vmax=1.0, colorbar=False)
axes[0].set_title("不加掩码：每个词都能看整句")
figkit.heatmap(axes[1], causal_weights, xlabels=words, ylabels=words, vmax=1.0)
axes[1].set_title("因果掩码：只能看自己和前面的词")
fig.suptitle("同一组随机向量（未训练）的注意力权重")
plt.show()

# %% [markdown]
# 加了掩码，右上角全部变成 0；而每一行剩下的权重重新分配，加起来仍然是 1。越靠前的词能看的范围越小：第一行只有一个选择，权重只能全给自己。

# %% [markdown]
# ## 7. 多头注意力：形状怎么变
#
# 多头注意力把 `d_model` 维拆成 `n_heads` 份，每个头在自己的 `d_head = d_model / n_heads` 维子空间里独立做一次注意力，最后拼回来。下面用 `code/multi_head_attention.py` 的 `MultiHeadAttention`，把它 `forward` 里的每一步单独拿出来，看看张量的形状。

# %%
n_heads = 2
mha = MultiHeadAttention(d_model, n_heads)
x = X[None]  # 加一个批次维：(B=1, T, d_model)
B = x.size(0)
d_head = d_model // n_heads

with torch.no_grad():
    qkv = mha.qkv(x)  # 一次线性变换同时算出 Q、K、V
    q, k, v = qkv.chunk(3, dim=-1)
    q_heads = q.view(B, T, n_heads, d_head).transpose(1, 2)  # 拆头
    y, head_weights = mha(x, mask=causal_mask(T), need_weights=True)

print("输入 x:             ", tuple(x.shape), "  (B, T, d_model)")
print("qkv = 线性层(x):    ", tuple(qkv.shape), "  (B, T, 3 * d_model)")
print("q（切出三分之一）:   ", tuple(q.shape), "  (B, T, d_model)")
print("q.view(B, T, h, d): ", tuple(q.view(B, T, n_heads, d_head).shape), "  (B, T, n_heads, d_head)")
print("再 transpose(1, 2): ", tuple(q_heads.shape), "  (B, n_heads, T, d_head)")
print("注意力权重:          ", tuple(head_weights.shape), "  (B, n_heads, T, T)")
print("输出 y:             ", tuple(y.shape), "  (B, T, d_model)，和输入一样")

# %%
fig, axes = figkit.new_figure(ncols=n_heads)
for h, ax in enumerate(axes):
    figkit.heatmap(ax, head_weights[0, h], xlabels=words, ylabels=words, vmax=1.0, colorbar=h == n_heads - 1)
    ax.set_title(f"第 {h} 个头")
fig.suptitle("随机初始化（未训练）的 MultiHeadAttention，加因果掩码")
plt.show()

# %% [markdown]
# 两个头用的是同一句话、同一个因果掩码，但 Q、K 来自不同的投影，看的地方就不一样。这里的权重是随机初始化的，还谈不上「分工」；训练之后各个头学到了什么，请看下一个实验[《注意力头在学什么》](attention_heads_lab.ipynb)。

# %% [markdown]
# ## 8. 和 PyTorch 自带的实现对答案
#
# PyTorch 2 提供了 `torch.nn.functional.scaled_dot_product_attention`，底层会按硬件挑选更快的算法。我们的实现应该和它给出相同的结果。注意一个容易踩的坑：**两边掩码的含义正好相反**。我们的约定是 `True` 表示「屏蔽」；PyTorch 的布尔 `attn_mask` 里 `True` 表示「可以看」。把我们的因果掩码原样传过去，PyTorch 会理解成：每个词只许看严格在它后面的词，连自己也不许看。于是结果自然对不上；最后一个词后面没有词，那一行什么都不许看，softmax 没有可分配的位置，这一行的输出就看 PyTorch 怎么处理了（下面打印了它在这里得到什么）。

# %%
from torch.nn import functional as F

q = torch.randn(2, 3, 6, 16)  # (批, 头, T, d_k)
k = torch.randn(2, 3, 6, 16)
v = torch.randn(2, 3, 6, 16)
ours, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(6))

print("不加掩码一致:", torch.allclose(scaled_dot_product_attention(q, k, v)[0],
                                  F.scaled_dot_product_attention(q, k, v), atol=1e-6))
print("因果（is_causal=True）一致:", torch.allclose(ours, F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                               atol=1e-6))
print("把掩码取反（~mask）后传给 attn_mask 一致:",
      torch.allclose(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=~causal_mask(6)), atol=1e-6))
wrong = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(6))
print("直接把我们的掩码传进去一致:", torch.allclose(ours, wrong, atol=1e-6),
      f"（最大误差 {(ours - wrong).abs().nan_to_num(float('inf')).max():.2f}）")
last = wrong[..., -1, :]  # 最后一个词：反过来的掩码下它什么都不许看
print("这时最后一个词的输出:",
      "全是 NaN" if last.isnan().all() else "全是 0" if (last == 0).all() else "既不全是 0，也不全是 NaN")

# %% [markdown]
# ## 9. 动手试试：去掉缩放会怎样
#
# 先看点积的大小怎样随维度 `d_k` 增长：对随机向量来说，点积的标准差大约是 $\sqrt{d_k}$，除以 $\sqrt{d_k}$ 之后回到 1 左右。

# %%
dims = [4, 16, 64, 256, 1024]
for d in dims:
    a, b = torch.randn(2000, d), torch.randn(2000, d)
    dot = (a * b).sum(dim=-1)
    print(f"d_k = {d:>4}: 点积的标准差 {dot.std():6.2f}（√d_k = {math.sqrt(d):5.1f}），"
          f"缩放后 {(dot / math.sqrt(d)).std():.2f}")

# %% [markdown]
# 分数越大，softmax 越接近「只挑最大的那一个」：一行里最大的权重趋近 1，其余趋近 0，这就叫**饱和**。饱和的那一行，softmax 对分数的梯度几乎为 0，误差传不回去，模型很难学。下面对不同的 `d_k` 各取 500 个查询、每个查询 16 个键，比较缩放和不缩放时「每行最大权重」的平均值，以及梯度几乎为 0（范数小于 0.01）的行占多少。只看梯度的平均值会看漏：少数还没饱和的行会把平均值撑起来，所以两个都打印出来。

# %%
NEAR_ZERO = 0.01  # 梯度的范数小于它，就算「几乎为 0」


def saturation(d: int, scale: float | None, n_keys: int = 16, trials: int = 500) -> tuple[float, float, float]:
    """返回 (每行最大权重的平均值, 每行梯度范数的平均值, 梯度几乎为 0 的行所占比例)。"""
    q = torch.randn(trials, 1, d)
    k = torch.randn(trials, n_keys, d)
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(d) if scale is None else scale)
    s.requires_grad_(True)
    w = torch.softmax(s, dim=-1)
    # 用一个随机的下游损失求梯度，看梯度能不能传回分数
    (w * torch.randn_like(w)).sum().backward()
    grad = s.grad.norm(dim=-1)  # 每个查询一行
    return w.max(dim=-1).values.mean().item(), grad.mean().item(), (grad < NEAR_ZERO).float().mean().item()


rows = {name: [saturation(d, scale) for d in dims] for name, scale in [("缩放", None), ("不缩放", 1.0)]}
print("         ------------ 缩放 ------------    ----------- 不缩放 -----------")
print("  d_k    最大权重  梯度均值  梯度≈0 的行    最大权重  梯度均值  梯度≈0 的行")
for d, (m1, g1, z1), (m2, g2, z2) in zip(dims, rows["缩放"], rows["不缩放"], strict=True):
    print(f"{d:>5}      {m1:.2f}     {g1:.3f}       {z1:5.1%}        {m2:.2f}     {g2:.3f}       {z2:5.1%}")

fig, axes = figkit.new_figure(ncols=2)
for name, values in rows.items():
    label = f"{name}（除以 √d_k）" if name == "缩放" else name
    axes[0].plot(dims, [m for m, _, _ in values], marker="o", label=label)
    axes[1].plot(dims, [100 * z for _, _, z in values], marker="o", label=label)
for ax in axes:
    figkit.plain_log_axis(ax, "x", ticks=dims)
    ax.set_xlabel("d_k")
axes[0].set_ylabel("每行最大权重的平均值")
axes[0].set_ylim(0, 1.05)
axes[0].legend()
axes[1].set_ylabel(f"梯度范数 < {NEAR_ZERO} 的行（%）")
axes[1].set_ylim(0, 100)
axes[0].set_title("每行最大的权重")
axes[1].set_title("梯度几乎为 0 的行")
fig.suptitle("随机生成的 Q、K（不是训练出来的）")
plt.show()

(_, g_scaled, z_scaled), (_, g_raw, z_raw) = rows["缩放"][-1], rows["不缩放"][-1]
print(f"d_k = {dims[-1]}：不缩放时 {z_raw:.0%} 的行梯度几乎为 0，缩放后是 {z_scaled:.0%}；"
      f"不缩放时梯度的平均值是 {g_raw:.3f}（缩放后 {g_scaled:.3f}），它主要来自还没饱和的那 {1 - z_raw:.0%} 的行。")

# %% [markdown]
# 同一组随机 Q、K，在 `d_k = 256` 时分别缩放和不缩放，权重矩阵长这样：

# %%
d_try = 256  # 动手改一改：换成 4、16、1024 再运行
q8, k8, v8 = torch.randn(8, d_try), torch.randn(8, d_try), torch.randn(8, d_try)
_, w_scaled = scaled_dot_product_attention(q8, k8, v8)  # 默认 scale = 1/√d_k
_, w_raw = scaled_dot_product_attention(q8, k8, v8, scale=1.0)  # 不缩放

fig, axes = figkit.new_figure(ncols=2)
figkit.heatmap(axes[0], w_scaled, vmax=1.0, colorbar=False)
axes[0].set_title(f"除以 √{d_try}")
figkit.heatmap(axes[1], w_raw, vmax=1.0)
axes[1].set_title(f"不缩放：每行最大权重平均 {w_raw.max(dim=-1).values.mean():.2f}")
fig.suptitle(f"同一组随机的 Q、K（d_k = {d_try}）")
plt.show()
print(f"每行最大权重：缩放 {w_scaled.max(dim=-1).values.mean():.2f}，不缩放 {w_raw.max(dim=-1).values.mean():.2f}")

# %% [markdown]
# **再试试这些**（改完直接重新运行对应的单元）：
#
# 1. 把第 1 节的 `d_k` 改成 64，看第 3 节缩放前后的标准差。
# 2. 把上一个单元的 `d_try` 改成 4：维度很小时，缩放和不缩放差别还大吗？
# 3. 在第 6 节把 `masked_fill` 的 `float("-inf")` 换成 `0.0`：被「屏蔽」的位置还是 0 权重吗？为什么？
# 4. 把第 7 节的 `n_heads` 改成 4 或 8，看每一步的形状怎样变化；`n_heads = 3` 会发生什么？
#
# 回到文章：[《Transformer 与注意力机制》](../articles/transformer-attention.md)
