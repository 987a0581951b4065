"""Every number (and every checkable statement) the decoding article makes about a computation, recomputed.

Each entry of ``CLAIMS`` names where the claim is (a regular expression that must match a line of
``docs/articles/decoding.md`` or the title/caption of one of its figures), reads the numbers the sentence states
from the regex groups, and checks them against a recomputation made here:

- probabilities with ``torch.softmax`` and top-p / top-k sets decided token by token (no sorting, ``math.fsum``);
- multiply-adds of GPT-2-small-shaped steps counted by PyTorch's ``FlopCounterMode`` on meta tensors, with and
  without a cache, using PyTorch's own ``nn.Linear`` and ``F.scaled_dot_product_attention``; a closed form written
  here is checked against those counts and then summed for the cumulative numbers;
- cache and parameter sizes from tensors and ``torch.nn`` modules on the meta device;
- cache against recomputation, and sampling frequencies, by running ``code/``'s generate and sample;
- the ordinary no-cache step (causal scores only, logits of the last position only) counted by ``FlopCounterMode``
  one query row at a time, and the bytes a decode step reads from ``nn.Linear`` weights and cache tensors on the meta
  device, with the A100 figures written out again here;
- beam search on the trained Tang-poem model (``pretrained_gpt``): the beams' log-probabilities recomputed by one
  full forward here, the held-out poems read from the corpus file and scored the same way.

The made-up logits and shapes the figures use are written out again here; one test checks that the figure module
uses the same, so the numbers are about what the reader sees. A reworded sentence makes its claim go missing
(the test says so); a changed module or constant that breaks a sentence names the article line.
"""

from __future__ import annotations

import importlib.util
import math
import re
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

# The trained Tang-poem model is read from the run's build cache (`trained_artifacts`), never trained here.
pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "decoding.md"
FIGURES = CODE / "figures" / "decoding.py"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
for path in (CODE,):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import gpt_from_scratch as gpt  # noqa: E402
import kv_cache  # noqa: E402
from attention import scaled_dot_product_attention  # noqa: E402
from kv_cache import beam_search, generate  # noqa: E402
from sampling import sample  # noqa: E402
from tiny_transformer import TinyConfig, TinyTransformer  # noqa: E402

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


@cache
def counted_ordinary_step(t: int) -> int:
    """The ordinary recomputation without a cache, counted by PyTorch: all t tokens through every layer, but query i
    attends only to keys 1..i (one SDPA call per row, so nothing above the diagonal is counted), and only the last
    position gets logits."""
    qkv, out, up, down, unembed = gpt2_layers()

    def run() -> None:
        x = torch.randn(1, t, D)
        for _ in range(L):
            q = qkv(x).chunk(3, dim=-1)[0].view(1, t, H, D_HEAD).transpose(1, 2)
            keys = torch.randn(1, H, t, D_HEAD)
            rows = [F.scaled_dot_product_attention(q[:, :, i:i + 1], keys[:, :, :i + 1], keys[:, :, :i + 1])
                    for i in range(t)]
            x = out(torch.cat(rows, dim=2).transpose(1, 2).reshape(1, t, D))
            x = down(F.gelu(up(x)))
        unembed(x[:, -1:])

    return _count(run)


def closed_form_ordinary(t: int) -> int:
    """Per layer 12 d^2 a token plus 2 d for each of the 1 + 2 + ... + t query-key pairs; logits of one position."""
    return L * (12 * D * D * t + t * (t + 1) * D) + D * VOCAB


def test_ordinary_closed_form_is_what_pytorch_counts() -> None:
    for t in (1, 2, 7, 64):
        assert counted_ordinary_step(t) == closed_form_ordinary(t), t


def ordinary_step(t: int) -> int:
    """The closed form, once test_ordinary_closed_form_is_what_pytorch_counts has checked it (counting t = 1024
    one row at a time would take 12 x 1024 attention calls)."""
    return closed_form_ordinary(t)


def total_ordinary(n: int = MAX_T) -> int:
    return sum(closed_form_ordinary(t) for t in range(1, n + 1))


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


