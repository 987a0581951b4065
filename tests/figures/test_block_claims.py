"""Every number (and every checkable statement) the Transformer-block article makes about a computation, recomputed.

Each entry of ``CLAIMS`` names where the claim is (a regular expression that must match a line of
``docs/articles/transformer-block.md`` or the title/caption of one of its figures), reads the numbers the
sentence states from the regex groups, and checks them against a recomputation. The recomputations use PyTorch's
own modules where one exists (``nn.TransformerEncoderLayer``, ``nn.LayerNorm``, ``nn.RMSNorm``, ``nn.Linear``,
``FlopCounterMode``) and, for the random-stack experiments, rebuild the stack (``block_depth.make_stack``) and take
gradients with ``torch.autograd.grad`` here -- never the figure functions or ``depth_profile`` /
``last_layer_gradient``. A separate test checks that this recipe reproduces the figure module's data, so the numbers
are about what the reader sees. If a sentence is reworded, the test says the claim is gone; if a seed or a module
changes so that the sentence no longer holds, it names the article line (or figure) and shows stated vs recomputed.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import sys
from collections.abc import Callable
from decimal import Decimal
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from . import claims
from .claims import Check, Claim, approx, below_power_of_ten, holds, span

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "transformer-block.md"
FIGURES = CODE / "figures" / "transformer_block.py"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
for path in (CODE,):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from attention import causal_mask  # noqa: E402
from block_depth import make_stack  # noqa: E402
from feed_forward import swiglu_hidden_dim  # noqa: E402
from transformer_block import TransformerBlock  # noqa: E402

# The recipe of the figures, as their captions and code/block_depth.py state it
DEPTH = 32  # blocks in the residual-stream experiment
STACK_SIZES = (1, 2, 4, 8, 16, 32)  # total depths in the Pre-LN / Post-LN gradient experiment
D_MODEL, N_HEADS, BATCH, SEQ_LEN, SEED = 64, 4, 4, 16, 0
D_MODELS = (64, 128, 256, 512, 1024, 2048, 4096)  # widths in the parameter figure, 64 dimensions a head
LAYOUTS = ("plain", "residual", "post", "pre")
# The original Transformer's base model, as Vaswani et al. (2017, Table 3) publish it: d_model and d_ff
VASWANI_BASE = {"d_model": 512, "d_ff": 2048}


# --------------------------------------------------------------------------- recomputations


def _inputs(seed: int = SEED) -> tuple[torch.Tensor, torch.Tensor]:
    """Input x and loss direction g: standard normal float64, generator seeded with 1000 + seed, x drawn first."""
    generator = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=generator, dtype=torch.float64)
    g = torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=generator, dtype=torch.float64)
    return x, g


@cache
def stack_run(layout: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(std of every layer's output, gradient norm at every layer's input / at the output) for a random stack."""
    blocks = make_stack(layout, DEPTH, D_MODEL, N_HEADS, SEED)
    x, g = _inputs()
    states = [x.requires_grad_()]
    for block in blocks:
        states.append(block(states[-1], mask=causal_mask(SEQ_LEN)))
    grads = torch.autograd.grad((states[-1] * g).sum(), states)
    top = grads[-1].norm()
    assert torch.allclose(grads[-1], g)  # the loss is <output, g>
    return tuple(s.detach().std().item() for s in states), tuple((gr.norm() / top).item() for gr in grads)


def stds(layout: str) -> tuple[float, ...]:
    return stack_run(layout)[0]


def grads(layout: str) -> tuple[float, ...]:
    return stack_run(layout)[1]


@cache
def last_block_gradient(layout: str, n_layers: int, seed: int = SEED) -> float:
    """Gradient norm of the last block's FFN down-projection; Pre-LN ends with a LayerNorm (PyTorch's functional)."""
    blocks = make_stack(layout, n_layers, D_MODEL, N_HEADS, seed)
    x, g = _inputs(seed)
    for block in blocks:
        x = block(x, mask=causal_mask(SEQ_LEN))
    if layout == "pre":
        x = F.layer_norm(x, (D_MODEL,))
    (grad,) = torch.autograd.grad((x * g).sum() / (BATCH * SEQ_LEN), blocks[-1].ffn.down.weight)
    return grad.norm().item()


