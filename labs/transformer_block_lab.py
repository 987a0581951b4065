# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：搭一个 Transformer 块
#
# 这个实验配合文章[《Transformer 块：残差连接、层归一化与前馈网络》](../articles/transformer-block.md)阅读。文章讲了块里的三样东西为什么要有，这里我们亲手检验：先按公式算一遍 LayerNorm 和 RMSNorm，和 PyTorch 对答案；再把我们写的块的权重装进 PyTorch 自带的 `nn.TransformerEncoderLayer`，看两者是不是算出同样的结果；然后数参数、数计算量；最后把四种拼法各叠 32 层，看残差流和梯度怎样随深度变化。
#
# 页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行，只需要装好 torch、numpy 和 matplotlib：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里。

# %%
# 准备工作：找到实验要导入的代码（transformer_block.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "transformer_block.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
from attention import causal_mask
from block_depth import depth_profile, last_layer_gradient
from normalization import LayerNorm, RMSNorm
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from transformer_block import TransformerBlock, block_flops, block_param_count, parameter_breakdown

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
# ## 1. 亲手算 LayerNorm
#
# 取 3 个词元、每个 6 维。LayerNorm 对**每个词元自己的 6 个数**求均值和方差（注意方差除以 $d$，不是 $d-1$），减均值、除标准差，再乘增益 $\gamma$、加偏置 $\beta$。为了让「忘了乘增益」这种错误现形，这里把 $\gamma$、$\beta$ 设成随机值，而不是初始的 1 和 0。

# %%
d = 6
x = 2 * torch.randn(3, d) + 1
gamma, beta = torch.randn(d), torch.randn(d)
eps = 1e-5

mean = x.mean(dim=-1, keepdim=True)  # (3, 1)：每个词元一个均值
var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # 除以 d
by_hand = (x - mean) / torch.sqrt(var + eps) * gamma + beta
print("每个词元的均值:", [f"{v:.3f}" for v in mean.squeeze(-1).tolist()])
print("每个词元的方差:", [f"{v:.3f}" for v in var.squeeze(-1).tolist()])

ours = LayerNorm(d, eps=eps)
ref = nn.LayerNorm(d, eps=eps)
with torch.no_grad():
    for w, b in ((ours.gain, ours.bias), (ref.weight, ref.bias)):
        w.copy_(gamma)
        b.copy_(beta)
    results = {"code/normalization.py 的 LayerNorm": ours(x), "torch.nn.LayerNorm": ref(x)}
for name, y in results.items():
    diff = (y - by_hand).abs().max().item()
    print(f"手算 与 {name}：最大差别 {diff:.1e}，一致: {torch.allclose(y, by_hand, atol=1e-6)}")

# %% [markdown]
# 换成 RMSNorm：不减均值，只除以均方根 $\sqrt{\frac{1}{d}\sum x_i^2+\epsilon}$，没有偏置。PyTorch 从 2.4 起自带 `nn.RMSNorm`。

# %%
rms_by_hand = x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + 1e-6) * gamma
ours_rms, ref_rms = RMSNorm(d, eps=1e-6), nn.RMSNorm(d, eps=1e-6)
with torch.no_grad():
    ours_rms.gain.copy_(gamma)
    ref_rms.weight.copy_(gamma)
    for name, y in (("code/normalization.py 的 RMSNorm", ours_rms(x)), ("torch.nn.RMSNorm", ref_rms(x))):
        print(f"手算 与 {name}：一致: {torch.allclose(y, rms_by_hand, atol=1e-6)}")

# 两者各自抵消什么：把每个词元整体放大 3 倍，或整体加上 5
with torch.no_grad():
    for name, layer in (("LayerNorm", ours), ("RMSNorm", ours_rms)):
        scaled = torch.allclose(layer(3 * x), layer(x), atol=1e-5)
        shifted = torch.allclose(layer(x + 5), layer(x), atol=1e-5)
        print(f"{name:<9}：放大 3 倍后输出不变 {scaled}；加上 5 后输出不变 {shifted}")

# %% [markdown]
# LayerNorm 对平移和缩放都不敏感，RMSNorm 只对缩放不敏感：这就是两者的全部差别。

