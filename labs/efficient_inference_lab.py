# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 动手实验：量化与分块注意力
#
# 这个实验配合文章[《推理更省：量化与分块注意力》](../articles/efficient-inference.md)阅读。先亲手量化一个随机矩阵，看误差怎样随位宽和分组变化；再拿第一阶段训练好的唐诗 GPT，和 PyTorch 自带的 int8 量化对答案，让量化过的模型写诗；然后把分块注意力和 PyTorch 的 `scaled_dot_product_attention` 对一遍，数一数各存多少个数；最后算三个模型每解码一个词元要读多少字节。
#
# 页面上的数字和图都是构建网站时实际运行得到的（随机种子固定），结论句由程序按算出来的数字生成。从页面上下载的 Notebook 放在任意一个空文件夹里就能运行，只需要装好 torch、numpy 和 matplotlib：它的第一格会把用到的代码文件写到旁边的 `llm_code/` 目录里。没有构建网站时留下的模型文件，唐诗 GPT 会现场训练一遍，要多等一会儿（用时和你的机器有关）。

# %%
# 准备工作：找到实验要导入的代码（quantize.py 等），把它所在的目录加入导入路径。
# 从网站下载的 Notebook 比这里多一格，把这些文件写到了旁边的 llm_code/ 里；在仓库里运行时用仓库的 code/ 目录
import sys
import warnings
from pathlib import Path

here = Path.cwd().resolve()
places = [here / "llm_code"] + [folder / "code" for folder in (here, *here.parents)]
code_dir = next((p for p in places if (p / "quantize.py").is_file()), None)
if code_dir is None:
    raise RuntimeError("没找到代码文件：请从网站下载完整的 Notebook，或者在仓库里的某个目录下运行")
sys.path.insert(0, str(code_dir))

import figkit  # 全站共用的绘图工具：中文字体、配色
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from inference_cost import FORMATS, cost_table, llama_matrices, matrix_bytes, ridge_point, tokens_per_second_bound
from kv_cache import A100_BANDWIDTH, A100_PEAK_FLOPS, generate, kv_cache_bytes
from llama import LLAMA2_7B, LLAMA3_8B
from quantize import (
    dequantize,
    model_bytes,
    qmax_of,
    quantize,
    quantize_model,
    quantized_layers,
    tang_gpt,
    validation_windows,
)
from tiled_attention import TileTrace, attention_memory, tiled_attention

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
# ## 1. 量化一个随机矩阵
#
# 取一个 $64\times256$ 的随机矩阵，每行的尺度不同（标准正态乘上 0.1 到 2 之间的一个数）。再复制一份，在第 10 行故意放一个很大的值，模拟真实权重里偶尔出现的离群值。分别按每行一个缩放因子、每 32 个一组、每 16 个一组量化到 8、4、2 比特，看还原之后的平均绝对误差，以及离群值让第 10 行的误差变成了原来的几倍。每个元素的误差都不应超过它那一组缩放因子的一半。

# %%
clean = torch.randn(64, 256) * torch.linspace(0.1, 2.0, 64)[:, None]
w = clean.clone()
w[10, 5] = 20.0  # 一个离群值，放在第 10 行