def pre_gradient_ratio(seed: int = SEED) -> float:
    """Pre-LN: the last block's gradient with 32 blocks, as a multiple of the gradient with 1 block."""
    return last_block_gradient("pre", STACK_SIZES[-1], seed) / last_block_gradient("pre", STACK_SIZES[0], seed)


@cache
def final_std(layout: str, n_layers: int, branch_scale: float = 1.0) -> float:
    """Std of the last block's output (no final norm). branch_scale multiplies, here and not via block_depth, the
    weight and bias of every attention output projection and FFN down-projection (GPT-2's residual scaling)."""
    blocks = make_stack(layout, n_layers, D_MODEL, N_HEADS, SEED)
    with torch.no_grad():
        for name, p in blocks.named_parameters():
            if name.split(".")[1:3] in (["attn", "out"], ["ffn", "down"]):
                p.mul_(branch_scale)
        x, _ = _inputs()
        for block in blocks:
            x = block(x, mask=causal_mask(SEQ_LEN))
    return x.std().item()


def gpt2_scaled_std(layout: str, n_layers: int) -> float:
    return final_std(layout, n_layers, 1 / math.sqrt(2 * n_layers))


def variance_added_per_block() -> float:
    """Pre-LN stack of DEPTH blocks: (variance of the output - variance of the input) / DEPTH."""
    return (stds("pre")[-1] ** 2 - stds("pre")[0] ** 2) / DEPTH


