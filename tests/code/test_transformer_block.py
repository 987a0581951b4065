"""code/transformer_block.py 的测试：装入相同权重后与 torch.nn.TransformerEncoderLayer 对照，
参数量与 PyTorch 模块的 sum(p.numel()) 对照，计算量与 torch.utils.flop_counter 对照。"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from attention import causal_mask, padding_mask
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from transformer_block import LAYOUTS, TransformerBlock, block_flops, block_param_count, parameter_breakdown

REPO = Path(__file__).resolve().parents[2]


def make_pair(d_model: int, n_heads: int, layout: str, bias: bool = True, seed: int = 0):
    """我们的块与 PyTorch 的 TransformerEncoderLayer，权重完全相同（float64）。"""
    torch.manual_seed(seed)
    ours = TransformerBlock(d_model, n_heads, layout=layout, bias=bias).double()
    ref = nn.TransformerEncoderLayer(
        d_model, n_heads, dim_feedforward=4 * d_model, dropout=0.0, activation="gelu",
        batch_first=True, norm_first=layout == "pre", bias=bias, dtype=torch.float64,
    )
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        # 归一化的增益和偏置改成随机值：初始的 1 和 0 会掩盖「两个归一化接反了」这类错误
        for norm in (ours.norm1, ours.norm2):
            norm.gain.copy_(1 + 0.3 * torch.randn(d_model, generator=g, dtype=torch.float64))
            if bias:
                norm.bias.copy_(0.3 * torch.randn(d_model, generator=g, dtype=torch.float64))
        pairs = [
            (ref.self_attn.in_proj_weight, ours.attn.qkv.weight),
            (ref.self_attn.out_proj.weight, ours.attn.out.weight),
            (ref.linear1.weight, ours.ffn.up.weight),
            (ref.linear2.weight, ours.ffn.down.weight),
            (ref.norm1.weight, ours.norm1.gain),
            (ref.norm2.weight, ours.norm2.gain),
        ]
        if bias:
            pairs += [
                (ref.self_attn.in_proj_bias, ours.attn.qkv.bias),
                (ref.self_attn.out_proj.bias, ours.attn.out.bias),
                (ref.linear1.bias, ours.ffn.up.bias),
                (ref.linear2.bias, ours.ffn.down.bias),
                (ref.norm1.bias, ours.norm1.bias),
                (ref.norm2.bias, ours.norm2.bias),
            ]
        for dst, src in pairs:
            dst.copy_(src)
    return ours, ref


def float_causal_mask(T: int) -> torch.Tensor:
    """PyTorch 自己的因果掩码：加到分数上的浮点矩阵，未来位置为 -inf（与我们的 bool 掩码独立生成）。"""
    return nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)


@pytest.mark.parametrize("layout", ["pre", "post"])
@pytest.mark.parametrize(("d_model", "n_heads", "bias"), [(16, 4, True), (24, 3, False), (8, 1, True)])
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_matches_torch_encoder_layer(layout, d_model, n_heads, bias, mode):
    ours, ref = make_pair(d_model, n_heads, layout, bias)
    getattr(ours, mode)()
    getattr(ref, mode)()
    B, T = 3, 7
    x = torch.randn(B, T, d_model, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), ref(x), atol=1e-10, rtol=1e-10)
        # 因果：我们的 bool 掩码（True 为屏蔽） 对 PyTorch 的浮点掩码（-inf 为屏蔽）
        torch.testing.assert_close(ours(x, mask=causal_mask(T)), ref(x, src_mask=float_causal_mask(T)),
                                   atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(ours(x, mask=causal_mask(T)), ref(x, src_mask=causal_mask(T), is_causal=True),
                                   atol=1e-10, rtol=1e-10)


def test_padding_mask_matches_key_padding_mask():
    ours, ref = make_pair(16, 4, "pre", seed=3)
    B, T = 3, 6
    x = torch.randn(B, T, 16, dtype=torch.float64)
    lengths = torch.tensor([6, 4, 2])
    key_padding = torch.arange(T)[None, :] >= lengths[:, None]  # (B, T)，独立于 padding_mask 写出
    with torch.no_grad():
        y = ours(x, mask=padding_mask(lengths, T))
        y_ref = ref(x, src_key_padding_mask=key_padding)
    for b, n in enumerate(lengths.tolist()):  # 填充位置的输出没有意义（PyTorch 的快速路径会把它置 0），只比真实位置
        torch.testing.assert_close(y[b, :n], y_ref[b, :n], atol=1e-10, rtol=1e-10)


def test_gradients_match_torch():
    ours, ref = make_pair(16, 2, "pre", seed=4)
    x = torch.randn(2, 5, 16, dtype=torch.float64, requires_grad=True)
    g = torch.randn(2, 5, 16, dtype=torch.float64)
    (gx,) = torch.autograd.grad((ours(x, mask=causal_mask(5)) * g).sum(), x)
    (gx_ref,) = torch.autograd.grad((ref(x, src_mask=float_causal_mask(5)) * g).sum(), x)
    torch.testing.assert_close(gx, gx_ref, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("norm", "ffn"), [("layer", "gelu"), ("rms", "swiglu")])
def test_causal(layout, norm, ffn):
    """因果掩码下，第 t 个位置的输出与 t 之后的词元无关。"""
    torch.manual_seed(5)
    block = TransformerBlock(16, 4, layout=layout, norm=norm, ffn=ffn).double()
    T = 8
    x = torch.randn(2, T, 16, dtype=torch.float64)
    for t in range(T - 1):
        x2 = x.clone()
        x2[:, t + 1:] = torch.randn(2, T - t - 1, 16, dtype=torch.float64)
        with torch.no_grad():
            y, y2 = block(x, mask=causal_mask(T)), block(x2, mask=causal_mask(T))
        torch.testing.assert_close(y[:, : t + 1], y2[:, : t + 1], atol=1e-12, rtol=0)
        assert not torch.allclose(y[:, t + 1:], y2[:, t + 1:])


def test_layouts_compute_what_they_say():
    """四种拼法与按定义一步步写出的公式一致（子层与归一化直接调用块自己的模块）。"""
    torch.manual_seed(6)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    m = causal_mask(5)
    for layout in LAYOUTS:
        b = TransformerBlock(8, 2, layout=layout).double()
        def attn(h, b=b):
            return b.attn(h, mask=m)
        with torch.no_grad():
            if layout == "pre":
                h = x + attn(b.norm1(x))
                expected = h + b.ffn(b.norm2(h))
            elif layout == "post":
                h = b.norm1(x + attn(x))
                expected = b.norm2(h + b.ffn(h))
            elif layout == "residual":
                h = x + attn(x)
                expected = h + b.ffn(h)
            else:
                expected = b.ffn(attn(x))
            torch.testing.assert_close(b(x, mask=m), expected, atol=0, rtol=0)


CONFIGS = [
    dict(d_model=16, n_heads=4),
    dict(d_model=48, n_heads=6, bias=False),
    dict(d_model=32, n_heads=2, norm="rms", ffn="swiglu", bias=False),
    dict(d_model=30, n_heads=5, norm="rms", ffn="swiglu", bias=True),
    dict(d_model=24, n_heads=4, ffn="swiglu", d_ff=50),
    dict(d_model=24, n_heads=4, d_ff=40, norm="layer"),
    dict(d_model=16, n_heads=4, layout="post"),
    dict(d_model=16, n_heads=4, layout="residual"),
    dict(d_model=16, n_heads=4, layout="plain", ffn="swiglu"),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_param_count_formula_matches_module(cfg):
    cfg = dict(cfg)
    n_heads = cfg.pop("n_heads")
    block = TransformerBlock(n_heads=n_heads, **cfg)
    counted = parameter_breakdown(block)
    assert counted == block_param_count(**cfg)
    assert sum(counted.values()) == sum(p.numel() for p in block.parameters())  # 三部分没有漏掉任何参数


@pytest.mark.parametrize(("d_model", "n_heads", "bias"), [(768, 12, True), (64, 4, False), (512, 8, True)])
@pytest.mark.parametrize("norm_first", [True, False])
def test_param_count_matches_torch_encoder_layer(d_model, n_heads, bias, norm_first):
    ref = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=4 * d_model, bias=bias,
                                     norm_first=norm_first, device="meta")
    layout = "pre" if norm_first else "post"
    assert sum(block_param_count(d_model, layout=layout, bias=bias).values()) == sum(
        p.numel() for p in ref.parameters())


def test_gpt2_small_block_and_model():
    """GPT-2 small：每块 12·d² + 13·d；12 块加上词嵌入、位置嵌入和最后的 LayerNorm 共 124,439,808 个参数。"""
    d = 768
    per_block = sum(block_param_count(d).values())
    assert per_block == 12 * d * d + 13 * d == 7_087_872
    vocab, n_ctx = 50257, 1024
    assert 12 * per_block + vocab * d + n_ctx * d + 2 * d == 124_439_808


@pytest.mark.parametrize(("d_model", "n_heads", "T", "ffn"), [(64, 4, 10, "gelu"), (48, 6, 7, "swiglu"),
                                                            (32, 2, 33, "gelu")])
def test_flops_match_flop_counter(d_model, n_heads, T, ffn):
    block = TransformerBlock(d_model, n_heads, ffn=ffn)
    x = torch.randn(1, T, d_model, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        y = block(x, mask=causal_mask(T))
    formula = block_flops(d_model, T, ffn=ffn)
    assert counter.get_total_flops() == sum(formula.values())
    per_module = {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}
    assert per_module["TransformerBlock.ffn"] == formula["ffn"]
    assert per_module["TransformerBlock.attn.qkv"] + per_module["TransformerBlock.attn.out"] == formula[
        "attention_proj"]
    with FlopCounterMode(display=False) as backward:
        y.sum().backward()
    assert backward.get_total_flops() == 2 * counter.get_total_flops()  # 反向：对输入、对权重各一次


def test_flops_per_token_is_twice_the_matrix_parameters_plus_attention():
    d, T = 96, 40
    weights = sum(block_param_count(d, bias=False).values()) - 2 * d  # 去掉两个 LayerNorm 的增益（无偏置时各 d 个）
    assert sum(block_flops(d, T).values()) == T * 2 * weights + 4 * T * T * d


def test_meta_device_counts():
    """在 meta 设备上建的块（图里用它数 d_model = 4096 的参数）数出来的参数与公式一致：ceil(8·4096/3) = 10923。"""
    with torch.device("meta"):
        block = TransformerBlock(4096, 32, norm="rms", ffn="swiglu", bias=False)
    expected = 4 * 4096**2 + 3 * 4096 * 10923 + 2 * 4096
    assert sum(parameter_breakdown(block).values()) == expected
    assert sum(block_param_count(4096, norm="rms", ffn="swiglu", bias=False).values()) == expected


def test_wrong_input_shapes_raise():
    block = TransformerBlock(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"x 的形状应为 \(B, T, d_model\).*d_model = 16.*收到 \(5, 16\).*x\[None\]"):
        block(x[0])
    with pytest.raises(ValueError, match=r"x 的形状应为 \(B, T, d_model\).*收到 \(2, 5, 8\)"):
        block(torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match="x 应为浮点张量"):
        block(torch.ones(2, 5, 16, dtype=torch.long))


def test_wrong_masks_raise():
    block = TransformerBlock(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match="mask 应为 bool 张量"):
        block(x, mask=causal_mask(5).float())
    with pytest.raises(ValueError, match=r"mask 的形状应为 \(T, T\) = \(5, 5\)，收到 \(2, 5\).*padding_mask"):
        block(x, mask=torch.zeros(2, 5, dtype=torch.bool))  # (B, T) 的按键填充掩码
    with pytest.raises(ValueError, match=r"mask 的形状应为.*\(2, 4, 5, 5\).*收到 \(3, 1, 1, 5\)"):
        block(x, mask=torch.zeros(3, 1, 1, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask 的形状应为.*收到 \(6, 6\)"):
        block(x, mask=causal_mask(6))
    with pytest.raises(ValueError, match=r"mask 的形状应为.*收到 \(4, 5, 5\).*四维"):
        block(torch.randn(4, 5, 16), mask=torch.zeros(4, 5, 5, dtype=torch.bool))  # B == n_heads 时最容易算错
    # 合法的形状都能用
    for mask in (causal_mask(5), padding_mask(torch.tensor([5, 3]), 5), torch.zeros(2, 4, 5, 5, dtype=torch.bool),
                 causal_mask(5) | padding_mask(torch.tensor([5, 3]), 5)):
        assert block(x, mask=mask).shape == x.shape


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="d_model = 10 应能被 n_heads = 4 整除"):
        TransformerBlock(10, 4)
    with pytest.raises(ValueError, match="layout"):
        TransformerBlock(16, 4, layout="sandwich")
    with pytest.raises(ValueError, match="kind"):
        TransformerBlock(16, 4, norm="batch")
    with pytest.raises(ValueError, match="kind"):
        TransformerBlock(16, 4, ffn="relu")
    with pytest.raises(ValueError, match="seq_len"):
        block_flops(16, 0)
    with pytest.raises(ValueError, match="ffn 只能是"):
        block_param_count(16, ffn="relu")
    with pytest.raises(ValueError, match="norm 只能是"):
        block_param_count(16, norm="batch")
    with pytest.raises(ValueError, match="layout 只能是"):
        block_param_count(16, layout="sandwich")
    with pytest.raises(ValueError, match="ffn 只能是"):
        block_flops(16, 4, ffn="geglu")


@pytest.mark.parametrize("d_ff", [-10, 0, 2.5, True, "256"])
def test_bad_d_ff_raises(d_ff):
    """以前 d_ff = -10 悄悄数出负的参数量，d_ff = 0 数出前馈网络 0 次运算。"""
    with pytest.raises(ValueError, match="d_ff 应为"):
        block_param_count(64, d_ff=d_ff)
    with pytest.raises(ValueError, match="d_ff 应为"):
        block_flops(64, 8, d_ff=d_ff)
    with pytest.raises(ValueError, match="d_ff 应为"):
        block_param_count(64, d_ff, ffn="swiglu")


def test_explicit_d_ff_still_counts():
    assert block_param_count(64, d_ff=256) == block_param_count(64)
    assert block_flops(64, 8, d_ff=1)["ffn"] == 2 * 8 * 64 * 1 * 2


def test_runs_on_its_own():
    proc = subprocess.run([sys.executable, "code/transformer_block.py"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "改动最后一个词元，前面位置的输出不变: True" in proc.stdout
    assert "合计 7,087,872" in proc.stdout