# decode is bandwidth bound: bytes read per step, GPT-2 small in float16 (output matrix = token embedding, read once)
A100_FLOPS, A100_BYTES_PER_S = 312e12, 2039e9  # NVIDIA A100 80GB SXM datasheet: dense bf16, memory bandwidth


def matrix_weights() -> int:
    """Weights of every matrix a token is multiplied by, from the nn.Linear modules (biases left out)."""
    qkv, out, up, down, unembed = gpt2_layers()
    return L * sum(m.weight.numel() for m in (qkv, out, up, down)) + unembed.weight.numel()


def decode_bytes(t: int) -> int:
    return 2 * matrix_weights() + cache_bytes(L, H, D_HEAD, t)


def flops_per_multiply_add() -> float:
    """What PyTorch's FlopCounterMode counts for one multiply-add: a (1 x 7) @ (7 x 1) product is 7 of them."""
    with FlopCounterMode(display=False) as counter:
        torch.mm(torch.ones(1, 7), torch.ones(7, 1))
    return counter.get_total_flops() / 7


def multiply_adds_per_weight() -> float:
    """Multiply-adds per weight when one new token goes through a layer's matrices and the output matrix (a decode
    step), counted by PyTorch."""
    with FlopCounterMode(display=False) as counter, torch.device("meta"):
        for m in gpt2_layers():
            m(torch.randn(1, 1, m.in_features))
    return counter.get_total_flops() / flops_per_multiply_add() / sum(m.weight.numel() for m in gpt2_layers())


def check_bytes_and_flops_per_weight(stated: list[Decimal]) -> str | None:
    """「每个数占 2 个字节，只参与 1 次乘加，也就是 2 次浮点运算」: float16's size, each weight's multiply-adds in a
    decode step, and the flops they are."""
    return approx(lambda: torch.empty(0, dtype=torch.float16).element_size(), multiply_adds_per_weight,
                  lambda: multiply_adds_per_weight() * flops_per_multiply_add(), exact=True)(stated)


def fact_one_flop_per_byte() -> bool:
    return all(2 * counted_step(t, True) == decode_bytes(t) for t in (1, 2, 100, 1024))


def lower_bound_ms(macs: int, nbytes: int) -> float:
    return 1e3 * max(2 * macs / A100_FLOPS, nbytes / A100_BYTES_PER_S)


def ordinary_ms() -> float:
    return lower_bound_ms(ordinary_step(MAX_T), 2 * matrix_weights())


def cached_ms() -> float:
    return lower_bound_ms(counted_step(MAX_T, True), decode_bytes(MAX_T))


# beam search on the trained Tang-poem model: prompt 「白日」 after a newline (the start of a poem), end at a newline
BEAM_PROMPT, BEAM_WIDTH, BEAM_TOKENS = "白日", 4, 23
GREEDY_POEM = "白日無人盡，不知不可憐。不知不可憐，不見不知人。"
BEAM_POEM = "白日無處處，不知不可憐。不知不可憐，何處不知人。"


@cache
def tang():
    model, tok, _ = gpt.pretrained_gpt(verbose=False)
    return model.eval(), tok


def tang_prompt() -> torch.Tensor:
    return torch.tensor([tang()[1].encode("\n" + BEAM_PROMPT)])


def log_prob_here(context: list[int], continuation: list[int]) -> float:
    """Sum of log p(continuation | context): one full forward of the trained model, log_softmax in float64."""
    model, _ = tang()
    ids = torch.tensor([context + continuation])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids[:, :-1]).double(), dim=-1)[0, len(context) - 1:]
    return math.fsum(logp[i, tok].item() for i, tok in enumerate(continuation))


@cache
def greedy_run() -> tuple[str, list[int]]:
    model, tok = tang()
    prompt = tang_prompt()
    out = generate(model, prompt, BEAM_TOKENS).tokens[0, prompt.size(1):].tolist()
    return tok.decode(out), out


@cache
def beams(length_penalty: float = 1.0):
    model, tok = tang()
    return tuple(beam_search(model, tang_prompt(), BEAM_WIDTH, BEAM_TOKENS, length_penalty=length_penalty,
                             eos_id=tok.encode("\n")[0]))