def numel(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@cache
def torch_block_parts(d: int) -> dict[str, int]:
    """A GPT-2-style block counted from PyTorch's modules (meta device): attention, FFN, norms, total."""
    with torch.device("meta"):
        layer = nn.TransformerEncoderLayer(d, d // 64, dim_feedforward=4 * d)
    return {
        "attention": numel(layer.self_attn),
        "ffn": numel(layer.linear1) + numel(layer.linear2),
        "norms": numel(layer.norm1) + numel(layer.norm2),
        "total": numel(layer),
    }


def share(part: str, d: int) -> float:
    parts = torch_block_parts(d)
    return 100 * parts[part] / parts["total"]


def gpt2_untied_head() -> int:
    """A separate output layer of GPT-2 small: 768 -> 50257, no bias (what weight tying saves)."""
    with torch.device("meta"):
        return numel(nn.Linear(768, 50257, bias=False))


def gpt2_small_total() -> int:
    with torch.device("meta"):
        return (12 * torch_block_parts(768)["total"] + numel(nn.Embedding(50257, 768))
                + numel(nn.Embedding(1024, 768)) + numel(nn.LayerNorm(768)))


@cache
def counted_flops(d: int, T: int) -> dict[str, int]:
    """Forward matrix-multiply FLOPs of our block on a (1, T, d) input, counted by PyTorch (meta device)."""
    with torch.device("meta"):
        block = TransformerBlock(d, max(1, d // 64))
        x = torch.randn(1, T, d)
        with FlopCounterMode(display=False) as counter:
            block(x, mask=causal_mask(T, device="meta"))
    per = {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}
    proj = per["TransformerBlock.attn.qkv"] + per["TransformerBlock.attn.out"]
    return {"total": counter.get_total_flops(), "scores": per["TransformerBlock.attn"] - proj}


def causal_score_share(d: int, T: int) -> float:
    """Share (in %) of the attention scores when only the unmasked entries of the causal mask are computed."""
    entries = int((~causal_mask(T)).sum())  # True = masked, so these are the scores a causal kernel needs
    scores = 2 * 2 * entries * d  # QK^T and weights x V: one multiply-add each per entry and dimension
    rest = counted_flops(d, T)["total"] - counted_flops(d, T)["scores"]
    return 100 * scores / (rest + scores)


def max_diff_vs_torch() -> float:
    """Largest difference between our block and nn.TransformerEncoderLayer with the same weights (float64)."""
    worst = 0.0
    for layout in ("pre", "post"):
        torch.manual_seed(11)
        ours = TransformerBlock(32, 4, layout=layout).double()
        ref = nn.TransformerEncoderLayer(32, 4, dim_feedforward=128, dropout=0.0, activation="gelu",
                                         batch_first=True, norm_first=layout == "pre", dtype=torch.float64)
        with torch.no_grad():
            for norm in (ours.norm1, ours.norm2):
                norm.gain.add_(0.3 * torch.randn(32, dtype=torch.float64))
                norm.bias.add_(0.3 * torch.randn(32, dtype=torch.float64))
            ref.self_attn.in_proj_weight.copy_(ours.attn.qkv.weight)
            ref.self_attn.in_proj_bias.copy_(ours.attn.qkv.bias)
            ref.self_attn.out_proj.weight.copy_(ours.attn.out.weight)
            ref.self_attn.out_proj.bias.copy_(ours.attn.out.bias)
            for a, b in ((ref.linear1, ours.ffn.up), (ref.linear2, ours.ffn.down)):
                a.weight.copy_(b.weight)
                a.bias.copy_(b.bias)
            for a, b in ((ref.norm1, ours.norm1), (ref.norm2, ours.norm2)):
                a.weight.copy_(b.gain)
                a.bias.copy_(b.bias)
            x = torch.randn(3, 12, 32, dtype=torch.float64)
            y = ours(x, mask=causal_mask(12))
            y_ref = ref(x, src_mask=nn.Transformer.generate_square_subsequent_mask(12, dtype=torch.float64))
        worst = max(worst, (y - y_ref).abs().max().item())
    return worst


def gelu_tanh_gap() -> float:
    z = torch.linspace(-10, 10, 200_001, dtype=torch.float64)
    return (F.gelu(z) - F.gelu(z, approximate="tanh")).abs().max().item()


# --------------------------------------------------------------------------- facts (checks without a number)


def fact_plain_stack_forgets_its_input() -> bool:
    """No residual, no norm: two different inputs give almost the same top output, which is then mostly bias."""
    blocks = make_stack("plain", DEPTH, D_MODEL, N_HEADS, SEED)
    gen = torch.Generator().manual_seed(5)
    a, b = (torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=gen, dtype=torch.float64) for _ in range(2))
    with torch.no_grad():
        for block in blocks:
            a, b = block(a, mask=causal_mask(SEQ_LEN)), block(b, mask=causal_mask(SEQ_LEN))
        same_output = (a - b).std().item() < 1e-3 * a.std().item()
        for name, p in blocks.named_parameters():
            if name.endswith("bias"):
                p.zero_()
        c = torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=gen, dtype=torch.float64)
        for block in blocks:
            c = block(c, mask=causal_mask(SEQ_LEN))
    return same_output and c.std().item() < 1e-3 * a.std().item()


def fact_post_ln_pins_std_at_one() -> bool:
    return all(abs(s - 1) < 1e-3 for s in stds("post")[1:])


def fact_no_vanishing_with_norm() -> bool:
    return min(grads("post")) > 0.5 and min(grads("pre")) > 0.5


def fact_norms_remove_what_the_article_says() -> bool:
    """Scale 3x: both outputs unchanged; add 10: only LayerNorm's (PyTorch's modules, random gains)."""
    x = torch.randn(4, 6, dtype=torch.float64)
    ln, rms = nn.LayerNorm(6, eps=1e-12).double(), nn.RMSNorm(6, eps=1e-12).double()  # eps: negligible here
    with torch.no_grad():
        for p in (*ln.parameters(), *rms.parameters()):
            p.add_(torch.randn_like(p))
        ok = torch.allclose(ln(3 * x), ln(x), atol=1e-6) and torch.allclose(rms(3 * x), rms(x), atol=1e-6)
        return ok and torch.allclose(ln(x + 10), ln(x), atol=1e-6) and not torch.allclose(rms(x + 10), rms(x))


def fact_ffn_twice_attention() -> bool:
    return all(1.9 < torch_block_parts(d)["ffn"] / torch_block_parts(d)["attention"] <= 2.0 for d in D_MODELS)


def fact_swiglu_keeps_ffn_parameters() -> bool:
    """Three d x (8/3 d) matrices against two d x 4d matrices (nn.Linear, meta device): within 1 %."""
    for d in D_MODELS:
        h = math.ceil(8 * d / 3)
        with torch.device("meta"):
            swiglu = sum(numel(nn.Linear(*shape, bias=False)) for shape in ((d, h), (d, h), (h, d)))
            gelu = numel(nn.Linear(d, 4 * d, bias=False)) + numel(nn.Linear(4 * d, d, bias=False))
        if abs(swiglu - gelu) > 0.01 * gelu:
            return False
    return True


def fact_backward_twice_forward() -> bool:
    for ffn in ("gelu", "swiglu"):
        block = TransformerBlock(32, 4, ffn=ffn)
        x = torch.randn(1, 9, 32, requires_grad=True)
        with FlopCounterMode(display=False) as fwd:
            y = block(x, mask=causal_mask(9))
        with FlopCounterMode(display=False) as bwd:
            y.sum().backward()
        if bwd.get_total_flops() != 2 * fwd.get_total_flops():
            return False
    return True


def flops_per_multiply_add() -> float:
    """What PyTorch's FlopCounterMode counts for one multiply-add: a (1 x 7) @ (7 x 1) product is 7 of them."""
    with FlopCounterMode(display=False) as counter:
        torch.mm(torch.ones(1, 7), torch.ones(7, 1))
    return counter.get_total_flops() / 7


def training_flops_per_parameter(d: int = 768, T: int = 1024) -> float:
    """Forward and backward (twice the forward: fact_backward_twice_forward) of the matrix multiplications with
    weights, per token, over the block's parameters: the scores (4Td) are not parameters' work."""
    f = counted_flops(d, T)
    with torch.device("meta"):
        params = numel(TransformerBlock(d, max(1, d // 64)))
    return 3 * (f["total"] - f["scores"]) / T / params


def fact_scores_to_rest_is_t_to_6d() -> bool:
    for d, T in ((64, 10), (128, 768), (256, 100)):
        f = counted_flops(d, T)
        if f["scores"] * 6 * d != (f["total"] - f["scores"]) * T:
            return False
    return True


def fact_causal_crossover_at_12d() -> bool:
    """With only the causal half of the scores, they equal the rest (24 d^2 T) when T + 1 = 12 d."""
    for d in (64, 128):
        T = 12 * d - 1
        if abs(causal_score_share(d, T) - 50) > 1e-9:
            return False
    return True


def fact_gradient_follows_inverse_std() -> bool:
    """Pre-LN: the last block's gradient changes with depth roughly as 1 / (std of the residual stream), within 15 %."""
    g1, s1 = last_block_gradient("pre", 1), final_std("pre", 1)
    return all(abs((last_block_gradient("pre", n) / g1) / (s1 / final_std("pre", n)) - 1) < 0.15 for n in STACK_SIZES)


def fact_linear_default_init_variance() -> bool:
    """nn.Linear's default weights are uniform on [-1/sqrt(n), 1/sqrt(n)], so their variance is 1/(3n): the sample's
    variance is 1/(3n) within 4 standard errors. For N draws uniform on [-b, b], the mean of w^2 (b^2/3) has standard
    error sqrt((b^4/5 - b^4/9) / N), which is 3 sqrt(4/45/N) of b^2/3: 0.00087 of it for N = 1024^2 (the old 0.01
    was 11 standard errors)."""
    torch.manual_seed(0)
    n, rows = 1024, 1024
    w = nn.Linear(n, rows).weight.detach().double()
    four_errors = 4 * 3 * math.sqrt(4 / 45 / w.numel())
    return w.abs().max().item() <= 1 / math.sqrt(n) and abs(w.var().item() * 3 * n - 1) < four_errors


def fact_site_gpt_is_pre_ln() -> bool:
    """The site's small GPT (code/gpt_from_scratch.py): every block is x + attn(ln(x)), then + ffn(ln(.)); ln_f last."""
    from gpt_from_scratch import poem_config
    from tiny_transformer import TinyTransformer

    torch.manual_seed(0)
    model = TinyTransformer(poem_config(40)).double()
    x = torch.randn(2, 7, model.cfg.d_model, dtype=torch.float64)
    mask = causal_mask(7)
    with torch.no_grad():
        for block in model.blocks:
            y, _ = block(x, mask)
            h = x + block.attn(block.ln(x), mask=mask)
            if not (isinstance(block.mlp[0], nn.LayerNorm) and torch.allclose(y, h + block.mlp(h))):
                return False
            x = y
    return isinstance(model.ln_f, nn.LayerNorm)


def site_gpt_schedule() -> tuple[int, int]:
    from gpt_from_scratch import TrainSettings

    return TrainSettings().steps, TrainSettings().warmup


def fact_encoder_layer_dropout_places() -> bool:
    """nn.TransformerEncoderLayer's dropout: on the attention weights, after each sublayer and after the activation."""
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.3)
    probabilities = (layer.self_attn.dropout, layer.dropout1.p, layer.dropout2.p, layer.dropout.p)
    ff = inspect.getsource(type(layer)._ff_block).replace(" ", "")
    sa = inspect.getsource(type(layer)._sa_block).replace(" ", "")
    return (all(p == 0.3 for p in probabilities) and "self.dropout(self.activation(self.linear1(x)))" in ff
            and "self.dropout2(x)" in ff and "self.dropout1(x)" in sa)


def fact_flops_per_token_formula() -> bool:
    """24 d^2 + 4 T d a token, as counted by PyTorch."""
    return all(counted_flops(d, T)["total"] == T * (24 * d * d + 4 * T * d) for d, T in ((64, 10), (128, 768)))


def fact_sequence_wide_layernorm_leaks_future() -> bool:
    T, d = 6, 8
    x = torch.randn(1, T, d)
    x2 = x.clone()
    x2[:, -1] += 3.0
    leaky, per_token = nn.LayerNorm([T, d]), nn.LayerNorm(d)
    with torch.no_grad():
        return (not torch.allclose(leaky(x)[:, 0], leaky(x2)[:, 0])) and torch.equal(per_token(x)[:, 0],
                                                                                   per_token(x2)[:, 0])


def fact_encoder_layer_defaults() -> bool:
    params = inspect.signature(nn.TransformerEncoderLayer).parameters
    return (params["norm_first"].default is False and params["activation"].default is F.relu
            and params["dropout"].default == 0.1 and params["batch_first"].default is False)


def fact_encoder_layer_bool_mask_true_is_masked() -> bool:
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True).double()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    with torch.no_grad():
        a = layer(x, src_mask=torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1))
        b = layer(x, src_mask=nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64))
    return torch.allclose(a, b)


def fact_sdpa_bool_mask_true_is_allowed() -> bool:
    q = torch.randn(1, 4, 8)
    keep = torch.tril(torch.ones(4, 4, dtype=torch.bool))  # True = may attend
    return torch.allclose(F.scaled_dot_product_attention(q, q, q, attn_mask=keep),
                          F.scaled_dot_product_attention(q, q, q, is_causal=True), atol=1e-6)


# --------------------------------------------------------------------------- the table


def seed_span(ratio: Callable[[int], float]) -> Check:
    """'seeds a to b, between lo and hi, all far from r': every seed's ratio in [lo, hi] as rounded, r = 1/sqrt(32)."""

    def check(stated: list[Decimal]) -> str | None:
        first, last, lo, hi, predicted = stated
        problem = span(lambda: [ratio(seed) for seed in range(int(first), int(last) + 1)])([lo, hi])
        return problem or approx(lambda: 1 / math.sqrt(STACK_SIZES[-1]))([predicted])

    return check


def power_of_ten(value: Callable[[], float]) -> Check:
    """'about 10^n': n is log10 of the value, rounded."""

    def check(stated: list[Decimal]) -> str | None:
        actual = value()
        if round(math.log10(actual)) == int(stated[0]):
            return None
        return f"states 10^{stated[0]}, recomputed {actual:.3g}"

    return check


N = r"(\d[\d,]*(?:\.\d+)?)"  # a stated number, possibly with thousands separators

CLAIMS = [
    # residual connections (figure residual-depth)
    Claim("plain std range", "article", rf"标准差就掉到 {N} 到 {N} 之间",
          span(lambda: stds("plain")[1:])),
    Claim("plain stack forgets its input", "article", r"剩下的几乎只是偏置，换一个输入，顶层的输出几乎不变",
          holds(fact_plain_stack_forgets_its_input)),
    Claim("plain gradient", "article", r"只剩输出处的 \$10\^\{(-\d+)\}\$ 左右",
          power_of_ten(lambda: grads("plain")[0])),
    Claim("residual-only std and gradient", "article", rf"标准差从 1 一路涨到 {N}，梯度传到第 0 层时反而放大到 {N} 倍",
          approx(lambda: stds("residual")[-1], lambda: grads("residual")[0])),
    Claim("figure depth", "residual-depth", r"(\d+) 个块",
          approx(lambda: DEPTH, exact=True)),
    Claim("figure floor", "residual-depth", r"纵轴只画到 (0\.\d+)",
          approx(lambda: _figure_module().GRAD_FLOOR, exact=True)),
    # Post-LN and Pre-LN in the same stack
    Claim("post std pinned", "article", r"Post-LN 每层输出的标准差都被钉在 1",
          holds(fact_post_ln_pins_std_at_one)),
    Claim("post gradient range", "article", rf"梯度传到各层时在输出处的 {N} 到 {N} 倍之间",
          span(lambda: grads("post"))),
    Claim("pre std and gradient", "article", rf"Pre-LN 的标准差从 1 慢慢涨到 {N}.*梯度传到第 0 层时是输出处的 {N} 倍",
          approx(lambda: stds("pre")[-1], lambda: grads("pre")[0])),
    Claim("no vanishing with norm", "article", r"两者都没有梯度消失",
          holds(fact_no_vanishing_with_norm)),
    Claim("pre std after 32 (pitfall)", "article", rf"32 层后标准差约 {N}",
          approx(lambda: stds("pre")[-1])),
    # last block's gradient against depth (figure prenorm-gradient)
    Claim("post last-layer gradient range", "article",
          rf"Post-LN 最后一个块里前馈网络权重的梯度范数始终在 {N} 到 {N} 之间",
          span(lambda: [last_block_gradient("post", n) for n in STACK_SIZES])),
    Claim("pre last-layer gradient ends", "article", rf"Pre-LN 的则从 {N} 降到 {N}",
          approx(lambda: last_block_gradient("pre", STACK_SIZES[0]),
                 lambda: last_block_gradient("pre", STACK_SIZES[-1]))),
    Claim("qualitative: ratio against 1/sqrt(L)", "article", rf"32 层时应降到 1 层时的 {N} 倍，这里只降到 {N} 倍",
          approx(lambda: 1 / math.sqrt(STACK_SIZES[-1]), pre_gradient_ratio)),
    Claim("the ratio over seeds", "article", rf"换成种子 (\d+) 到 (\d+)，这个倍数在 {N} 到 {N} 之间，都离 {N} 很远",
          seed_span(pre_gradient_ratio)),
    Claim("std of 1 and 32 Pre-LN blocks", "article", rf"叠 1 层时标准差是 {N}，叠 32 层时是 {N}",
          approx(lambda: final_std("pre", 1), lambda: final_std("pre", 32))),
    Claim("gradient follows 1/std", "article", r"梯度大致跟着残差流标准差的倒数走",
          holds(fact_gradient_follows_inverse_std)),
    Claim("nn.Linear default init", "article", r"方差只有 \$1/\(3n\)\$",
          holds(fact_linear_default_init_variance)),
    Claim("variance added per block", "article", rf"平均每个块只给传送带添约 {N} 的方差",
          approx(variance_added_per_block)),
    Claim("site GPT is Pre-LN", "article", r"训练的小 GPT 也是 Pre-LN",
          holds(fact_site_gpt_is_pre_ln)),
    Claim("site GPT warms up", "article", r"(\d+) 步里先预热 (\d+) 步",
          approx(lambda: site_gpt_schedule()[0], lambda: site_gpt_schedule()[1], exact=True)),
    # GPT-2's 1/sqrt(2L) residual scaling at initialisation
    Claim("scaled init, Pre-LN", "article",
          rf"Pre-LN 叠 32 层时是 {N}，缩小之后是 {N}；叠 128 层时是 {N}，缩小之后仍是 {N}",
          approx(lambda: final_std("pre", 32), lambda: gpt2_scaled_std("pre", 32),
                 lambda: final_std("pre", 128), lambda: gpt2_scaled_std("pre", 128))),
    Claim("scaled init, residual only", "article", rf"128 层时从 {N} 降到 {N}",
          approx(lambda: final_std("residual", 128), lambda: gpt2_scaled_std("residual", 128))),
    Claim("depths in the figure", "article", r"层数从 (\d+) 增加到 (\d+)",
          approx(lambda: STACK_SIZES[0], lambda: STACK_SIZES[-1], exact=True)),
    Claim("depths in the caption", "prenorm-gradient", r"总层数从 (\d+) 到 (\d+)",
          approx(lambda: STACK_SIZES[0], lambda: STACK_SIZES[-1], exact=True)),
    # normalisation
    Claim("what each norm removes", "article",
          r"同一个向量放大 3 倍后，两种归一化的输出都不变；整体加上 10 后，只有 LayerNorm 的输出不变",
          holds(fact_norms_remove_what_the_article_says)),
    # feed-forward network
    Claim("Llama 7B hidden size", "article", rf"约为 {N}，取到 256 的倍数就是它配置里的 {N}",
          approx(lambda: 8 * 4096 / 3, lambda: 256 * math.ceil(8 * 4096 / 3 / 256))),
    Claim("Llama 7B hidden size from the code", "article", rf"就是它配置里的 {N}",
          approx(lambda: swiglu_hidden_dim(4096, multiple_of=256), exact=True)),
    # the block against PyTorch
    Claim("matches TransformerEncoderLayer", "article", r"输出差别小于 \$10\^\{(-\d+)\}\$",
          below_power_of_ten(max_diff_vs_torch)),
    # parameters (figure block-parameters)
    Claim("GPT-2 small block", "article", rf"一个块有 {N} 个参数，其中前馈网络占 {N}%，注意力占 {N}%",
          approx(lambda: torch_block_parts(768)["total"], lambda: share("ffn", 768), lambda: share("attention", 768))),
    Claim("GPT-2 small", "article", rf"12 个块共 {N} 个.*正好是 {N} 个",
          approx(lambda: 12 * torch_block_parts(768)["total"], gpt2_small_total, exact=True)),
    Claim("GPT-2 small untied", "article", rf"另有一个 (\d+) × (\d+) 的矩阵，总数还要多 {N} 个，变成 {N} 个",
          approx(lambda: 50257, lambda: 768, gpt2_untied_head, lambda: gpt2_small_total() + gpt2_untied_head(),
                 exact=True)),
    Claim("norm share", "article", rf"\$d=64\$ 时也只占 {N}%，到 \$d=4096\$ 只剩 {N}%",
          approx(lambda: share("norms", 64), lambda: share("norms", 4096))),
    Claim("FFN twice attention", "article", r"前馈网络始终是注意力的两倍",
          holds(fact_ffn_twice_attention)),
    Claim("SwiGLU keeps parameters", "article", r"前馈网络的参数和原来几乎一样",
          holds(fact_swiglu_keeps_ffn_parameters)),
    Claim("the original ratio", "article", r"(\d+) 倍是原始 Transformer 定下的比例（(\d+) 维升到 (\d+) 维）",
          approx(lambda: VASWANI_BASE["d_ff"] / VASWANI_BASE["d_model"], lambda: VASWANI_BASE["d_model"],
                 lambda: VASWANI_BASE["d_ff"], exact=True)),
    # FLOPs
    Claim("a multiply-add is 2 flops", "article", r"计算量只数矩阵乘法，一次乘加算 (\d+) 次浮点运算",
          approx(flops_per_multiply_add, exact=True)),
    Claim("training is 6 flops a parameter", "article", r"训练约 (\d+) 倍参数量",
          lambda stated: (None if fact_backward_twice_forward() else "backward is not twice the forward")
          or approx(training_flops_per_parameter)(stated)),
    Claim("GPT-2 small FLOPs", "article", rf"每个词元前向约 {N} 次运算，其中打分占 {N}%",
          approx(lambda: counted_flops(768, 1024)["total"] / 1024,
                 lambda: 100 * counted_flops(768, 1024)["scores"] / counted_flops(768, 1024)["total"])),
    Claim("T : 6d", "article", r"两项之比是 \$T:6d\$",
          holds(fact_scores_to_rest_is_t_to_6d)),
    Claim("24 d^2 a token", "article", r"两项合起来每个词元 \$24d\^2\$；`attention_scores` .*还要再加 \$4Td\$",
          holds(fact_flops_per_token_formula)),
    Claim("4Td is the full score matrix", "article", r"PyTorch 的计数也是这样数出来的",
          holds(fact_flops_per_token_formula)),
    Claim("causal score share", "article", rf"\$T=1024\$ 时打分只占 {N}%",
          approx(lambda: causal_score_share(768, 1024))),
    Claim("causal crossover", "article", r"分界点也推后到 \$T\$ 约为 \$12d\$",
          holds(fact_causal_crossover_at_12d)),
    Claim("backward twice forward", "article", r"矩阵乘法的运算量正好是前向的 2 倍",
          holds(fact_backward_twice_forward)),
    # pitfalls
    Claim("sequence-wide LayerNorm leaks", "article", r"后面词元的信息经由均值漏到前面的位置",
          holds(fact_sequence_wide_layernorm_leaks_future)),
    Claim("TransformerEncoderLayer defaults", "article", r"它默认 `norm_first=False`.*`dropout=0\.1`",
          holds(fact_encoder_layer_defaults)),
    Claim("TransformerEncoderLayer dropout", "article",
          r"`dropout` 参数同时管注意力权重和两个子层的输出，外加前馈网络激活函数之后的一处",
          holds(fact_encoder_layer_dropout_places)),
    Claim("TransformerEncoderLayer mask convention", "article", r"它的布尔掩码和我们一样，`True` 表示屏蔽",
          holds(fact_encoder_layer_bool_mask_true_is_masked)),
    Claim("SDPA mask convention", "article", r"`F\.scaled_dot_product_attention` 的布尔掩码正好相反",
          holds(fact_sdpa_bool_mask_true_is_allowed)),
    Claim("GELU tanh gap", "article", rf"两者最多相差约 {N}",
          approx(gelu_tanh_gap)),
]


# --------------------------------------------------------------------------- locating the sentences


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.where}:{c.name}" for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


