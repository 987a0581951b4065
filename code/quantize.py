"""权重量化：把训练好的唐诗 GPT 的线性层权重存成 8、6、4、3、2 比特的整数，再还原回来，看损失变了多少。

做法是对称的 absmax 量化：一组权重共用一个缩放因子 scale = max|w| / qmax，qmax = 2^(bits-1) - 1，
整数码 q = round(w / scale) 落在 [-qmax, qmax] 里，还原时 w ≈ q · scale。「一组」有三种取法：
- per_tensor：整个矩阵一个 scale；
- per_channel（group_size=None）：每个输出通道（权重矩阵的一行）一个 scale；
- group-wise（group_size=G）：每行再按输入维切成 G 个一组，每组一个 scale。
这里只做「量化 → 还原」（fake quantization），算出的还是浮点矩阵乘法，量的是精度损失；真正省内存的推理
要把整数码按位打包存好、在矩阵乘法里边读边还原，那要专门写的算子（GPU kernel），不在这篇的范围里。

量化的只有线性层（nn.Linear）的权重：每层注意力的 qkv、out，前馈网络的 up、down，以及输出层 unembed。
词嵌入、位置嵌入、LayerNorm 和所有偏置保持 float32：嵌入表每个词元只读一行，LayerNorm 和偏置加起来很小。
参数或形状不对时抛出 ValueError，检查的代码在文件末尾。
"""

from __future__ import annotations

import copy
from functools import cache

import torch
from gpt_from_scratch import TrainSettings, evaluate, fixed_windows, load_poems, poem_starts, split_poems
from shapes import check_float, check_int, check_tensor, fmt, shape_error
from tiny_transformer import TinyTransformer
from tokenizer import CharTokenizer
from torch import Tensor, nn

BITS = (8, 6, 4, 3, 2)  # 文章比较的位宽
SCHEMES = ("per_tensor", "per_channel", "group32", "group16")  # 四种分组：整个矩阵、每行、每 32 个、每 16 个
SCHEME_NAMES = {"per_tensor": "整个矩阵一个缩放", "per_channel": "每个输出通道一个缩放",
                "group32": "每 32 个一组", "group16": "每 16 个一组"}
SCALE_BYTES = 4  # 缩放因子按 float32 存：我们的代码算出来就是 float32


# --8<-- [start:quantize]
def qmax_of(bits: int) -> int:
    """对称量化里整数码的上限：8 比特是 127，4 比特是 7，2 比特是 1（只剩 -1、0、1 三个值）。"""
    check_int("bits", bits, minimum=2)
    if bits > 8:
        raise ValueError(f"bits 应在 2 到 8 之间（整数码存进 int8），收到 {bits}")
    return 2 ** (bits - 1) - 1


def absmax_scales(w: Tensor, bits: int, group_size: int | None = None) -> Tensor:
    """每组一个缩放因子：这一组里绝对值最大的权重正好映射到 ±qmax。

    w: (d_out, d_in)。group_size=None 时每行一组，返回 (d_out, 1)；否则返回 (d_out, d_in // group_size)。
    """
    check_weight(w, group_size)
    w = w.to(torch.promote_types(w.dtype, torch.float32))  # float16、bfloat16 先转成 float32，见 quantize
    g = w.size(1) if group_size is None else group_size
    absmax = w.reshape(w.size(0), -1, g).abs().amax(dim=-1)  # (d_out, 组数)
    # 全是 0 的一组：取 scale = 1，整数码全是 0，还原出来也是 0（不然会除以 0）
    scales = torch.where(absmax > 0, absmax / qmax_of(bits), torch.ones_like(absmax))
    check_reciprocal(scales)  # 小得 1 / scale 溢出成 inf 的缩放因子：报错，不悄悄算出一堆错码
    return scales


def quantize(w: Tensor, bits: int, group_size: int | None = None) -> tuple[Tensor, Tensor]:
    """对称 absmax 量化，返回 (整数码 int8 (d_out, d_in), 缩放因子 (d_out, 组数))。

    缩放因子至少是 float32：float16 的权重常在 1e-3 上下，max|w| / 127 落进 float16 精度很差的那一段，
    1 / scale 还会溢出成 inf，所以半精度的权重先转成 float32 再算（实际的格式也多把缩放因子存成 float16 以上）。"""
    scales = absmax_scales(w, bits, group_size)
    g = w.size(1) if group_size is None else group_size
    groups = w.to(scales.dtype).reshape(w.size(0), -1, g)  # (d_out, 组数, g)
    # 乘以 1/scale 而不是除以 scale：PyTorch 的 quantize_per_channel 也这样算，两者在几乎恰好落在
    # 两个整数正中间的值上可能差一个码。torch.round 是「四舍六入五成双」（0.5 → 0，1.5 → 2，2.5 → 2）
    codes = torch.round(groups * (1.0 / scales[..., None]))
    qmax = qmax_of(bits)
    codes = codes.clamp(-qmax, qmax).to(torch.int8)  # 每组最大的那个正好是 ±qmax，clamp 只防舍入误差
    return codes.reshape(w.shape), scales


