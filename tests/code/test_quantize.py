"""code/quantize.py 和 code/inference_cost.py：对称 absmax 量化、模型量化、字节数。

参照有三种：PyTorch 自带的逐通道 int8 量化 torch.quantize_per_channel（qint8，scale = absmax/127，零点 0），
手算的小例子，以及本文件里按公式另写的实现。用到训练好的唐诗 GPT 的测试读构建产物（trained_artifacts），不训练。
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from inference_cost import (
    FORMATS,
    WeightFormat,
    decode_cost,
    llama_matrices,
    matrix_bytes,
    ridge_point,
    tang_matrices,
    tokens_per_second_bound,
)
from llama import LLAMA2_7B, LLAMA3_8B
from quantize import (
    absmax_scales,
    dequantize,
    dequantize_zero_point,
    fake_quantize,
    fake_quantize_scheme,
    fake_quantize_zero_point,
    loss_vs_bits,
    model_bytes,
    per_tensor_fake_quantize,
    qmax_of,
    quantize,
    quantize_model,
    quantize_zero_point,
    quantized_layers,
    scale_count,
    scheme_group_size,
    validation_windows,
)
from tiny_transformer import TinyConfig, TinyTransformer
from torch import nn

REPO = Path(__file__).resolve().parents[2]


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def torch_int8(w: torch.Tensor) -> torch.Tensor:
    """PyTorch 的逐通道 int8 量化（对称：零点 0，scale = 每行 absmax / 127），返回量化张量。"""
    scales = w.abs().amax(dim=1) / 127
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 这个版本把 qint8 这类量化张量标成了过时
        return torch.quantize_per_channel(w, scales, torch.zeros(w.size(0), dtype=torch.long), 0, torch.qint8)


# ---------- 和 PyTorch 对答案 ----------


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (64, 64), (192, 64), (300, 257)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_int8_per_channel_equals_torch_on_random_matrices(shape, seed) -> None:
    w = randn(*shape, seed=seed) * torch.rand(shape[0], 1, generator=torch.Generator().manual_seed(seed + 9)) * 3
    codes, scales = quantize(w, 8)
    theirs = torch_int8(w)
    assert codes.dtype == torch.int8
    assert torch.equal(codes, theirs.int_repr())
    assert torch.equal(dequantize(codes, scales), theirs.dequantize())


def test_int8_equals_torch_on_many_random_matrices() -> None:
    """20 个 512 × 512 的矩阵（五百多万个数）：乘倒数的写法和 PyTorch 一个码都不差。"""
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        w = torch.randn(512, 512, generator=gen) * torch.rand(512, 1, generator=gen) * 3
        codes, scales = quantize(w, 8)
        theirs = torch_int8(w)
        assert torch.equal(codes, theirs.int_repr())
        assert torch.equal(dequantize(codes, scales), theirs.dequantize())


@pytest.mark.usefixtures("trained_artifacts")
def test_int8_equals_torch_on_the_tang_gpt() -> None:
    from gpt_from_scratch import pretrained_gpt

    model, _, _ = pretrained_gpt(verbose=False)
    names = quantized_layers(model)
    assert len(names) == 17
    for name in names:
        w = model.get_submodule(name).weight.detach()
        codes, scales = quantize(w, 8)
        theirs = torch_int8(w)
        assert torch.equal(codes, theirs.int_repr()), name
        assert torch.equal(dequantize(codes, scales), theirs.dequantize()), name


def test_round_half_to_even_like_torch() -> None:
    """scale = 1（absmax 127）时 w / s 正好是 .5 的几个数：都舍到偶数，和 PyTorch 一样；「五入」会不同。"""
    w = torch.tensor([[127.0, 0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 126.5]])
    codes, scales = quantize(w, 8)
    assert scales.item() == 1.0
    assert codes.tolist() == [[127, 0, 2, 2, 0, -2, 4, 126]]
    assert torch.equal(codes, torch_int8(w).int_repr())
    half_up = torch.floor(w + 0.5)
    assert not torch.equal(half_up.to(torch.int8), codes)


# ---------- 手算的例子和公式 ----------


def test_hand_example_4bit() -> None:
    """[1, -2, 0.5, 4]，4 比特：s = 4/7，w/s = 1.75, -3.5, 0.875, 7 → 2, -4（五成双）, 1, 7。"""
    w = torch.tensor([[1.0, -2.0, 0.5, 4.0]], dtype=torch.float64)
    codes, scales = quantize(w, 4)
    assert scales.item() == pytest.approx(4 / 7)
    assert codes.tolist() == [[2, -4, 1, 7]]
    assert dequantize(codes, scales).tolist()[0] == pytest.approx([8 / 7, -16 / 7, 4 / 7, 4.0])


@pytest.mark.parametrize(("bits", "qmax"), [(8, 127), (6, 31), (4, 7), (3, 3), (2, 1)])
def test_qmax(bits, qmax) -> None:
    assert qmax_of(bits) == qmax


@pytest.mark.parametrize("bits", [8, 6, 4, 3, 2])
@pytest.mark.parametrize("group", [None, 4, 16])
def test_error_at_most_half_a_step_and_codes_in_range(bits, group) -> None:
    w = randn(12, 32, seed=bits) * 2
    codes, scales = quantize(w, bits, group)
    g = 32 if group is None else group
    assert scales.shape == (12, 32 // g)
    q = 2 ** (bits - 1) - 1
    assert codes.abs().max().item() == q  # 每组最大的那个正好到 ±qmax
    err = (dequantize(codes, scales) - w).abs()
    assert (err <= scales.repeat_interleave(g, dim=1) / 2 + 1e-6).all()


def test_group_wise_is_per_channel_on_the_cut_rows() -> None:
    """每 G 个一组 = 把每行切成 G 个一段、每段当作一行做逐通道量化（这里按公式另写一遍）。"""
    w = randn(6, 48, seed=3)
    G, bits = 16, 4
    rows = w.reshape(-1, G)
    s = rows.abs().amax(dim=1, keepdim=True) / 7
    expected = (torch.round(rows * (1.0 / s)).clamp(-7, 7) * s).reshape(6, 48)
    assert torch.equal(fake_quantize(w, bits, G), expected)


def test_per_tensor_uses_one_scale() -> None:
    w = randn(5, 8, seed=4)
    out = per_tensor_fake_quantize(w, 4)
    s = w.abs().max() / 7
    assert torch.allclose(out, torch.round(w / s).clamp(-7, 7) * s)
    assert len(torch.unique(out)) <= 15


def test_all_zero_group_stays_zero() -> None:
    w = torch.zeros(2, 8)
    w[1, :4] = torch.tensor([1.0, -1.0, 0.5, 0.0])
    codes, scales = quantize(w, 4, 4)
    assert torch.isfinite(scales).all()
    assert torch.equal(dequantize(codes, scales)[0], torch.zeros(8))
    assert torch.equal(dequantize(codes, scales)[1, 4:], torch.zeros(4))


def test_fewer_bits_more_error() -> None:
    w = randn(32, 64, seed=5)
    errs = [(fake_quantize(w, b) - w).abs().mean().item() for b in (8, 6, 4, 3, 2)]
    assert errs == sorted(errs)


# ---------- 模型 ----------


def small_gpt() -> TinyTransformer:
    torch.manual_seed(0)
    return TinyTransformer(TinyConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=2, max_len=8, mlp=True,
                                      positions="learned")).eval()


def test_quantize_model_touches_only_linear_weights() -> None:
    model = small_gpt()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    q = quantize_model(model, 4, "group16")
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), f"原模型的 {k} 被改了"
    linear_weights = {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, nn.Linear)}
    assert len(linear_weights) == 2 * 4 + 1
    for k, v in q.state_dict().items():
        if k in linear_weights:
            assert not torch.equal(v, before[k]), k
            layer_in = v.size(1)
            assert torch.equal(v, fake_quantize(before[k], 4, 16 if layer_in % 16 == 0 else None)), k
        else:
            assert torch.equal(v, before[k]), k


def test_model_bytes_by_hand() -> None:
    """d = 16、2 层、词表 20：线性层的权重 2 × (48·16 + 16·16 + 64·16 + 16·64) + 20·16 个。"""
    model = small_gpt()
    linear = 2 * (48 * 16 + 16 * 16 + 64 * 16 + 16 * 64) + 20 * 16
    total = sum(p.numel() for p in model.parameters())
    assert model_bytes(model)["total"] == 4 * total
    per_channel_scales = 2 * (48 + 16 + 64 + 16) + 20
    assert model_bytes(model, 4, "per_channel") == {
        "weights": linear // 2, "scales": 4 * per_channel_scales, "other": 4 * (total - linear),
        "total": linear // 2 + 4 * per_channel_scales + 4 * (total - linear)}
    assert model_bytes(model, 8, "per_tensor")["scales"] == 4 * 9
    assert model_bytes(model, 3, "group16")["scales"] == 4 * linear // 16
    assert model_bytes(model, 3, "group16")["weights"] == math.ceil(linear * 3 / 8)


# ---------- 每个词元读多少字节 ----------


def test_llama_matrices_match_published_sizes() -> None:
    """Llama 2 7B 有 6,738,415,616 个参数（Meta 的论文与模型卡写 7B），去掉词嵌入和 RMSNorm 的增益就是要读的矩阵。"""
    assert LLAMA2_7B.n_layers == 32
    total = sum(o * i for o, i in llama_matrices(LLAMA2_7B))
    embed, norms = 32000 * 4096, (2 * 32 + 1) * 4096
    assert total + embed + norms == 6_738_415_616
    total3 = sum(o * i for o, i in llama_matrices(LLAMA3_8B))
    assert total3 + 128256 * 4096 + (2 * 32 + 1) * 4096 == 8_030_261_248


def test_bytes_and_intensity() -> None:
    shapes = [(8, 64), (64, 32)]  # 512 + 2048 = 2560 个权重
    fp16 = WeightFormat("fp16", 16)
    assert matrix_bytes(shapes, fp16) == 2 * 2560
    int8 = WeightFormat("int8", 8)
    assert matrix_bytes(shapes, int8) == 2560 + 4 * (8 + 64)  # 每行一个 float32 缩放因子
    int4 = WeightFormat("int4", 4, group_size=32)
    assert matrix_bytes(shapes, int4) == 1280 + 4 * (8 * 2 + 64 * 1)  # 每 32 个一组
    assert int4.bits_per_weight() == 5
    assert matrix_bytes([(3, 3)], WeightFormat("int3", 3)) == math.ceil(9 * 3 / 8) + 4 * 3
    cost = decode_cost(shapes, fp16, batch_size=3)
    assert cost["flops"] == 2 * 3 * 2560 and cost["intensity"] == 3 * 2 * 2560 / (2 * 2560)
    with pytest.raises(ValueError, match="整除"):
        matrix_bytes([(8, 48)], int4)
    assert [f.name for f in FORMATS] == ["fp32", "fp16", "int8", "int4"]


def test_tang_matrices_agree_with_kv_cache_weight_bytes() -> None:
    from kv_cache import weight_bytes

    cfg = TinyConfig(vocab_size=3009, d_model=64, n_heads=4, n_layers=4, max_len=64, mlp=True, positions="learned")
    assert matrix_bytes(tang_matrices(cfg), WeightFormat("fp16", 16)) == weight_bytes(cfg, 2)


# ---------- 错误的输入 ----------


@pytest.mark.parametrize(("call", "words"), [
    (lambda: quantize(torch.randn(4, 8), 1), "bits"),
    (lambda: quantize(torch.randn(4, 8), 9), "2 到 8"),
    (lambda: quantize(torch.randn(4, 8), 4, 3), "整除"),
    (lambda: quantize(torch.randn(8), 4), "(d_out, d_in)"),
    (lambda: quantize(torch.ones(4, 8, dtype=torch.long), 4), "浮点"),
    (lambda: quantize(torch.randn(4, 8), 4, 0), "group_size"),
    (lambda: dequantize(torch.zeros(4, 8), torch.ones(4, 1)), "int8"),
    (lambda: dequantize(torch.zeros(4, 8, dtype=torch.int8), torch.ones(4, 3)), "scales"),
    (lambda: quantize_model(small_gpt(), 4, "group7x"), "scheme"),
    (lambda: quantize_model("模型", 4), "nn.Module"),
    (lambda: model_bytes(small_gpt(), 12), "2 到 8"),
    (lambda: matrix_bytes([], WeightFormat("fp16", 16)), "shapes"),
    (lambda: decode_cost([(4, 4)], WeightFormat("fp16", 16), 0), "batch_size"),
    (lambda: scale_count(64, 100, "group32"), "应能整除矩阵的 d_in = 100"),
    (lambda: scale_count(-64, 96, "per_channel"), "d_out 应为不小于 1"),
    (lambda: scale_count(64, -96, "per_tensor"), "d_in 应为不小于 1"),
    (lambda: scale_count(64, 96, "group0"), "组大小应至少为 1"),
    (lambda: scale_count(64, 96, 32), "scheme 应是"),
    (lambda: fake_quantize_scheme(torch.randn(4, 8), 4, 32), "scheme 应是"),
    (lambda: fake_quantize_scheme(torch.randn(4, 8), 4, None), "scheme 应是"),
    (lambda: WeightFormat("int4", 4, group_size=0), "group_size 应为 None"),
    (lambda: WeightFormat("int4", 4, group_size=2.5), "group_size 应为 None"),
    (lambda: WeightFormat("int0", 0), "bits 应为不小于 1"),
    (lambda: WeightFormat("int4", 4.0), "bits 应为整数"),
    (lambda: WeightFormat("int4", 4, group_size=32, scale_bytes=0), "scale_bytes"),
    (lambda: WeightFormat("", 4), "name 应是非空的字符串"),
    (lambda: ridge_point(312e12, 0), "bandwidth 应为有限的正数"),
    (lambda: ridge_point(float("inf")), "peak_flops 应为有限的正数"),
    (lambda: tokens_per_second_bound("a"), "nbytes 应为有限的正数"),
    (lambda: tokens_per_second_bound(0), "nbytes 应为有限的正数"),
    (lambda: llama_matrices(None), "MiniLlamaConfig"),
    (lambda: tang_matrices(None), "TinyConfig"),
])
def test_bad_input_raises_a_readable_error(call, words) -> None:
    with pytest.raises(ValueError, match=None) as info:
        call()
    assert words in str(info.value)


@pytest.mark.parametrize("fmt", ["int4", None, 4, ("int4", 4, 32)])
def test_fmt_must_be_a_weight_format(fmt) -> None:
    """以前传字符串 "int4" 得到 AttributeError（'str' object has no attribute 'bits'）。"""
    for call in (lambda: matrix_bytes([(8, 64)], fmt), lambda: decode_cost([(8, 64)], fmt)):
        with pytest.raises(ValueError, match=r"fmt 应为 WeightFormat.*fp32、fp16、int8、int4"):
            call()
    assert decode_cost([(8, 64)], FORMATS[3])["bytes"] == matrix_bytes([(8, 64)], FORMATS[3]) == 8 * 64 // 2 + 8 * 2 * 4


def test_scale_count_agrees_with_matrix_bytes() -> None:
    """每 32 个一组：d_in = 96 时两边数出同样多的缩放因子；d_in = 100 切不成整数个组，两边都报错。"""
    int4 = WeightFormat("int4", 4, group_size=32)
    assert scale_count(64, 96, "group32") == 64 * 3
    assert matrix_bytes([(64, 96)], int4) == 64 * 96 // 2 + int4.scale_bytes * scale_count(64, 96, "group32")
    assert scale_count(64, 96, "per_channel") == 64 and scale_count(64, 96, "per_tensor") == 1
    for call in (lambda: scale_count(64, 100, "group32"), lambda: matrix_bytes([(64, 100)], int4)):
        with pytest.raises(ValueError, match="整除"):
            call()


def test_absmax_scales_shape() -> None:
    assert absmax_scales(torch.randn(3, 12), 4, 4).shape == (3, 3)


def test_runs_on_its_own() -> None:
    """python code/inference_cost.py 单独运行（quantize.py 单独运行要读训练好的模型，在 claims 测试里跑）。"""
    out = subprocess.run([sys.executable, str(REPO / "code" / "inference_cost.py")], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert "同一批矩阵： True" in out and "Llama 2 7B" in out


# ---------- 半精度的权重、太小太大的数、NaN（以前 float16 的缩放因子下溢，误差接近 100%） ----------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("magnitude", [1e-6, 1e-4, 1e-3, 1.0, 6e4])
@pytest.mark.parametrize("bits", [8, 4, 2])
def test_half_precision_weights_quantize_as_well_as_float32(dtype, magnitude, bits) -> None:
    """半精度的权重（绝对值最大正好是 magnitude）和它转成 float32 以后量化，得到的整数码、缩放因子相同，
    还原误差不超过半格。以前 float16 里 max|w| / 127 落进精度很差的次正规数（1e-3 时误差是最大值的 98%），
    1e-6 时缩放因子下溢成 0，整个矩阵还原成 0。"""
    w = ((torch.rand(6, 32, generator=torch.Generator().manual_seed(bits)) * 2 - 1) * magnitude).to(dtype)
    w[0, 0] = magnitude
    codes, scales = quantize(w, bits)
    codes32, scales32 = quantize(w.float(), bits)
    assert scales.dtype == torch.float32 and torch.equal(scales, scales32) and torch.equal(codes, codes32)
    err = (dequantize(codes, scales) - w.float()).abs()
    assert (err <= scales / 2 * (1 + 1e-6)).all()
    fq = fake_quantize(w, bits)
    assert fq.dtype == dtype and torch.isfinite(fq).all()
    assert fq.float().abs().max().item() == pytest.approx(w.float().abs().max().item(), rel=1e-2)


def test_quantize_model_keeps_a_half_precision_model_half() -> None:
    model = small_gpt().half()
    q = quantize_model(model, 4, "per_channel")
    for name in quantized_layers(model):
        before, after = model.get_submodule(name).weight, q.get_submodule(name).weight
        assert after.dtype == torch.float16
        assert torch.equal(after, fake_quantize(before.float(), 4).half()), name


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_nan_or_inf_weights_are_refused(bad) -> None:
    """以前 NaN 悄悄变成整数码 0（其余的照常量化），inf 让整行的缩放因子变成 inf。"""
    w = torch.randn(3, 8)
    w[1, 2] = bad
    for call in (lambda: quantize(w, 8), lambda: quantize_zero_point(w, 8), lambda: per_tensor_fake_quantize(w, 4)):
        with pytest.raises(ValueError, match=r"NaN.*无穷大"):
            call()


def test_a_scale_too_small_for_its_reciprocal_is_refused() -> None:
    """float32 里 max|w| = 1e-39（次正规数）时，scale = 1e-39 / 127，1 / scale 溢出成 inf：以前码全是 ±127。"""
    w = torch.tensor([[1e-39, -5e-40, 0.0, 2e-40]])
    assert torch.isinf(1.0 / (w.abs().max() / 127))
    with pytest.raises(ValueError, match=r"倒数超出了 torch\.float32 的范围"):
        quantize(w, 8)
    assert torch.equal(quantize(w.double(), 8)[0], torch.tensor([[127, -64, 0, 25]], dtype=torch.int8))


# ---------- 带零点的量化：和 PyTorch 的 quint8 对答案 ----------


def torch_uint8(w: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.quantize_per_channel(w, scales, zeros.long(), 0, torch.quint8)


@pytest.mark.parametrize("seed", range(5))
def test_zero_point_int8_equals_torch_quint8(seed) -> None:
    """逐通道 8 比特：scale = (max - min) / 255，零点 = round(-min / scale)（范围先把 0 包进来），
    PyTorch 的 quantize_per_channel（quint8）拿同样的 scale 和零点，整数码、还原值都逐位相同。"""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(64, 256, generator=gen) * torch.rand(64, 1, generator=gen) * 3 + torch.randn(64, 1, generator=gen)
    w[5] = w[5].abs()  # 一行全是正数：最小值取 0，零点是 0
    codes, scales, zeros = quantize_zero_point(w, 8)
    lo, hi = w.amin(dim=1).clamp(max=0), w.amax(dim=1).clamp(min=0)
    assert torch.equal(scales[:, 0], (hi - lo) / 255) and zeros[5, 0] == 0
    theirs = torch_uint8(w, scales[:, 0], zeros[:, 0])
    assert codes.dtype == torch.uint8 and torch.equal(codes, theirs.int_repr())
    assert torch.equal(dequantize_zero_point(codes, scales, zeros), theirs.dequantize())


def test_zero_point_hand_example() -> None:
    """[-1, 0, 0.5, 2]，2 比特：范围 [-1, 2] 分 3 格，s = 1，零点 1；w/s + 1 = 0, 1, 1.5, 3 → 0, 1, 2（五成双）, 3。"""
    w = torch.tensor([[-1.0, 0.0, 0.5, 2.0]])
    codes, scales, zeros = quantize_zero_point(w, 2)
    assert scales.item() == 1.0 and zeros.item() == 1
    assert codes.tolist() == [[0, 1, 2, 3]]
    assert dequantize_zero_point(codes, scales, zeros).tolist() == [[-1.0, 0.0, 1.0, 2.0]]


@pytest.mark.parametrize("bits", [8, 4, 3, 2])
@pytest.mark.parametrize("group", [None, 8])
def test_zero_point_uses_every_code_and_keeps_zero(bits, group) -> None:
    """每组的最小值对上码 0、最大值对上最大的码（2^b 个码都用得上，对称量化只用 2^b - 1 个）；
    0 还原出来正好是 0；误差不超过半格；全是 0 的一组还原成 0。"""
    w = randn(6, 32, seed=bits) + 0.5
    w[0, :] = 0.0
    w[1, 3] = 0.0
    codes, scales, zeros = quantize_zero_point(w, bits, group)
    g = 32 if group is None else group
    back = dequantize_zero_point(codes, scales, zeros)
    assert torch.equal(back[0], torch.zeros(32)) and back[1, 3] == 0
    assert int(codes[1:].max()) == 2**bits - 1
    assert (back - w).abs().le(scales.repeat_interleave(g, dim=1) / 2 * (1 + 1e-6)).all()
    assert fake_quantize_zero_point(w, bits, group).dtype == w.dtype


def test_zero_point_beats_symmetric_on_a_one_sided_row() -> None:
    """全是正数的一行：对称量化的负半边码一个也用不上，带零点的把 2^b 个码都放在 [0, max] 上，误差小一半以上。"""
    w = torch.rand(4, 64, generator=torch.Generator().manual_seed(0))
    sym = (fake_quantize(w, 4) - w).abs().mean()
    asym = (fake_quantize_zero_point(w, 4) - w).abs().mean()
    assert asym < sym / 2


# ---------- 粗心的输入：看得懂的 ValueError（以前有的是 AttributeError、RuntimeError，或悄悄算出错的结果） ----------


@pytest.mark.parametrize(("call", "words"), [
    (lambda: quantize(3.0, 4), "w 应为 torch.Tensor"),
    (lambda: quantize([[1.0, 2.0]], 4), "w 应为 torch.Tensor"),
    (lambda: quantize(torch.ones(2, 2, dtype=torch.int32), 4), "w 应为浮点张量"),
    (lambda: quantize(torch.zeros(0, 4), 4), "空矩阵"),
    (lambda: quantize(torch.randn(4, 8), "4"), "bits 应为整数"),
    (lambda: quantize(torch.randn(4, 8), 4.0), "bits 应为整数"),
    (lambda: quantize(torch.randn(4, 8), 4, "4"), "group_size 应为整数"),
    (lambda: quantize(torch.randn(4, 8), 4, 16), "group_size = 16 应能整除 d_in = 8"),
    (lambda: dequantize(3, torch.ones(2, 1)), "codes 应为 torch.Tensor"),
    (lambda: dequantize(torch.zeros(0, 4, dtype=torch.int8), torch.ones(0, 1)), "codes 是空矩阵"),
    (lambda: dequantize(torch.zeros(2, 0, dtype=torch.int8), torch.ones(2, 1)), "codes 是空矩阵"),
    (lambda: dequantize(torch.zeros(2, 4, dtype=torch.uint8), torch.ones(2, 1)), "codes 应是 quantize 返回的 int8"),
    (lambda: quantize_zero_point(torch.randn(4, 8), 1), "bits 应为不小于 2"),
    (lambda: quantize_zero_point(torch.randn(4, 8), 9), "2 到 8"),
    (lambda: quantize_zero_point(torch.randn(4, 8), "8"), "bits 应为整数"),
    (lambda: dequantize_zero_point(torch.zeros(2, 4, dtype=torch.int8), torch.ones(2, 1),
                                   torch.zeros(2, 1, dtype=torch.uint8)), "quantize_zero_point 返回的 uint8"),
    (lambda: dequantize_zero_point(torch.zeros(2, 4, dtype=torch.uint8), torch.ones(2, 1), torch.zeros(2, 1)),
     "zeros 应是 quantize_zero_point 一起返回的零点"),
    (lambda: dequantize_zero_point(torch.zeros(2, 4, dtype=torch.uint8), torch.ones(2, 1),
                                   torch.zeros(2, 2, dtype=torch.uint8)), "形状和 scales 一样"),
    (lambda: quantized_layers("模型"), "model 应是 torch.nn.Module"),
    (lambda: scheme_group_size("group0"), "组大小应至少为 1"),
    (lambda: scheme_group_size(32), "scheme 应是"),
    (lambda: model_bytes(nn.Linear(4, 4), 16), "2 到 8"),
    (lambda: model_bytes(nn.Linear(4, 4), 4, scale_bytes=0), "scale_bytes"),
    (lambda: loss_vs_bits(small_gpt(), None, bits=4), "bits 应是位宽的元组"),
    (lambda: loss_vs_bits(small_gpt(), None, bits=(4, 12)), "2 到 8"),
    (lambda: loss_vs_bits(small_gpt(), None, schemes="per_channel"), "schemes 应是分组方式的元组"),
    (lambda: loss_vs_bits(small_gpt(), None, schemes=("group7x",)), "scheme 应是"),
    (lambda: validation_windows("字"), "tok 应是唐诗 GPT 的 CharTokenizer"),
])
def test_careless_input_gets_a_readable_error(call, words) -> None:
    with pytest.raises(ValueError) as info:
        call()
    assert words in str(info.value)


def test_tang_loss_checks_its_arguments_before_loading_the_model(monkeypatch) -> None:
    """以前 tang_loss(1) 先读（没有缓存时先训练）唐诗 GPT，一分钟后才报 bits 不对。"""
    import quantize

    def no_model():
        raise AssertionError("不该先读模型")

    monkeypatch.setattr(quantize, "tang_gpt", no_model)
    for call, words in ((lambda: quantize.tang_loss(1), "bits 应为不小于 2"),
                        (lambda: quantize.tang_loss(4, "group7x"), "scheme 应是")):
        with pytest.raises(ValueError, match=words):
            call()
