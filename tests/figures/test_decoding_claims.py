"""Every number (and every checkable statement) the decoding article makes about a computation, recomputed.

Each entry of ``CLAIMS`` names where the claim is (a regular expression that must match a line of
``docs/articles/decoding.md`` or the title/caption of one of its figures), reads the numbers the sentence states
from the regex groups, and checks them against a recomputation made here:

- probabilities with ``torch.softmax`` and top-p / top-k sets decided token by token (no sorting, ``math.fsum``);
- multiply-adds of GPT-2-small-shaped steps counted by PyTorch's ``FlopCounterMode`` on meta tensors, with and
  without a cache, using PyTorch's own ``nn.Linear`` and ``F.scaled_dot_product_attention``; a closed form written
  here is checked against those counts and then summed for the cumulative numbers;
- cache and parameter sizes from tensors and ``torch.nn`` modules on the meta device;
- cache against recomputation, and sampling frequencies, by running ``code/``'s generate and sample.

The made-up logits and shapes the figures use are written out again here; one test checks that the figure module
uses the same, so the numbers are about what the reader sees. A reworded sentence makes its claim go missing
(the test says so); a changed module or constant that breaks a sentence names the article line.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from . import claims
from .claims import Check, Claim, approx, holds
from .claims import half_unit as _half_unit

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "decoding.md"
FIGURES = CODE / "figures" / "decoding.py"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
for path in (CODE,):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from attention import scaled_dot_product_attention  # noqa: E402
from kv_cache import generate  # noqa: E402
from sampling import sample  # noqa: E402
from tiny_transformer import TinyConfig, TinyTransformer  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Small tensors: threads only add overhead (and wait on each other on a busy machine). Restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# The made-up examples, as the article and captions describe them
EXAMPLE = [3.0, 2.2, 1.8, 1.2, 0.8, 0.3, -0.5, -1.5]  # 好 不错 热 冷 晴朗 闷 糟 奇怪
PEAKED = [6.0, 3.5, 3.0, 2.5, 2.0, 1.5, 1.2, 1.0, 0.8, 0.5, 0.2, 0.0]
FLAT = [2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2, 1.1, 1.0, 0.9]
TOP_K, TOP_P = 5, 0.9
# GPT-2 small: 12 layers, 12 heads of 64, d = 768, MLP 4d, vocabulary 50257, 1024 positions
L, H, D_HEAD, D, VOCAB, MAX_T = 12, 12, 64, 768, 50257, 1024


# --------------------------------------------------------------------------- recomputations


def probs(logits: Sequence[float], temperature: float = 1.0) -> list[float]:
    return torch.softmax(torch.tensor(logits, dtype=torch.float64) / temperature, dim=-1).tolist()


def top_p_set(p_list: list[float], p: float) -> list[bool]:
    """Token by token: kept iff the tokens strictly more likely than it sum to less than p."""
    return [math.fsum(q for q in p_list if q > pi) < p for pi in p_list]


def top_k_set(z: Sequence[float], k: int) -> list[bool]:
    return [sum(other > zi for other in z) < k for zi in z]


def kept_mass(p_list: list[float], keep: list[bool]) -> float:
    return math.fsum(q for q, m in zip(p_list, keep, strict=True) if m)


def top_p_count_after_temperature(temperature_first: bool) -> int:
    """The pitfall's example: temperature 2 and p = 0.9 in the two orders."""
    if temperature_first:
        return sum(top_p_set(probs(EXAMPLE, 2.0), TOP_P))
    return sum(top_p_set(probs(EXAMPLE), TOP_P))  # the set is fixed before the temperature; it only reweights


def _count(fn: Callable[[], object]) -> int:
    with FlopCounterMode(display=False) as counter, torch.device("meta"):
        fn()
    flops = counter.get_total_flops()
    assert flops % 2 == 0
    return flops // 2


@cache
def gpt2_layers() -> tuple[nn.Module, ...]:
    with torch.device("meta"):
        return (nn.Linear(D, 3 * D), nn.Linear(D, D), nn.Linear(D, 4 * D), nn.Linear(4 * D, D), nn.Linear(D, VOCAB))


