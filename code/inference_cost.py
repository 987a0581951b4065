"""解码一个词元要从内存读多少字节、做多少次浮点运算：fp32、fp16、int8、int4 各是多少。

《解码：贪心、温度、top-k、top-p 与 KV 缓存》一文说过：带 KV 缓存解码时，每生成一个词元，
每个权重矩阵都要从内存完整读一遍，而每个权重只参与一次乘加（批大小为 1 时）。
所以读权重的字节数决定了解码的速度下限，量化把它直接砍小。
这里按公式数，不建模型：唐诗 GPT 用 code/kv_cache.py 的 weight_bytes 数过的那批矩阵，
Llama 2 7B、Llama 3 8B 用 code/llama.py 里照发布的 config.json 写下的形状。
参数不对时抛出 ValueError，检查的代码在文件末尾（WeightFormat 的检查在开头：导入时建 FORMATS 就要用到）。
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kv_cache import A100_BANDWIDTH, A100_PEAK_FLOPS, weight_bytes
from llama import LLAMA2_7B, LLAMA3_8B, MiniLlamaConfig, block_param_count
from shapes import check_int
from tiny_transformer import TinyConfig


def check_weight_format(f: WeightFormat) -> None:
    """WeightFormat 建好时就检查。下面的 FORMATS 在导入时就建好，所以这个检查写在前面，其余的在文件末尾。"""
    if not isinstance(f.name, str) or not f.name:
        raise ValueError(f"name 应是非空的字符串，例如 \"int4\"，收到 {f.name!r}")
    bits = check_int("bits", f.bits, minimum=1)
    if not (bits <= 8 or bits in (16, 32)):
        raise ValueError(f"bits 应为 1 到 8（带缩放因子的整数格式）或 16、32（fp16、fp32 这类浮点格式），收到 {bits}")
    if f.group_size is not None and (isinstance(f.group_size, bool) or not isinstance(f.group_size, int)
                                     or f.group_size < 1):
        raise ValueError(f"group_size 应为 None（每行一个缩放因子）或正整数（每几个权重一组），收到 {f.group_size!r}")
    if bits >= 16 and f.group_size is not None:  # matrix_bytes 只给 16 比特以下的格式加缩放因子
        raise ValueError(f"{bits} 比特是浮点格式，不带缩放因子，group_size 应为 None，收到 {f.group_size!r}")
    check_int("scale_bytes", f.scale_bytes, minimum=1)


# --8<-- [start:formats]
@dataclass(frozen=True)
class WeightFormat:
    """权重的存法：每个权重几比特；group_size 个权重共用一个 scale_bytes 字节的缩放因子。

    bits 为 16、32 的是浮点格式（fp16、fp32），没有缩放因子，group_size 只能是 None；
    bits 不超过 8 的是量化的整数格式，group_size=None 表示每个输出通道（每行）一个缩放因子。"""

    name: str
    bits: int
    group_size: int | None = None
    scale_bytes: int = 4  # 缩放因子按 float32 存，和 code/quantize.py 一样

    def __post_init__(self) -> None:
        check_weight_format(self)

    def bits_per_weight(self) -> float:
        """平均每个权重占几比特：缩放因子摊到组里每个权重头上。

        group_size=None（每行一个缩放因子）时不算缩放因子：摊到每个权重上是多少要看每行有几个权重（d_in），
        这里不知道；matrix_bytes 按矩阵的形状把它加上。"""
        extra = 0.0 if self.group_size is None else 8 * self.scale_bytes / self.group_size
        return self.bits + extra


FORMATS = (
    WeightFormat("fp32", 32),
    WeightFormat("fp16", 16),
    # 每个输出通道（每行）一个缩放因子，见 matrix_bytes：Llama 每行几千个权重才摊一个；唐诗 GPT 每行只有 64 或 256 个
    # 权重，4 字节的缩放因子摊到每个权重上是 0.5 或 0.125 比特
    WeightFormat("int8", 8, group_size=None),
    WeightFormat("int4", 4, group_size=32),  # 每 32 个一组
)
# --8<-- [end:formats]


# --8<-- [start:shapes]
def tang_matrices(cfg: TinyConfig) -> list[tuple[int, int]]:
    """唐诗 GPT 参与矩阵乘法的权重矩阵的形状 (d_out, d_in)：每层 qkv、out、up、down，加输出层。"""
    check_tang_config(cfg)
    d = cfg.d_model
    per_layer = [(3 * d, d), (d, d)] + ([(4 * d, d), (d, 4 * d)] if cfg.mlp else [])
    return per_layer * cfg.n_layers + [(cfg.vocab_size, d)]


def llama_matrices(cfg: MiniLlamaConfig) -> list[tuple[int, int]]:
    """Llama 式模型的权重矩阵：每层 q、k、v、o 和 SwiGLU 的 gate、up、down，加输出层（不和词嵌入共用时）。

    词嵌入表不算：生成一个词元只从里面取一行。
    """
    check_llama_config(cfg)
    d, hd, f = cfg.d_model, cfg.head_dim, cfg.ffn_dim
    per_layer = [(cfg.n_heads * hd, d), (cfg.n_kv_heads * hd, d), (cfg.n_kv_heads * hd, d), (d, cfg.n_heads * hd),
                 (f, d), (f, d), (d, f)]
    head = [] if cfg.tie_weights else [(cfg.vocab_size, d)]
    return per_layer * cfg.n_layers + head
# --8<-- [end:shapes]


# --8<-- [start:bytes]
def matrix_bytes(shapes: list[tuple[int, int]], fmt: WeightFormat) -> int:
    """按 fmt 存下这些矩阵要多少字节：整数码按位紧排（不满一个字节按一个算），再加缩放因子。

    int8 那种 group_size=None 且 bits < 16 的格式，每行（每个输出通道）一个缩放因子。
    """
    check_bytes_args(shapes, fmt)
    total = 0
    for d_out, d_in in shapes:
        bits = d_out * d_in * fmt.bits
        total += bits // 8 + (1 if bits % 8 else 0)
        if fmt.bits < 16:  # 量化的格式带缩放因子
            if fmt.group_size is not None and d_in % fmt.group_size != 0:
                raise ValueError(f"{fmt.name} 每 {fmt.group_size} 个一组，应能整除矩阵的 d_in = {d_in}")
            groups = d_out if fmt.group_size is None else d_out * (d_in // fmt.group_size)
            total += groups * fmt.scale_bytes
    return total


def decode_cost(shapes: list[tuple[int, int]], fmt: WeightFormat, batch_size: int = 1) -> dict[str, float]:
    """批大小为 batch_size 时解码一步：读一遍权重（批里的序列共用），每条序列每个权重做一次乘加（2 次浮点运算）。

    返回字节数、浮点运算次数、算术强度（每读 1 字节做几次浮点运算）。KV 缓存的读写不算在内：它只会让字节数更多。
    """
    check_int("batch_size", batch_size, minimum=1)
    nbytes = matrix_bytes(shapes, fmt)
    flops = 2 * batch_size * sum(o * i for o, i in shapes)
    return {"bytes": nbytes, "flops": flops, "intensity": flops / nbytes}
# --8<-- [end:bytes]


def ridge_point(peak_flops: float = A100_PEAK_FLOPS, bandwidth: float = A100_BANDWIDTH) -> float:
    """屋顶线的拐点：每字节至少要做这么多次浮点运算，算力才可能用满；低于它，速度由读内存决定。"""
    check_rates(peak_flops=peak_flops, bandwidth=bandwidth)
    return peak_flops / bandwidth


def tokens_per_second_bound(nbytes: float, bandwidth: float = A100_BANDWIDTH) -> float:
    """只看读权重：每秒最多能解码几个词元（批大小 1）。实际的程序还要读 KV 缓存、达不到峰值带宽，只会更慢。"""
    check_rates(nbytes=nbytes, bandwidth=bandwidth)
    return bandwidth / nbytes


def cost_table(batch_size: int = 1) -> list[dict]:
    """三个模型 × 四种存法的解码代价：文章里的表、练习都从这里取数。"""
    from gpt_from_scratch import poem_config

    models = {"唐诗 GPT": tang_matrices(poem_config(TANG_VOCAB)), "Llama 2 7B": llama_matrices(LLAMA2_7B),
              "Llama 3 8B": llama_matrices(LLAMA3_8B)}
    rows = []
    for model, shapes in models.items():
        for f in FORMATS:
            cost = decode_cost(shapes, f, batch_size)
            rows.append({"model": model, "format": f.name, **cost,
                         "tokens_per_s": tokens_per_second_bound(cost["bytes"])})
    return rows


TANG_VOCAB = 3009  # 唐诗 GPT 的词表：256 个字节词元 + 训练集里至少出现 2 次的 2753 个字（测试里从语料数出来核对）


def _agrees_with_kv_cache() -> bool:
    """和 code/kv_cache.py 的 weight_bytes 数的是同一批矩阵（fp16 时字节数相同）。"""
    from gpt_from_scratch import poem_config

    cfg = poem_config(TANG_VOCAB)
    return matrix_bytes(tang_matrices(cfg), FORMATS[1]) == weight_bytes(cfg, 2)


def _agrees_with_llama() -> bool:
    """和 code/llama.py 的 block_param_count 数的是同一批矩阵。"""
    per_layer = block_param_count(LLAMA2_7B)["attention"] + block_param_count(LLAMA2_7B)["ffn"]
    return sum(o * i for o, i in llama_matrices(LLAMA2_7B)) == LLAMA2_7B.n_layers * per_layer + 32000 * 4096


# ---------- 参数检查：不在文章里展示，输入不对时给出看得懂的错误（check_weight_format 在文件开头） ----------


def check_shapes(shapes: object) -> None:
    if not isinstance(shapes, list) or not shapes:
        raise ValueError("shapes 应是 [(d_out, d_in), ...] 的非空列表，例如 llama_matrices(LLAMA2_7B)")
    for i, pair in enumerate(shapes):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise ValueError(f"shapes[{i}] 应是 (d_out, d_in) 两个整数，收到 {pair!r}")
        check_int(f"shapes[{i}] 的 d_out", pair[0], minimum=1)
        check_int(f"shapes[{i}] 的 d_in", pair[1], minimum=1)


def check_bytes_args(shapes: object, fmt: object) -> None:
    """matrix_bytes（decode_cost 也经过它）的参数：shapes 见 check_shapes；fmt 是 WeightFormat，不是名字。"""
    check_shapes(shapes)
    if not isinstance(fmt, WeightFormat):
        names = "、".join(f.name for f in FORMATS)
        raise ValueError(f"fmt 应为 WeightFormat（已有的存法是 FORMATS 里的 {names}，例如 FORMATS[3] 就是 int4；"
                         f"只写名字不行），收到 {fmt!r}（{type(fmt).__name__}）")


def check_tang_config(cfg: object) -> None:
    if not isinstance(cfg, TinyConfig):
        raise ValueError(f"cfg 应为 TinyConfig（唐诗 GPT 的配置，例如 poem_config({TANG_VOCAB})），"
                         f"收到 {type(cfg).__name__}")


def check_llama_config(cfg: object) -> None:
    if not isinstance(cfg, MiniLlamaConfig):
        raise ValueError(f"cfg 应为 MiniLlamaConfig（例如 code/llama.py 的 LLAMA2_7B），收到 {type(cfg).__name__}")


def check_rates(**values: object) -> None:
    """每个值都应是有限的正数（浮点运算次数 / 秒、字节 / 秒、字节数）。"""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise ValueError(f"{name} 应为有限的正数，收到 {value!r}")


if __name__ == "__main__":
    print("和 kv_cache.weight_bytes、llama.block_param_count 数的是同一批矩阵：",
          _agrees_with_kv_cache() and _agrees_with_llama())
    print(f"A100 的屋顶线拐点：每字节 {ridge_point():.0f} 次浮点运算\n")
    print(f"{'模型':<12}{'存法':<6}{'每个词元读的权重':>16}{'算术强度':>10}{'每秒词元上限（A100）':>14}")
    for row in cost_table():
        print(f"{row['model']:<12}{row['format']:<6}{row['bytes'] / 1e6:>14,.1f} MB{row['intensity']:>10.2f}"
              f"{row['tokens_per_s']:>14,.0f}")