def poem_of(tokens: list[int]) -> str:
    return BEAM_PROMPT + tang()[1].decode(tokens).rstrip("\n")


def fact_greedy_poem() -> bool:
    text, _ = greedy_run()
    return text.endswith("\n") and BEAM_PROMPT + text.rstrip("\n") == GREEDY_POEM


def fact_beam_poem() -> bool:
    return poem_of(beams()[0].tokens) == BEAM_POEM


def greedy_log_prob() -> float:
    return log_prob_here(tang_prompt()[0].tolist(), greedy_run()[1])


def beam_log_prob() -> float:
    return log_prob_here(tang_prompt()[0].tolist(), beams()[0].tokens)


def lines(poem: str) -> list[str]:
    return [x for x in re.split("[，。]", poem) if x]


def fact_beams_share_three_lines() -> bool:
    poems = [lines(poem_of(b.tokens)) for b in beams()]
    return (len(poems) == BEAM_WIDTH and all(p[:3] == poems[0][:3] for p in poems)
            and len({p[3] for p in poems}) == BEAM_WIDTH)


def fact_same_length_same_ranking() -> bool:
    same_length = all(b.finished and len(b.tokens) == BEAM_TOKENS for b in beams())
    return same_length and [b.tokens for b in beams(0.0)] == [b.tokens for b in beams(1.0)]


def hanzi(poem: str) -> list[str]:
    return [c for c in poem if c.isalpha()]


@cache
def held_out_poems() -> list[str]:
    poems = CORPUS.read_text(encoding="utf-8").split("\n")[:-1]
    return [p for i, p in enumerate(poems) if (i + 1) % 10 == 0]  # the 10th, 20th, ... poem is held out


def distinct_share_held_out() -> float:
    return sum(len(set(hanzi(p))) / len(hanzi(p)) for p in held_out_poems()) / len(held_out_poems())


def held_out_per_token() -> float:
    """Log-probability per token of the held-out poems (poem and its closing newline, after a newline), pooled."""
    tok = tang()[1]
    start = tok.encode("\n")
    scored = [(log_prob_here(start, tok.encode(p + "\n")), len(tok.encode(p + "\n"))) for p in held_out_poems()]
    return math.fsum(s for s, _ in scored) / sum(n for _, n in scored)


CORPUS = ROOT / "data" / "tang_wujue" / "poems.txt"


# --------------------------------------------------------------------------- checks