@cache
def counted_step(t: int, cached: bool) -> int:
    """Multiply-adds to get the logits for token t + 1 of a GPT-2-small-shaped model, counted by PyTorch.

    Without a cache all t tokens go through every layer (full t x t scores, masked) and every position gets logits;
    with a cache only the new token is projected and its one query attends to t keys.
    """
    qkv, out, up, down, unembed = gpt2_layers()
    n = 1 if cached else t

    def run() -> None:
        x = torch.randn(1, n, D)
        for _ in range(L):
            q = qkv(x).chunk(3, dim=-1)[0]  # k and v of the new tokens go into the cache; not needed here
            q = q.view(1, n, H, D_HEAD).transpose(1, 2)
            keys = torch.randn(1, H, t, D_HEAD)  # cached keys and values of all t positions
            y = F.scaled_dot_product_attention(q, keys, keys, is_causal=not cached)
            x = out(y.transpose(1, 2).reshape(1, n, D))
            x = down(F.gelu(up(x)))
        unembed(x)

    return _count(run)


def closed_form_step(t: int, cached: bool) -> int:
    """The same count written out: per layer 12 d^2 per token plus 2 * (queries) * t * d; logits d * V a token."""
    n = 1 if cached else t
    return L * (12 * D * D * n + 2 * n * t * D) + n * D * VOCAB


def test_closed_form_is_what_pytorch_counts() -> None:
    for t in (1, 2, 7, 100, 513, 1024):
        for cached in (True, False):
            assert counted_step(t, cached) == closed_form_step(t, cached), (t, cached)


def total(cached: bool, n: int = MAX_T) -> int:
    """Generate n tokens from a 1-token prompt: the step producing token i + 1 sees i tokens."""
    return sum(closed_form_step(t, cached) for t in range(1, n + 1))


def exactly_t_times() -> bool:
    return all(counted_step(t, False) == t * counted_step(t, True) for t in (1, 5, 64, 1024))


@cache
def gpt2_params() -> int:
    with torch.device("meta"):
        block = nn.TransformerEncoderLayer(D, H, dim_feedforward=4 * D)
        parts = [*(block for _ in range(L)), nn.Embedding(VOCAB, D), nn.Embedding(MAX_T, D), nn.LayerNorm(D)]
        return sum(p.numel() for m in parts for p in m.parameters())


def cache_bytes(layers: int, heads: int, d_head: int, t: int, dtype: torch.dtype = torch.float16) -> int:
    """Bytes of the K and V tensors of every layer, allocated on the meta device."""
    with torch.device("meta"):
        tensors = [torch.empty(1, heads, t, d_head, dtype=dtype) for _ in range(2 * layers)]
    return sum(x.numel() * x.element_size() for x in tensors)


KIB, MIB, GIB = 2**10, 2**20, 2**30


def sequences_to_exceed_weights() -> int:
    weights = 2 * gpt2_params()
    n = 1
    while n * cache_bytes(L, H, D_HEAD, MAX_T) <= weights:
        n += 1
    return n


@cache
def cache_vs_recompute() -> float:
    """Largest logit difference, cache against recomputation, on a random (untrained) TinyTransformer."""
    torch.manual_seed(0)
    model = TinyTransformer(TinyConfig(mlp=True, positions="learned")).eval()
    prompt = torch.randint(0, 48, (2, 8), generator=torch.Generator().manual_seed(3))
    worst = 0.0
    for do_sample in (False, True):
        a, b = (generate(model, prompt, 40, use_cache=c, do_sample=do_sample, top_p=0.9,
                         generator=torch.Generator().manual_seed(7)) for c in (True, False))
        assert torch.equal(a.tokens, b.tokens)
        # an independent look at the same logits: the full forward of the final sequence
        with torch.no_grad():
            full = model(a.tokens[:, :-1])[:, prompt.size(1) - 1:]
        worst = max(worst, (a.logits - b.logits).abs().max().item(), (a.logits - full).abs().max().item())
    return worst