def dequantize(codes: Tensor, scales: Tensor) -> Tensor:
    """还原：每个整数码乘上它那一组的缩放因子。组的大小由两者的形状推出：d_in // 组数。"""
    check_codes(codes, scales)
    d_out, d_in = codes.shape
    g = d_in // scales.size(1)
    w = codes.reshape(d_out, -1, g).to(scales.dtype) * scales[..., None]
    return w.reshape(d_out, d_in)


def fake_quantize(w: Tensor, bits: int, group_size: int | None = None) -> Tensor:
    """量化再还原：返回和 w 同形状、同 dtype 的浮点矩阵，每个元素只能取 2 qmax + 1 个值之一（乘上各组的 scale）。"""
    return dequantize(*quantize(w, bits, group_size)).to(w.dtype)
# --8<-- [end:quantize]


# --8<-- [start:zero-point]
def quantize_zero_point(w: Tensor, bits: int, group_size: int | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """带零点（非对称）的量化：把一组从最小值到最大值的范围均匀分成 2^bits - 1 格，0 .. 2^bits - 1 的码全用上。

    返回 (整数码 uint8 (d_out, d_in), 缩放因子 (d_out, 组数), 零点 uint8 (d_out, 组数))；零点是 0 对应的那个码。
    范围总把 0 包括在内，所以 0 还原出来正好是 0。
    """
    check_weight(w, group_size)
    qmax_of(bits)  # 只为检查 bits 在 2 到 8 之间
    levels = 2 ** bits - 1  # 最大的码：4 比特是 15，码 0 .. 15 一共 16 个
    g = w.size(1) if group_size is None else group_size
    groups = w.to(torch.promote_types(w.dtype, torch.float32)).reshape(w.size(0), -1, g)
    lo = groups.amin(dim=-1).clamp(max=0)  # (d_out, 组数)
    hi = groups.amax(dim=-1).clamp(min=0)
    scales = torch.where(hi > lo, (hi - lo) / levels, torch.ones_like(hi))  # 全是 0 的一组：scale = 1
    zeros = torch.round(-lo / scales)  # 最小值对上码 0，0 对上码 zeros
    check_reciprocal(scales)
    # 和 PyTorch 的 quantize_per_channel（quint8）一样：先加零点再舍入
    codes = torch.round(groups * (1.0 / scales[..., None]) + zeros[..., None]).clamp(0, levels)
    return codes.to(torch.uint8).reshape(w.shape), scales, zeros.to(torch.uint8)


def dequantize_zero_point(codes: Tensor, scales: Tensor, zeros: Tensor) -> Tensor:
    """还原：(整数码 - 零点) × 缩放因子。"""
    check_codes(codes, scales, torch.uint8)
    check_zeros(zeros, scales)
    d_out, d_in = codes.shape
    g = d_in // scales.size(1)
    w = (codes.reshape(d_out, -1, g).to(scales.dtype) - zeros[..., None].to(scales.dtype)) * scales[..., None]
    return w.reshape(d_out, d_in)
# --8<-- [end:zero-point]


def fake_quantize_zero_point(w: Tensor, bits: int, group_size: int | None = None) -> Tensor:
    """带零点的量化再还原：返回和 w 同形状、同 dtype 的浮点矩阵。"""
    return dequantize_zero_point(*quantize_zero_point(w, bits, group_size)).to(w.dtype)


def per_tensor_fake_quantize(w: Tensor, bits: int) -> Tensor:
    """整个矩阵共用一个缩放因子：最粗的做法，作为对照。"""
    check_weight(w, None)
    return fake_quantize(w.reshape(1, -1), bits).reshape(w.shape)


def scheme_group_size(scheme: str) -> int | None:
    """分组方式的名字 → group_size（per_channel 为 None）。per_tensor 另有函数，这里不接受。"""
    if scheme == "per_channel":
        return None
    if isinstance(scheme, str) and scheme.startswith("group") and scheme[5:].isdigit():
        if int(scheme[5:]) < 1:
            raise ValueError(f"scheme = {scheme!r} 的组大小应至少为 1，例如 group32")
        return int(scheme[5:])
    raise ValueError(f"scheme 应是 {', '.join(SCHEMES)} 之一，收到 {scheme!r}")


def fake_quantize_scheme(w: Tensor, bits: int, scheme: str) -> Tensor:
    """按分组方式的名字量化再还原：per_tensor 整个矩阵一个缩放，其余见 scheme_group_size。"""
    check_scheme(scheme)
    if scheme == "per_tensor":
        return per_tensor_fake_quantize(w, bits)
    return fake_quantize(w, bits, scheme_group_size(scheme))


# --8<-- [start:model]
def quantized_layers(model: nn.Module) -> list[str]:
    """要量化的层：模型里所有 nn.Linear 的名字（唐诗 GPT 是 4 层 × 4 个，加上输出层，共 17 个）。"""
    check_module(model)
    return [name for name, m in model.named_modules() if isinstance(m, nn.Linear)]


def quantize_model(model: nn.Module, bits: int, scheme: str = "per_channel") -> nn.Module:
    """复制一份模型，把每个 nn.Linear 的权重换成量化再还原后的值；嵌入、LayerNorm、偏置不动。"""
    check_model(model)
    check_scheme(scheme)
    qmax_of(bits)
    out = copy.deepcopy(model).eval()
    with torch.no_grad():
        for name in quantized_layers(out):
            layer = out.get_submodule(name)
            layer.weight.copy_(fake_quantize_scheme(layer.weight, bits, scheme))
    return out
# --8<-- [end:model]


# --8<-- [start:bytes]
def scale_count(d_out: int, d_in: int, scheme: str) -> int:
    """一个 (d_out, d_in) 的矩阵要存几个缩放因子。"""
    check_scale_count_args(d_out, d_in, scheme)
    if scheme == "per_tensor":
        return 1
    g = scheme_group_size(scheme)
    return d_out if g is None else d_out * (d_in // g)


def model_bytes(model: nn.Module, bits: int | None = None, scheme: str = "per_channel",
                scale_bytes: int = SCALE_BYTES) -> dict[str, int]:
    """模型存下来占多少字节。bits=None 表示不量化（全部 float32）。

    量化时：线性层的权重每个 bits / 8 字节（整数码按位紧紧排在一起），外加每个缩放因子 scale_bytes 字节；
    其余参数（嵌入、LayerNorm、偏置）仍是 float32，4 字节一个。
    """
    check_model(model)
    check_scheme(scheme)
    names = set(quantized_layers(model))
    linear = sum(model.get_submodule(n).weight.numel() for n in names)
    other = sum(p.numel() for p in model.parameters()) - linear
    if bits is None:
        return {"weights": 4 * linear, "scales": 0, "other": 4 * other, "total": 4 * (linear + other)}
    qmax_of(bits)
    check_int("scale_bytes", scale_bytes, minimum=1)
    weights = linear * bits // 8 + (1 if linear * bits % 8 else 0)  # 不满一个字节的按一个字节算
    scales = scale_bytes * sum(scale_count(*model.get_submodule(n).weight.shape, scheme) for n in names)
    return {"weights": weights, "scales": scales, "other": 4 * other, "total": weights + scales + 4 * other}
# --8<-- [end:bytes]


# ---------- 在唐诗 GPT 上量：验证集损失和位宽 ----------


def validation_windows(tok: CharTokenizer) -> tuple[Tensor, Tensor]:
    """《从零训练一个小 GPT》量验证集损失用的那 48 段：验证集的诗，每段 64 个词元，等间隔挑起点。"""
    check_tokenizer(tok)
    s = TrainSettings()
    _, held_out = split_poems(load_poems())
    ids = torch.tensor(tok.encode(held_out))
    starts = poem_starts(ids, tok.encode("\n")[0], s.context)
    return fixed_windows(ids, starts, s.eval_windows, s.context)


@cache
def tang_gpt() -> tuple[TinyTransformer, CharTokenizer]:
    """第一阶段训练好的唐诗 GPT（构建网站时训练一次、存进缓存的那个）。"""
    from gpt_from_scratch import pretrained_gpt

    model, tok, _ = pretrained_gpt(verbose=False)
    return model, tok


# --8<-- [start:sweep]
def loss_vs_bits(model: TinyTransformer, tok: CharTokenizer, bits: tuple[int, ...] = BITS,
                 schemes: tuple[str, ...] = SCHEMES) -> dict:
    """每种分组、每个位宽量化一次，在验证集的 48 段上算平均交叉熵（nat / 词元）。

    返回 {"bits": 位宽列表, "float32": 不量化的损失, "float32_bytes": 不量化时的模型字节数,
    "loss": {分组: [每个位宽的损失]}, "bytes": {分组: [每个位宽的模型字节数]}}。
    """
    check_sweep_args(model, bits, schemes)
    x, y = validation_windows(tok)
    out = {"bits": list(bits), "float32": evaluate(model, x, y), "float32_bytes": model_bytes(model)["total"],
           "loss": {}, "bytes": {}}
    for scheme in schemes:
        out["loss"][scheme] = [evaluate(quantize_model(model, b, scheme), x, y) for b in bits]
        out["bytes"][scheme] = [model_bytes(model, b, scheme)["total"] for b in bits]
    return out
# --8<-- [end:sweep]


def tang_loss(bits: int | None, scheme: str = "per_channel") -> float:
    """唐诗 GPT 量化到 bits 比特（None：不量化）后，验证集 48 段上的损失。"""
    if bits is not None:  # 先检查参数，再读（或训练）模型
        qmax_of(bits)
    check_scheme(scheme)
    model, tok = tang_gpt()
    x, y = validation_windows(tok)
    with single_thread():
        return evaluate(model if bits is None else quantize_model(model, bits, scheme), x, y)


@cache
def tang_sweep() -> dict:
    """文章、图和练习共用的那一次扫描（单线程算，约几秒）。"""
    model, tok = tang_gpt()
    with single_thread():
        return loss_vs_bits(model, tok)


class single_thread:
    """with single_thread(): 里 torch 只用一个线程（小模型上多线程只添开销），出来时恢复。"""

    def __enter__(self) -> None:
        self.before = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc: object) -> None:
        torch.set_num_threads(self.before)


# ---------- 参数检查：不在文章里展示，输入不对时给出看得懂的错误 ----------


def check_weight(w: Tensor, group_size: int | None) -> None:
    """w 是二维浮点矩阵，每个数都是有限的；group_size 要么是 None，要么是能整除 d_in 的正整数。"""
    check_float("w", w)
    if w.dim() != 2:
        raise shape_error("w", "(d_out, d_in)，一个线性层的权重矩阵", w.shape,
                          "nn.Linear 的权重就是这个形状：layer.weight")
    if w.numel() == 0:
        raise ValueError(f"w 是空矩阵 {fmt(w.shape)}，没有可量化的权重")
    if w.device.type != "meta" and not torch.isfinite(w).all():
        raise ValueError(f"w 里有 {int(torch.isnan(w).sum())} 个 NaN、{int(torch.isinf(w).sum())} 个无穷大："
                         "缩放因子由最大的绝对值决定，一个无穷大就让整组的缩放因子变成 inf；先查查权重是怎么来的"
                         "（float16 放不下绝对值超过 65504 的数，转换时就成了 inf）")
    if group_size is not None:
        check_int("group_size", group_size, minimum=1)
        if w.size(1) % group_size != 0:
            raise ValueError(f"group_size = {group_size} 应能整除 d_in = {w.size(1)}：每行要正好切成整数个组")


def check_reciprocal(scales: Tensor) -> None:
    """量化时乘的是 1 / scale：scale 小到倒数超出浮点数的范围（float32 里 scale 要小于约 3e-39）时报错。"""
    if scales.device.type != "meta" and torch.isinf(1.0 / scales).any():
        raise ValueError(f"有一组权重小得出奇：缩放因子只有 {scales.min().item():.3g}，它的倒数超出了 {scales.dtype} "
                         "的范围，量化出的整数码会全是错的；这么小的权重可以先置为 0")


def check_codes(codes: Tensor, scales: Tensor, dtype: torch.dtype = torch.int8) -> None:
    """codes 是 quantize（int8）或 quantize_zero_point（uint8）返回的整数码，scales 是和它一起返回的缩放因子。"""
    check_tensor("codes", codes)
    check_float("scales", scales)
    if codes.dtype != dtype:
        maker = "quantize" if dtype == torch.int8 else "quantize_zero_point"
        kind = str(dtype).removeprefix("torch.")
        raise ValueError(f"codes 应是 {maker} 返回的 {kind} 整数码，收到 dtype={codes.dtype}")
    if codes.dim() != 2:
        raise shape_error("codes", "(d_out, d_in)", codes.shape)
    if codes.numel() == 0:
        raise ValueError(f"codes 是空矩阵 {fmt(codes.shape)}，没有可还原的整数码")
    d_out, d_in = codes.shape
    if scales.dim() != 2 or scales.size(0) != d_out or scales.size(1) == 0 or d_in % scales.size(1) != 0:
        raise shape_error("scales", f"(d_out, 组数) = ({d_out}, 组数)，组数整除 d_in = {d_in}", scales.shape,
                          "用 quantize 一起返回的那个 scales")


def check_zeros(zeros: Tensor, scales: Tensor) -> None:
    """零点和缩放因子一一对应：quantize_zero_point 一起返回的 uint8 张量，形状和 scales 相同。"""
    check_tensor("zeros", zeros)
    if zeros.dtype != torch.uint8 or zeros.shape != scales.shape:
        raise ValueError(f"zeros 应是 quantize_zero_point 一起返回的零点：uint8、形状和 scales 一样"
                         f" {fmt(scales.shape)}，收到 dtype={zeros.dtype}、形状 {fmt(zeros.shape)}")


def check_scheme(scheme: str) -> None:
    if scheme != "per_tensor":
        scheme_group_size(scheme)  # 名字不认识、组大小是 0 时它报错


def check_scale_count_args(d_out: int, d_in: int, scheme: str) -> None:
    """和 inference_cost.matrix_bytes 一样：每组的大小应能整除 d_in，不然不是整数个组。"""
    check_int("d_out", d_out, minimum=1)
    check_int("d_in", d_in, minimum=1)
    check_scheme(scheme)
    g = None if scheme == "per_tensor" else scheme_group_size(scheme)
    if g is not None and d_in % g != 0:
        raise ValueError(f"{scheme} 每 {g} 个一组，应能整除矩阵的 d_in = {d_in}：每行要正好切成整数个组")


def check_module(model: object) -> None:
    if not isinstance(model, nn.Module):
        raise ValueError(f"model 应是 torch.nn.Module（例如唐诗 GPT），收到 {type(model).__name__}")


def check_model(model: object) -> None:
    if not quantized_layers(model):
        raise ValueError("model 里没有 nn.Linear，没有要量化的权重")


def check_sweep_args(model: object, bits: object, schemes: object) -> None:
    """loss_vs_bits 的参数：bits 是若干个位宽（例如 (8, 4, 2)），schemes 是若干个分组方式的名字。"""
    check_model(model)
    if not isinstance(bits, (tuple, list)) or not bits:
        raise ValueError(f"bits 应是位宽的元组，例如 (8, 4, 2)；只量一个位宽也要写成 (4,)，收到 {bits!r}")
    for b in bits:
        qmax_of(b)
    if not isinstance(schemes, (tuple, list)) or not schemes:
        raise ValueError(f"schemes 应是分组方式的元组，例如 (\"per_channel\",)，收到 {schemes!r}")
    for scheme in schemes:
        check_scheme(scheme)


def check_tokenizer(tok: object) -> None:
    if not isinstance(tok, CharTokenizer):
        raise ValueError(f"tok 应是唐诗 GPT 的 CharTokenizer，收到 {type(tok).__name__}")


if __name__ == "__main__":
    torch.manual_seed(0)
    w = torch.randn(4, 8)
    codes, scales = quantize(w, bits=4, group_size=4)
    print("一个 4 × 8 的随机矩阵，4 比特、每 4 个一组：")
    print("整数码：\n", codes)
    print("缩放因子（4 行 × 2 组）：\n", scales)
    err = (dequantize(codes, scales) - w).abs()
    within = bool((err <= scales.repeat_interleave(4, dim=1) / 2 + 1e-7).all())
    print(f"还原后最大误差 {err.max().item():.4f}；每个元素的误差都不超过它那一组 scale 的一半：{within}")

    print("\n第一阶段的唐诗 GPT（读缓存，没有就现场训练，要一分钟左右）：")
    model, tok = tang_gpt()
    sweep = tang_sweep()
    print(f"不量化（float32）：验证集损失 {sweep['float32']:.4f} nat / 词元，模型 {sweep['float32_bytes']:,} 字节")
    for scheme in SCHEMES:
        cells = "  ".join(f"{b} 比特 {loss:.4f}" for b, loss in zip(sweep["bits"], sweep["loss"][scheme], strict=True))
        print(f"{SCHEME_NAMES[scheme]:<12}{cells}")