# %% [markdown]
# ## 2. 我们的块 与 `nn.TransformerEncoderLayer`
#
# PyTorch 自带的 `nn.TransformerEncoderLayer` 就是一个 Transformer 块。它的参数名和我们不一样，但一一对应：
#
# | 我们的 `TransformerBlock` | `nn.TransformerEncoderLayer` |
# | --- | --- |
# | `attn.qkv`（一次算出 Q、K、V） | `self_attn.in_proj_weight`、`in_proj_bias` |
# | `attn.out` | `self_attn.out_proj` |
# | `ffn.up`、`ffn.down` | `linear1`、`linear2` |
# | `norm1.gain`、`norm1.bias` 等 | `norm1.weight`、`norm1.bias` 等 |
#
# 它的默认值不是 GPT 的配置，要显式写出：`norm_first=True`（Pre-LN）、`activation="gelu"`、`dropout=0.0`、`batch_first=True`。下面把权重复制过去，输入同一批数据，加上因果掩码，比较输出。

# %%
def copy_into_torch(block: TransformerBlock, layer: nn.TransformerEncoderLayer) -> None:
    """把我们块里的每个参数复制到 PyTorch 的块里对应的位置。"""
    pairs = {
        "self_attn.in_proj_weight": block.attn.qkv.weight, "self_attn.in_proj_bias": block.attn.qkv.bias,
        "self_attn.out_proj.weight": block.attn.out.weight, "self_attn.out_proj.bias": block.attn.out.bias,
        "linear1.weight": block.ffn.up.weight, "linear1.bias": block.ffn.up.bias,
        "linear2.weight": block.ffn.down.weight, "linear2.bias": block.ffn.down.bias,
        "norm1.weight": block.norm1.gain, "norm1.bias": block.norm1.bias,
        "norm2.weight": block.norm2.gain, "norm2.bias": block.norm2.bias,
    }
    params = dict(layer.named_parameters())
    assert set(params) == set(pairs), "两边的参数应当一一对应"
    with torch.no_grad():
        for name, value in pairs.items():
            params[name].copy_(value)


B, T, d_model, n_heads = 2, 8, 32, 4
x = torch.randn(B, T, d_model, dtype=torch.float64)
for layout, norm_first in (("pre", True), ("post", False)):
    block = TransformerBlock(d_model, n_heads, layout=layout).double()
    with torch.no_grad():  # 归一化的增益、偏置改成随机值，两个归一化接反了也能被发现
        for p in (*block.norm1.parameters(), *block.norm2.parameters()):
            p.add_(0.3 * torch.randn_like(p))
    layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=4 * d_model, dropout=0.0,
                                       activation="gelu", batch_first=True, norm_first=norm_first,
                                       dtype=torch.float64)
    copy_into_torch(block, layer)
    # PyTorch 的浮点掩码：未来位置为 -inf；我们的掩码是 bool，True 表示屏蔽
    torch_mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    with torch.no_grad():
        ours_y, ref_y = block(x, mask=causal_mask(T)), layer(x, src_mask=torch_mask)
    diff = (ours_y - ref_y).abs().max().item()
    print(f"layout={layout!r} 对 norm_first={norm_first}：输出形状 {tuple(ours_y.shape)}，最大差别 {diff:.1e}，"
          f"{'一致' if diff < 1e-10 else '不一致'}（门槛 1e-10，float64）")

# %% [markdown]
# 再换一个角度验证因果掩码：改掉最后一个词元，用同一个块分别算原来的输入和改过的输入。加了因果掩码，前面所有位置的输出都不应该变；作为对照，不加掩码时前面的位置也看得到最后一个词元，它们的输出就会跟着变。

# %%
block = TransformerBlock(d_model, n_heads).double()
x2 = x.clone()
x2[:, -1] = torch.randn(B, d_model, dtype=torch.float64)
with torch.no_grad():
    y1, y2 = block(x, mask=causal_mask(T)), block(x2, mask=causal_mask(T))
    y0, y3 = block(x), block(x2)  # 对照：同一个块，不加掩码
print("加因果掩码：前面位置的输出不变:", torch.allclose(y1[:, :-1], y2[:, :-1]))
print("不加掩码：  前面位置的输出不变:", torch.allclose(y0[:, :-1], y3[:, :-1]))

# %% [markdown]
# ## 3. 数参数
#
# 文章的公式是：注意力 $4d^2+4d$，前馈网络 $8d^2+5d$，两个 LayerNorm $4d$，合计 $12d^2+13d$。下面用三种方法数同一个块：按公式、从我们的模块里逐个参数数、从 PyTorch 的 `nn.TransformerEncoderLayer` 里数。模块建在 `meta` 设备上：只有形状、不占内存，再大的块也是瞬间建好。