def errors(matrix: torch.Tensor, bits: int, group: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """还原误差 |ŵ - w| 和每个元素所在组的 s / 2。"""
    codes, scales = quantize(matrix, bits, group)
    g = matrix.size(1) if group is None else group
    return (dequantize(codes, scales) - matrix).abs(), (scales / 2).repeat_interleave(g, dim=1)


print("整数码的上限 q_max = 2^(b-1) - 1：" + "，".join(f"{b} 比特 {qmax_of(b)}" for b in range(8, 1, -1)))
rows = []
for bits in (8, 4, 2):
    for group in (None, 32, 16):
        err, bound = errors(w, bits, group)
        err_clean, _ = errors(clean, bits, group)
        ratio = err[10].mean().item() / err_clean[10].mean().item()  # 第 10 行：有离群值 / 没有离群值
        within = bool((err <= bound + 1e-6).all())
        rows.append((bits, group, err.mean().item(), ratio))
        print(f"{bits} 比特，{'每行一组' if group is None else f'每 {group} 个一组':<8}：平均误差 {err.mean().item():.4f}，"
              f"第 10 行的误差是没有离群值时的 {ratio:5.2f} 倍，每个误差都不超过 s/2：{within}")

for bits in (8, 4, 2):
    one = next(r[3] for r in rows if r[0] == bits and r[1] is None)
    small = next(r[3] for r in rows if r[0] == bits and r[1] == 16)
    verdict = "分组把离群值的影响限制住了" if small < one / 2 else "两种分法差不多"
    print(f"{bits} 比特：第 10 行的误差，每行一组时变成 {one:.2f} 倍，每 16 个一组时 {small:.2f} 倍，{verdict}")

# %% [markdown]
# 缩放因子 $s=\max|w|/q_{\max}$，各位宽的 $q_{\max}$ 打印在第一行。位宽高时，每少 1 比特 $q_{\max}$ 差不多减半，$s$ 差不多翻一倍；位宽低了就不止：从 3 比特到 2 比特，$q_{\max}$ 从 3 降到 1，$s$ 变成 3 倍。所以从 8 比特到 4 比特、再到 2 比特，每一步 $s$ 都大了许多倍，平均误差也跟着大了许多倍（对照上面打印的数）。只有一个缩放因子的那一行里，离群值把 $s$ 撑大了，其余的数都挤在很少几个整数上；分组之后，只有离群值所在的那一组受连累。位宽很低时，就算没有离群值，大多数数也已经被舍成 0，离群值再添的那点误差就不显眼了。

# %%
fig, ax = figkit.new_figure(size="wide")
for group, marker in ((None, "o"), (32, "s"), (16, "^")):
    ax.plot([r[0] for r in rows if r[1] == group], [r[2] for r in rows if r[1] == group], marker=marker,
            label="每行一组" if group is None else f"每 {group} 个一组")
ax.set_yscale("log")
ax.set_xticks([8, 4, 2])
ax.invert_xaxis()
ax.set_xlabel("每个权重的比特数")
ax.set_ylabel("平均绝对误差（对数坐标）")
ax.set_title("随机矩阵（64 × 256，第 10 行有一个离群值）量化再还原的误差")
ax.legend()
plt.show()

# %% [markdown]
# ## 2. 和 PyTorch 的 int8 量化对答案
#
# 读入第一阶段训练好的唐诗 GPT，把它的每个线性层交给我们的 `quantize`（8 比特、每行一个缩放因子），也交给 PyTorch 的 `torch.quantize_per_channel`（`qint8`，缩放因子 $\max|w|/127$，零点 0），比较整数码和还原出的值。这个 PyTorch 函数已被标为过时，这里把它的警告关掉。

# %%
model, tok = tang_gpt()
mismatched, worst = 0, 0.0
for name in quantized_layers(model):
    weight = model.get_submodule(name).weight.detach()
    codes, scales = quantize(weight, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.quantize_per_channel(weight, scales[:, 0], torch.zeros(weight.size(0), dtype=torch.long),
                                            axis=0, dtype=torch.qint8)
    mismatched += (theirs.int_repr() != codes).sum().item()
    worst = max(worst, (theirs.dequantize() - dequantize(codes, scales)).abs().max().item())
print(f"{len(quantized_layers(model))} 个线性层：整数码不同的有 {mismatched} 个，还原值最大相差 {worst:g}")
print("和 PyTorch 完全一致" if mismatched == 0 and worst == 0 else "和 PyTorch 不一致")

# %% [markdown]
# ## 3. 量化过的唐诗 GPT 写诗
#
# 把模型量化到 4 比特和 2 比特（每行一个缩放因子），和不量化的模型一起，从一个换行开始贪心地写 24 个词元（一首五言绝句）。贪心解码每一步取概率最大的词元，结果是确定的，几首诗的差别只来自量化。同时量一下验证集上的损失和模型的大小。

# %%
x, y = validation_windows(tok)
prompt = torch.tensor([tok.encode("\n")])
poems, losses = {}, {}
for bits in (None, 4, 2):
    m = model if bits is None else quantize_model(model, bits, "per_channel")
    with torch.no_grad():
        loss = losses[bits] = F.cross_entropy(m(x).flatten(0, 1), y.flatten()).item()
        poems[bits] = tok.decode(generate(m, prompt, 24).tokens[0, 1:])
    size = model_bytes(model, bits, "per_channel")["total"]
    label = "float32（不量化）" if bits is None else f"{bits} 比特"
    print(f"{label:<12} 验证集损失 {loss:.4f}，模型 {size:>9,} 字节：{poems[bits]}")

print()
for bits in (4, 2):
    same = next((i for i, (a, b) in enumerate(zip(poems[None], poems[bits], strict=False)) if a != b), None)
    print(f"{bits} 比特：验证集损失比不量化的高 {losses[bits] - losses[None]:.4f}；诗"
          + ("和不量化的完全相同" if same is None else f"从第 {same + 1} 个字起和不量化的不同"))

# %% [markdown]
# 对照上面打印的损失差：4 比特只比不量化的高一点点，写出来的诗却可能从头就不同。贪心解码只要有一步概率最大的字换了，后面的上文就不一样，整首诗都会跟着变，所以诗不同不等于模型变差了。2 比特就不一样了：损失高出的那一截比 4 比特大得多，模型是真的变差了。比较量化前后的模型，要看整个验证集上的损失，不能只看一两首诗。

# %% [markdown]
# ## 4. 分块注意力和 PyTorch 对答案
#
# 随机的 $Q$、$K$、$V$（2 条序列、4 个头、每头 16 维，float64），序列长 50，块长取 1、7、16、50、64（7 和 16 不整除 50，64 比序列还长），加因果掩码和不加各一遍，和 `F.scaled_dot_product_attention` 比较。查询也按同样的长度分块，记下算了几块、因果掩码下跳过了几块。

# %%
q, k, v = (torch.randn(2, 4, 50, 16, dtype=torch.float64) for _ in range(3))
worst = 0.0
for causal in (False, True):
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    for tile in (1, 7, 16, 50, 64):
        trace = TileTrace()
        out = tiled_attention(q, k, v, tile, causal=causal, query_block=tile, trace=trace)
        diff = (out - ref).abs().max().item()
        worst = max(worst, diff)
        print(f"因果掩码 {causal!s:<5} 块长 {tile:>2}：算了 {len(trace.blocks):>4} 块，跳过 {trace.skipped:>4} 块，"
              f"最大相差 {diff:.1e}")
print(f"全部情形里最大相差 {worst:.1e}，{'小于' if worst < 1e-12 else '不小于'} 1e-12（float64）")

# %% [markdown]
# 因果掩码下，块越小，能整块跳过的越多，接近一半。再看要存多少个数：每头 64 维、每块 64 个键，序列越长，整张分数矩阵和分块的差距越大。

# %%
for T in (256, 2048, 16384):
    mem = attention_memory(T, d=64, tile_size=64)
    small = attention_memory(T, d=64, tile_size=64, query_block=64)
    print(f"T = {T:>6}：整张分数矩阵 {mem['full']:>12,} 个数；分块、查询一起 {mem['tiled']:>10,} 个；"
          f"查询也每块 64 个 {small['tiled']:>6,} 个")

# %% [markdown]
# ## 5. 每解码一个词元读多少字节
#
# 批大小为 1、只算权重，三个模型在四种存法下每个词元读多少字节、每读 1 字节做几次浮点运算（算术强度），以及按 NVIDIA A100 80GB SXM 数据手册上的显存带宽（和文章用的是同一个数，下面第一行打印出来）每秒最多解码几个词元。唐诗 GPT 小得能放进片上缓存，最后一列对它没有意义，这里不列。

# %%
print(f"A100 80GB SXM（NVIDIA 数据手册）：显存带宽 {A100_BANDWIDTH / 1e9:.0f} GB/s，"
      f"bf16 稠密矩阵乘法峰值 {A100_PEAK_FLOPS / 1e12:.0f} TFLOPS\n")
for row in cost_table():
    bound = "" if row["model"] == "唐诗 GPT" else f"，每秒最多 {row['tokens_per_s']:>4.0f} 个词元"
    print(f"{row['model']:<10} {row['format']:<5}：每个词元读 {row['bytes'] / 1e6:>10,.1f} MB，"
          f"算术强度 {row['intensity']:.2f}{bound}")
highest = max(row["intensity"] for row in cost_table())
print(f"\n最高的算术强度是 {highest:.2f}，A100 的拐点是 {ridge_point():.1f}："
      f"{'都远低于拐点，解码受显存带宽限制' if highest < ridge_point() / 10 else '有的接近拐点'}")

# %% [markdown]
# 上面的 int4 连输出层也量化了。实际的 4 比特模型常把输出层留在 fp16：`llama_matrices` 返回的最后一个矩阵就是输出层，把它单独按 fp16 数。再看 KV 缓存：每条序列一份，每一步都要整个读一遍，批里的序列不能共用。下面按 fp16 算 Llama 2 7B（32 个键值头）和 Llama 3 8B（GQA，8 个键值头）在上下文 4,096 个词元时的缓存，和 fp16 的权重比一比。

# %%
int4, fp16 = next(f for f in FORMATS if f.name == "int4"), next(f for f in FORMATS if f.name == "fp16")
for name, cfg in (("Llama 2 7B", LLAMA2_7B), ("Llama 3 8B", LLAMA3_8B)):
    shapes = llama_matrices(cfg)
    nbytes = matrix_bytes(shapes[:-1], int4) + matrix_bytes(shapes[-1:], fp16)
    print(f"{name}：int4、输出层留在 fp16，每个词元读 {nbytes / 1e9:.2f} GB，每秒最多 {tokens_per_second_bound(nbytes):.0f} 个词元"
          f"（输出层也 int4 时是 {matrix_bytes(shapes, int4) / 1e9:.2f} GB）")
print()
for name, cfg in (("Llama 2 7B", LLAMA2_7B), ("Llama 3 8B", LLAMA3_8B)):
    weights = matrix_bytes(llama_matrices(cfg), fp16)
    for batch in (1, 16):
        cache = kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, seq_len=4096, batch_size=batch)
        print(f"{name}：批大小 {batch:>2}、上下文 4096，KV 缓存 {cache / 1e9:6.2f} GB，fp16 的权重 {weights / 1e9:.2f} GB，"
              f"{'缓存更多' if cache > weights else '权重更多'}")

# %% [markdown]
# ## 自己试试
#
# - 把第 1 节的离群值改成 2.0（和别的数差不多大），每行一组和分组之间的差别还大吗？
# - 第 1 节换用带零点的量化：`codes, scales, zeros = quantize_zero_point(clean.abs(), 4)`，还原用 `dequantize_zero_point(codes, scales, zeros)`（两个函数都从 `quantize` 导入）。这个矩阵全是正数，它的误差比对称量化小多少？为什么？
# - 第 3 节换成 `"group16"` 量化到 2 比特，写出的诗和损失怎样？
# - 第 5 节把 `cost_table(batch_size=16)` 打印出来：批大小变成 16，算术强度和每秒词元数怎样变？（每秒词元数这一列算的是一条序列。）