# --------------------------------------------------------------------------- the recipe is the figures' recipe


@cache
def _figure_module():
    spec = importlib.util.spec_from_file_location("_block_figures_under_test", FIGURES)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recipe_reproduces_the_figures_data() -> None:
    """The numbers above are about the data drawn in the figures, not about a look-alike run."""
    fig = _figure_module()
    assert (fig.DEPTH, tuple(fig.STACK_SIZES), tuple(fig.D_MODELS)) == (DEPTH, STACK_SIZES, D_MODELS)
    for layout, profile in fig.depth_profiles().items():
        assert profile.std == pytest.approx(list(stds(layout)), rel=1e-12)
        assert profile.grad == pytest.approx(list(grads(layout)), rel=1e-9)
    for layout, values in fig.last_layer_gradients().items():
        assert values == pytest.approx([last_block_gradient(layout, n) for n in STACK_SIZES], rel=1e-9)
    gpt2 = fig.parameter_shares()["gpt2"]
    for i, d in enumerate(D_MODELS):
        for part in ("attention", "ffn", "norms"):
            assert gpt2[part][i] == torch_block_parts(d)[part], (part, d)


def test_claims_are_not_luck_of_one_seed() -> None:
    """The qualitative picture holds for other random initialisations too (16 blocks, looser bounds)."""
    for seed in (1, 2):
        x_seed = torch.Generator().manual_seed(50 + seed)
        x = torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=x_seed, dtype=torch.float64)
        g = torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=x_seed, dtype=torch.float64)
        result = {}
        for layout in LAYOUTS:
            blocks = make_stack(layout, 16, D_MODEL, N_HEADS, seed)
            states = [x.clone().requires_grad_()]
            for block in blocks:
                states.append(block(states[-1], mask=causal_mask(SEQ_LEN)))
            g0 = torch.autograd.grad((states[-1] * g).sum(), states[0])[0]
            result[layout] = (states[-1].std().item(), (g0.norm() / g.norm()).item())
        assert result["plain"][1] < 1e-10, seed  # vanishes
        assert result["residual"][0] > 2 and result["residual"][1] > 2, seed  # grows
        assert abs(result["post"][0] - 1) < 1e-3 and 0.3 < result["post"][1] < 2, seed
        assert 1 < result["pre"][0] < result["residual"][0] and 1 < result["pre"][1] < result["residual"][1], seed


# --------------------------------------------------------------------------- no new unchecked number


# Numbers that are not results of a computation. Add one only with a reason.
NOT_COMPUTED: dict[str, str] = {
    "3.75 亿": "GPT-3's warm-up length (3.75 亿 tokens), a setting quoted from Brown et al. 2020, Appendix B",
    "$0.02/\\sqrt{2L}$": "nanoGPT's initial standard deviation of the weights, a setting quoted from its model.py",
    "1,000 Layers": "part of a paper's title (DeepNet: Scaling Transformers to 1,000 Layers)",
    "连乘 32 次": "the thought experiment's 32 sublayers (stated in the sentence before) multiply 32 Jacobians",
}