# %%
print(f"{'d_model':>8} {'按公式':>12} {'我们的模块':>12} {'PyTorch 的块':>12}  前馈网络占比")
for d_model in (64, 256, 768, 1024):
    formula = sum(block_param_count(d_model).values())
    with torch.device("meta"):
        block = TransformerBlock(d_model, d_model // 64)
        layer = nn.TransformerEncoderLayer(d_model, d_model // 64, dim_feedforward=4 * d_model)
    parts = parameter_breakdown(block)
    mine = sum(parts.values())
    torch_count = sum(p.numel() for p in layer.parameters())
    print(f"{d_model:>8} {formula:>12,} {mine:>12,} {torch_count:>12,}  {parts['ffn'] / mine:.1%}")

# %% [markdown]
# 三列完全相同。前馈网络始终占三分之二左右：它有两个 $d\times 4d$ 的矩阵，注意力只有四个 $d\times d$ 的矩阵。
#
# 把 12 个 $d=768$ 的块加上词嵌入（50257 个词）、位置嵌入（1024 个位置）和最后一个 LayerNorm，就是 GPT-2 small（这些形状取自 Radford 等人 2019 年的 GPT-2 论文和 OpenAI 公开的 GPT-2 代码）。输出层不另占参数：OpenAI 公开的代码（`src/model.py`）把最后的隐藏状态乘以词嵌入矩阵 `wte` 的转置得到 logits，输出层和词嵌入共用同一个矩阵，这叫权重共享（weight tying），所以下面的合计里没有单独的输出层：

# %%
with torch.device("meta"):
    gpt2_parts = {
        "12 个块": nn.ModuleList(TransformerBlock(768, 12) for _ in range(12)),
        "词嵌入": nn.Embedding(50257, 768),
        "位置嵌入": nn.Embedding(1024, 768),
        "最后的 LayerNorm": LayerNorm(768),
    }
counts = {name: sum(p.numel() for p in m.parameters()) for name, m in gpt2_parts.items()}
total = sum(counts.values())
for name, n in counts.items():
    print(f"{name:<14}{n:>14,}  {n / total:6.1%}")
print(f"{'合计':<14}{total:>14,}")

# %% [markdown]
# ## 4. 数计算量
#
# PyTorch 的 `FlopCounterMode` 会在运行时记下每一次矩阵乘法的运算量。拿它和文章里的公式 `block_flops` 对照：前向的运算量应当完全相同，反向应当正好是前向的 2 倍。

# %%
for ffn in ("gelu", "swiglu"):
    d_model, T = 64, 24
    block = TransformerBlock(d_model, 4, ffn=ffn)
    x = torch.randn(1, T, d_model, requires_grad=True)
    with FlopCounterMode(display=False) as forward:
        y = block(x, mask=causal_mask(T))
    with FlopCounterMode(display=False) as backward:
        y.sum().backward()
    formula = sum(block_flops(d_model, T, ffn=ffn).values())
    print(f"ffn={ffn!r}：公式 {formula:,}，实际数出 {forward.get_total_flops():,}，"
          f"相同: {formula == forward.get_total_flops()}；反向 / 前向 = "
          f"{backward.get_total_flops() / forward.get_total_flops():.2f}")

# %% [markdown]
# 序列越长，注意力打分（$QK^\top$ 和乘 $V$）占的比例越大。文章推出两部分之比是 $T:6d$，所以 $T=6d$ 时正好各占一半：

# %%
d_model = 768
for T in (128, 1024, 6 * d_model, 32768):
    f = block_flops(d_model, T)
    share = f["attention_scores"] / sum(f.values())
    print(f"d_model = {d_model}，T = {T:>6}：打分占 {share:6.1%}，按 T / (6d + T) 算 {T / (6 * d_model + T):6.1%}")

# %% [markdown]
# ## 5. 叠 32 层：残差和归一化各管什么
#
# 把 32 个随机初始化（没有训练）的块叠起来，输入标准正态分布的随机张量，损失取输出与一个固定随机张量的内积。前向时记下每层输出的标准差，反向时记下梯度传到每一层时的大小（除以输出处的梯度）。四种拼法：
#
# - `plain`：既没有残差也没有归一化，$x_{l+1}=F(x_l)$；
# - `residual`：只有残差，$x_{l+1}=x_l+F(x_l)$；
# - `post`：Post-LN，$x_{l+1}=\operatorname{Norm}(x_l+F(x_l))$；
# - `pre`：Pre-LN，$x_{l+1}=x_l+F(\operatorname{Norm}(x_l))$。

# %%
layouts = {"plain": "无残差、无归一化", "residual": "只有残差", "post": "Post-LN", "pre": "Pre-LN"}
profiles = {layout: depth_profile(layout, n_layers=32) for layout in layouts}
print(f"{'':<10}{'第 32 层输出的标准差':>14}  {'第 0 层的梯度（相对输出处）':>14}")
for layout, p in profiles.items():
    print(f"{layout:<10}{p.std[-1]:>14.3g}  {p.grad[0]:>14.3g}")

fig, axes = figkit.new_figure(ncols=2, size="tall")
for layout, label in layouts.items():
    axes[0].plot(profiles[layout].std, label=label)
    axes[1].plot(profiles[layout].grad, label=label)
fig.suptitle("随机初始化（未训练）的块逐层叠起来，输入是随机张量")
for ax, title in zip(axes, ("每层输出的标准差", "梯度（相对输出处）"), strict=True):
    ax.set_yscale("log")
    ax.set_xlabel("层 l")
    ax.set_title(title)
    ax.grid(True)
axes[1].legend()
plt.show()

# %% [markdown]
# 按上面的数字下结论（门槛写在括号里，结论随数字变）：

# %%
def verdict(layout: str) -> str:
    p = profiles[layout]
    vanished = p.grad[0] < 1e-6
    exploded = p.grad[0] > 10 or p.std[-1] > 5
    tame = 0.1 < p.grad[0] < 10 and p.std[-1] < 5
    if vanished:
        return f"梯度消失：到第 0 层只剩 {p.grad[0]:.1e}（门槛 1e-6）"
    if exploded:
        return f"越叠越大：标准差 {p.std[-1]:.2f}、第 0 层梯度 {p.grad[0]:.2f} 倍（门槛 5 和 10）"
    if tame:
        return f"尺度受控：标准差 {p.std[-1]:.2f}、第 0 层梯度 {p.grad[0]:.2f} 倍（都在 0.1 到 10 之间）"
    return f"标准差 {p.std[-1]:.2f}、第 0 层梯度 {p.grad[0]:.2g} 倍"


for layout, label in layouts.items():
    print(f"{label:<10}{verdict(layout)}")

# %% [markdown]
# ## 6. Pre-LN 与 Post-LN：最靠近输出的那一层
#
# Xiong 等人（2020）指出，初始化时 Post-LN 靠近输出的层梯度大，而且不随层数减小；Pre-LN 的则随层数变小。这是 Post-LN 需要学习率预热的原因。下面测最后一个块里前馈网络降维矩阵的梯度范数（Pre-LN 的堆叠末尾照惯例再加一个 LayerNorm）：

# %%
depths = [1, 4, 16]
grads = {layout: [last_layer_gradient(layout, n) for n in depths] for layout in ("post", "pre")}
print("总层数      " + "".join(f"{n:>8}" for n in depths))
for layout, values in grads.items():
    print(f"{layout:<12}" + "".join(f"{v:8.3f}" for v in values))
for layout, values in grads.items():
    ratio = values[-1] / values[0]
    trend = "基本不变" if 0.8 < ratio < 1.25 else ("变小" if ratio <= 0.8 else "变大")
    print(f"{layout}：从 {depths[0]} 层到 {depths[-1]} 层，梯度变为原来的 {ratio:.2f} 倍，{trend}（0.8 到 1.25 之间算不变）")

# %% [markdown]
# ## 7. 动手试试
#
# 改完直接重新运行对应的单元：
#
# 1. 第 5 节里给 `depth_profile` 传 `n_layers=64`：只有残差的那条线会涨到多少？Pre-LN 呢？
# 2. 第 2 节里把 `activation="gelu"` 换成默认的 ReLU，或者把建 PyTorch 块时的 `norm_first=norm_first` 改成 `norm_first=not norm_first`（让 Pre-LN 的块去对 Post-LN 的 PyTorch 块，反过来也一样）：差别有多大？
# 3. 第 3 节里给 `TransformerBlock` 加上 `norm="rms", ffn="swiglu", bias=False`（Llama 的配置），参数量和原来差多少？
# 4. 第 1 节里把 LayerNorm 的方差改成除以 $d-1$（`x.var(dim=-1, unbiased=True, keepdim=True)`：要加 `keepdim=True`，形状才是 (3, 1)，能和 (3, 6) 的 `x` 逐行相减、相除），还和 PyTorch 一致吗？
#
# 回到文章：[《Transformer 块：残差连接、层归一化与前馈网络》](../articles/transformer-block.md)