def negated(*values: Callable[[], float]) -> Check:
    """Stated as $-x$: the group holds x."""
    return approx(*(lambda f=f: -f() for f in values))


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
    Claim("a multiply-add is 2 flops", "article", r"按乘加次数算（(\d) 次乘加 = (\d) 次浮点运算）",
          lambda s: approx(lambda: 1, flops_per_multiply_add, exact=True)(s)),
    Claim("exactly t times", "article", r"前者正好是后者的 \$t\$ 倍", holds(exactly_t_times)),
    Claim("GPT-2 small shapes", "article", r"12 层、\$d=768\$、词表 50257",
          holds(lambda: fig_shapes_are_gpt2_small())),
    Claim("GPT-2 small shapes in the caption", "kv-cache-work", r"12 层、12 个头、d_model = 768、词表 50257",
          holds(lambda: fig_shapes_are_gpt2_small())),
    Claim("one step at t = 1024", "article",
          rf"序列长 1024 时，按上面的代码不用缓存生成下一个词元要 \$([\d.]+)\\times10\^\{{(\d+)\}}\$ 次乘加，"
          rf"用缓存只要 \$([\d.]+)\\times10\^\{{(\d+)\}}\$ 次，相差 {N} 倍",
          lambda s: scientific(lambda: counted_step(1024, False), lambda: counted_step(1024, True))(s[:4])
          or approx(lambda: counted_step(1024, False) / counted_step(1024, True))(s[4:])),
    Claim("ordinary no-cache step at t = 1024", "article",
          r"这样数，不用缓存是 \$([\d.]+)\\times10\^\{(\d+)\}\$ 次乘加，约为用缓存的 (\d+) 倍",
          lambda s: scientific(lambda: ordinary_step(1024))(s[:2])
          or approx(lambda: ordinary_step(1024) / counted_step(1024, True))(s[2:])),
    Claim("ordinary is causal, last position", "article",
          r"省一点的重算即使不用缓存，也只算打分矩阵的下三角（位置 \$i\$ 只和前 \$i\$ 个键做点积；.*?），"
          r"logits 也只算最后一个位置",
          holds(lambda: all(kv_cache.recompute_step_macs(_figure_module().GPT2_SMALL, t) == counted_ordinary_step(t)
                            for t in (1, 3, 20)))),
    Claim("ordinary cumulative", "article",
          r"按省一点的写法重算则累计 \$([\d.]+)\\times10\^\{(\d+)\}\$ 次，差 (\d+) 倍",
          lambda s: scientific(total_ordinary)(s[:2]) or approx(lambda: total_ordinary() / total(True))(s[2:])),
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
          approx(lambda: cache_bytes(L, H, D_HEAD, 1) / KIB, lambda: cache_bytes(L, H, D_HEAD, MAX_T) / MIB,
                 exact=True)),
    Claim("GPT-2 small weights", "article", rf"它的 {N} 个参数用 float16 存是 {N} MiB",
          approx(gpt2_params, lambda: 2 * gpt2_params() / MIB)),
    Claim("sequences to exceed the weights", "article", rf"同时服务 {N} 条这样长的序列，缓存就比模型本身还大",
          approx(sequences_to_exceed_weights, exact=True)),
    Claim("Llama 2 7B cache", "article", rf"float16 下每个词元 {N} KiB，一条 4096 个词元的序列就是 {N} GiB",
          approx(lambda: cache_bytes(32, 32, 128, 1) / KIB, lambda: cache_bytes(32, 32, 128, 4096) / GIB,
                 exact=True)),
    # prefill and decode: bytes read per step
    Claim("bytes per decode step", "article",
          rf"参与矩阵乘法的权重共 {N} 个数，读一遍是 {N} MiB；"
          rf"序列长 1024 时，缓存还要再读 {N} MiB，这一步一共读 {N} MiB，"
          r"乘加却只有 \$([\d.]+)\\times10\^\{(\d+)\}\$ 次",
          lambda s: approx(matrix_weights, lambda: cache_bytes(L, H, D_HEAD, MAX_T) / MIB, exact=True)(s[0:3:2])
          or approx(lambda: 2 * matrix_weights() / MIB, lambda: decode_bytes(MAX_T) / MIB)(s[1:4:2])
          or scientific(lambda: counted_step(MAX_T, True))(s[4:])),
    Claim("bytes in code", "article", r"下面的函数数出解码一步至少要读多少字节",
          holds(lambda: kv_cache.decode_step_bytes(_figure_module().GPT2_SMALL, MAX_T) == decode_bytes(MAX_T))),
    Claim("bytes and flops of a weight", "article", r"每个数占 (\d) 个字节，只参与 (\d) 次乘加，也就是 (\d) 次浮点运算",
          check_bytes_and_flops_per_weight),
    Claim("one flop per byte", "article", r"所以每读 1 个字节正好做 1 次浮点运算", holds(fact_one_flop_per_byte)),
    Claim("one flop per byte (summary)", "article", r"每读 1 个字节只做 1 次左右的运算", holds(fact_one_flop_per_byte)),
    Claim("A100 datasheet figures", "article", r"峰值是 (\d+) TFLOPS，显存带宽是 (\d+) GB/s",
          lambda s: None if (float(s[0]) * 1e12, float(s[1]) * 1e9) == (A100_FLOPS, A100_BYTES_PER_S)
          == (kv_cache.A100_PEAK_FLOPS, kv_cache.A100_BANDWIDTH) else f"states {s}, code and test use other values"),
    Claim("A100 flops per byte", "article", r"每读 1 个字节要做 (\d+) 次浮点运算才能让算力用满",
          approx(lambda: A100_FLOPS / A100_BYTES_PER_S)),
    Claim("share of peak", "article", rf"最多只用得上峰值算力的 {N}%",
          approx(lambda: 100 * (2 * counted_step(MAX_T, True) / decode_bytes(MAX_T))
                 / (A100_FLOPS / A100_BYTES_PER_S))),
    Claim("ordinary step, again", "article",
          r"按省一点的写法不用缓存重算一遍，\$([\d.]+)\\times10\^\{(\d+)\}\$ 次乘加至少要",
          scientific(lambda: ordinary_step(MAX_T))),
    Claim("time lower bounds", "article",
          rf"次乘加至少要 {N} ms，这是算力的账；用缓存的一步至少要 {N} ms，几乎全是读显存的账。"
          rf"乘加差 (\d+) 倍，耗时的下限只差 {N} 倍",
          approx(ordinary_ms, cached_ms, lambda: ordinary_step(MAX_T) / counted_step(MAX_T, True),
                 lambda: ordinary_ms() / cached_ms())),
    Claim("which bound", "article", r"这是算力的账；用缓存的一步至少要 [\d.]+ ms，几乎全是读显存的账",
          holds(lambda: 2 * ordinary_step(MAX_T) / A100_FLOPS > 2 * matrix_weights() / A100_BYTES_PER_S
                and 2 * counted_step(MAX_T, True) / A100_FLOPS < 0.01 * decode_bytes(MAX_T) / A100_BYTES_PER_S)),
    # beam search on the trained model
    Claim("greedy and beam poems", "article",
          rf"贪心写出「{GREEDY_POEM}」，对数概率是 \$-{N}\$；"
          rf"束宽 (\d) 写出「{BEAM_POEM}」，对数概率是 \$-{N}\$，比贪心高",
          lambda s: (None if fact_greedy_poem() and fact_beam_poem() and int(s[1]) == BEAM_WIDTH
                     else "the poems or the beam width differ")
          or negated(greedy_log_prob, beam_log_prob)([s[0], s[2]])
          or (None if beam_log_prob() > greedy_log_prob() else "beam is not higher")),
    Claim("beam search log-prob in its result", "article", r"对数概率是 \$-[\d.]+\$，比贪心高",
          holds(lambda: abs(beams()[0].log_prob - beam_log_prob()) < 1e-4)),
    Claim("beams share three lines", "article", r"留下的 4 条候选前三句一字不差，只在最后一句上有分别",
          holds(fact_beams_share_three_lines)),
    Claim("same length, same ranking", "article",
          r"4 条都在第 23 个词元写出换行，长短一样，所以长度惩罚取 0 还是取 1，排名都不变",
          holds(fact_same_length_same_ranking)),
    Claim("distinct characters", "article",
          rf"它的 (\d+) 个字里只有 (\d+) 个不同的字，贪心那首也是 (\d+) 个；"
          rf"验证集的 (\d+) 首真诗，平均每首 {N}% 的字各不相同",
          approx(lambda: len(hanzi(BEAM_POEM)), lambda: len(set(hanzi(BEAM_POEM))),
                 lambda: len(set(hanzi(GREEDY_POEM))), lambda: len(held_out_poems()),
                 lambda: 100 * distinct_share_held_out())),
    Claim("per-token log-prob", "article",
          rf"模型给真诗的对数概率平均每个词元是 \$-{N}\$，给束搜索这首的却是 \$-{N}\$",
          negated(held_out_per_token, lambda: beam_log_prob() / BEAM_TOKENS)),
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
    "$\\alpha=0.6$": "the length penalty Vaswani et al. (2017) used for translation (a cited setting)",
    "Qwen2-1.5B": "part of a model's name, not a result",
    "第 6.1 节": "a section number of a cited paper",
    "128,256": "Llama 3's vocabulary, from its published config.json (a cited fact)",
    "151,646": "Qwen2's vocabulary, from the Qwen2 technical report (a cited fact)",
    "151,936": "vocab_size in Qwen2-1.5B's config.json (a cited fact)",
    "152,064": "vocab_size in Qwen2-7B's config.json (a cited fact)",
}