def fact_cache_close_but_not_equal() -> bool:
    return 0 < cache_vs_recompute() < 1e-5


def fact_frequencies_within_4_sd() -> bool:
    z = torch.tensor(EXAMPLE)
    n = 200_000
    draws = sample(z.expand(n, -1), torch.Generator().manual_seed(11), temperature=0.8, top_p=0.9)
    counts = torch.bincount(draws, minlength=len(EXAMPLE)).tolist()
    p_list = probs(EXAMPLE, 0.8)
    keep = top_p_set(p_list, 0.9)
    mass = kept_mass(p_list, keep)
    for c, p, k in zip(counts, p_list, keep, strict=True):
        target = p / mass if k else 0.0
        if target == 0:
            if c:
                return False
        elif abs(c - n * target) > 4 * math.sqrt(n * target * (1 - target)):
            return False
    return True


def fact_single_query_head_broadcasts() -> bool:
    """scaled_dot_product_attention accepts k and v with one head, shared by every query head (multi-query)."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 5, 8, generator=gen, dtype=torch.float64)
    k, v = (torch.randn(2, 1, 5, 8, generator=gen, dtype=torch.float64) for _ in range(2))
    out, _ = scaled_dot_product_attention(q, k, v)
    return torch.allclose(out, F.scaled_dot_product_attention(q, k.expand(2, 4, 5, 8), v.expand(2, 4, 5, 8)))


def fact_peaked_top_k_takes_two_below_3_percent() -> bool:
    p_list = probs(PEAKED)
    kept_small = [p for p, k in zip(p_list, top_k_set(PEAKED, TOP_K), strict=True) if k and p < 0.03]
    return len(kept_small) == 2 and sum(top_k_set(PEAKED, TOP_K)) == TOP_K


def fig_shapes_are_gpt2_small() -> bool:
    expected = TinyConfig(vocab_size=VOCAB, d_model=D, n_heads=H, n_layers=L, max_len=MAX_T, mlp=True,
                          positions="learned")
    return expected == _figure_module().GPT2_SMALL


def fact_equal_at_6d() -> bool:
    """The attention term 2 t d equals the fixed 12 d^2 at t = 6 d (any d)."""
    return all(2 * (6 * d) * d == 12 * d * d for d in (64, 768, 4096))


# --------------------------------------------------------------------------- checks


def scientific(*values: Callable[[], float]) -> Check:
    """Stated as mantissa x 10^exponent (groups alternate): the mantissa as rounded."""

    def check(stated: list[Decimal]) -> str | None:
        for (mantissa, exponent), f in zip(zip(stated[::2], stated[1::2], strict=True), values, strict=True):
            actual = f() / 10.0 ** int(exponent)
            if abs(float(mantissa) - actual) > _half_unit(mantissa) + 1e-12:
                return f"states {mantissa}e{exponent}, recomputed {f():.6g}"
        return None

    return check


N = r"(\d[\d,]*(?:\.\d+)?)"


CLAIMS = [
    # temperature (figure decoding-temperature)
    Claim("top word at three temperatures", "article",
          rf"「好」在温度 0\.5、1、2 时分别占 {N}%、{N}% 和 {N}%",
          approx(*(lambda t=t: 100 * probs(EXAMPLE, t)[0] for t in (0.5, 1.0, 2.0)))),
    Claim("last word at two temperatures", "article", rf"「奇怪」则从温度 0\.5 时的约 {N}% 升到温度 2 时的 {N}%",
          approx(lambda: 100 * probs(EXAMPLE, 0.5)[-1], lambda: 100 * probs(EXAMPLE, 2.0)[-1])),
    Claim("temperatures in the figure title", "decoding-temperature", r"在温度 0\.5、1、2 下的概率分布",
          holds(lambda: _figure_module().TEMPERATURES == [0.5, 1.0, 2.0])),
    Claim("temperature range in the caption", "decoding-temperature", rf"温度从 {N} 到 {N} 之间",
          approx(lambda: min(_figure_temperatures()), lambda: max(_figure_temperatures()))),
    Claim("uniform limit in the caption", "decoding-temperature", r"趋近 1/8（均匀分布",
          holds(lambda: len(EXAMPLE) == 8)),
    # the long tail (arithmetic of a hypothetical)
    Claim("long tail", "article", rf"哪怕 {N} 个词元各只有 {N}%，合起来也有 {N}%",
          lambda s: None if float(s[0]) * float(s[1]) == float(s[2]) else f"{s[0]} x {s[1]}% != {s[2]}%"),
    # top-k and top-p (figure decoding-truncation)
    Claim("peaked: top-p", "article", rf"top-p（\$p=0\.9\$）只留 {N} 个词元，共占 {N}% 的概率",
          approx(lambda: sum(top_p_set(probs(PEAKED), TOP_P)),
                 lambda: 100 * kept_mass(probs(PEAKED), top_p_set(probs(PEAKED), TOP_P)))),
    Claim("peaked: top-k", "article", r"top-k（\$k=5\$）却照样留 5 个，把两个概率不到 3% 的词元也带了进来",
          holds(fact_peaked_top_k_takes_two_below_3_percent)),
    Claim("flat: top-p and top-k", "article", rf"top-p 留下 {N} 个，共占 {N}%；top-k 还是 5 个，只覆盖了 {N}% 的概率",
          approx(lambda: sum(top_p_set(probs(FLAT), TOP_P)),
                 lambda: 100 * kept_mass(probs(FLAT), top_p_set(probs(FLAT), TOP_P)),
                 lambda: 100 * kept_mass(probs(FLAT), top_k_set(FLAT, TOP_K)))),
    Claim("truncation parameters", "decoding-truncation", r"top-k（k = 5）与 top-p（p = 0\.9）",
          holds(lambda: (_figure_module().TOP_K, _figure_module().TOP_P) == (TOP_K, TOP_P))),
    Claim("truncation parameters in the caption", "decoding-truncation", r"top-p（p = 0\.9）留下的词元",
          holds(lambda: _figure_module().TOP_P == TOP_P)),
    Claim("sampling frequencies", "article", r"各抽 20 万次，每个词元出现的次数都要落在二项分布均值的 4 个标准差以内",
          holds(fact_frequencies_within_4_sd)),
    Claim("order of temperature and top-p", "article",
          rf"温度 2、\$p=0\.9\$：先调温度再截断，留下 {N} 个候选词；先截断再调温度，只留下 {N} 个",
          approx(lambda: top_p_count_after_temperature(True), lambda: top_p_count_after_temperature(False),
                 exact=True)),
    # KV cache: correctness
    Claim("cache against recomputation", "article", r"每一步的 logits 最大差别小于 \$10\^\{-5\}\$。差别不是 0",
          holds(fact_cache_close_but_not_equal)),
    # KV cache: work (figure kv-cache-work)
    Claim("exactly t times", "article", r"前者正好是后者的 \$t\$ 倍", holds(exactly_t_times)),
    Claim("GPT-2 small shapes", "article", r"12 层、\$d=768\$、词表 50257",
          holds(lambda: fig_shapes_are_gpt2_small())),
    Claim("GPT-2 small shapes in the caption", "kv-cache-work", r"12 层、12 个头、d_model = 768、词表 50257",
          holds(lambda: fig_shapes_are_gpt2_small())),
    Claim("one step at t = 1024", "article",
          rf"序列长 1024 时，不用缓存生成下一个词元要 \$([\d.]+)\\times10\^\{{(\d+)\}}\$ 次乘加，"
          rf"用缓存只要 \$([\d.]+)\\times10\^\{{(\d+)\}}\$ 次，相差 {N} 倍",
          lambda s: scientific(lambda: counted_step(1024, False), lambda: counted_step(1024, True))(s[:4])
          or approx(lambda: counted_step(1024, False) / counted_step(1024, True))(s[4:])),
    Claim("cached step growth", "article", rf"从 \$t=1\$ 到 \$t=1024\$ 只增加了 {N}%",
          approx(lambda: 100 * (counted_step(1024, True) / counted_step(1, True) - 1))),
    Claim("equal at 6d", "article", r"两项在 \$t=6d\$ 时相等", holds(fact_equal_at_6d)),
    Claim("cumulative", "article",
          rf"不用缓存累计 \$([\d.]+)\\times10\^\{{(\d+)\}}\$ 次乘加，"
          rf"用缓存 \$([\d.]+)\\times10\^\{{(\d+)\}}\$ 次，差 {N} 倍",
          lambda s: scientific(lambda: total(False), lambda: total(True))(s[:4])
          or approx(lambda: total(False) / total(True))(s[4:])),
    # KV cache: memory
    Claim("GPT-2 small cache", "article", rf"每个词元要 {N} KiB，一条 1024 个词元的序列要 {N} MiB",
          approx(lambda: cache_bytes(L, H, D_HEAD, 1) / KIB, lambda: cache_bytes(L, H, D_HEAD, MAX_T) / MIB)),
    Claim("GPT-2 small weights", "article", rf"它的 {N} 个参数用 float16 存是 {N} MiB",
          approx(gpt2_params, lambda: 2 * gpt2_params() / MIB)),
    Claim("sequences to exceed the weights", "article", rf"同时服务 {N} 条这样长的序列，缓存就比模型本身还大",
          approx(sequences_to_exceed_weights, exact=True)),
    Claim("Llama 2 7B cache", "article", rf"float16 下每个词元 {N} KiB，一条 4096 个词元的序列就是 {N} GiB",
          approx(lambda: cache_bytes(32, 32, 128, 1) / KIB, lambda: cache_bytes(32, 32, 128, 4096) / GIB)),
    Claim("multi-query broadcast", "article", r"本来就允许 k、v 只有一个头，靠广播给所有查询头共用",
          holds(fact_single_query_head_broadcasts)),
]


# --------------------------------------------------------------------------- locating the sentences


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.where}:{c.name}" for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


# --------------------------------------------------------------------------- the recipe is the figures' recipe


@cache
def _figure_module():
    spec = importlib.util.spec_from_file_location("_decoding_figures_under_test", FIGURES)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _figure_temperatures() -> list[float]:
    """The temperatures the right panel of decoding-temperature is drawn at (read from the figure itself)."""
    with torch.no_grad():
        fig = _figure_module().decoding_temperature()
    xs = fig.axes[1].lines[0].get_xdata()
    import matplotlib.pyplot as plt

    plt.close(fig)
    return [float(x) for x in xs]


def test_recipe_reproduces_the_figures_data() -> None:
    fig = _figure_module()
    assert fig.EXAMPLE_LOGITS == EXAMPLE and fig.PEAKED_LOGITS == PEAKED and fig.FLAT_LOGITS == FLAT
    for t in (0.5, 1.0, 2.0):
        assert fig.temperature_probs(t) == pytest.approx(probs(EXAMPLE, t), abs=1e-12)
    for logits in (PEAKED, FLAT):
        data = fig.truncation(logits)
        assert data["top_p"] == top_p_set(probs(logits), TOP_P)
        assert data["top_k"] == top_k_set(logits, TOP_K)
    for cached in (True, False):
        steps = fig.macs_per_step(cached)
        assert [steps[t - 1] for t in (1, 2, 100, 1024)] == [closed_form_step(t, cached) for t in (1, 2, 100, 1024)]
        assert sum(steps) == total(cached)


# --------------------------------------------------------------------------- no new unchecked number


# Numbers that are not results of a computation. Add one only with a reason.
NOT_COMPUTED: dict[str, str] = {
    "0.5": "a temperature the example is shown at (a setting, not a result)",
    "0.9": "the top-p setting",
}


def test_every_number_in_the_article_is_a_checked_claim() -> None:
    unchecked = claims.unchecked_numbers(SOURCES, CLAIMS, NOT_COMPUTED)
    assert not unchecked, "numbers with no recomputing claim in CLAIMS:\n" + "\n".join(unchecked)
