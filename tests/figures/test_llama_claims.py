"""Every number (and every checkable statement) the Llama-block article makes about a computation, recomputed.

Each entry of ``CLAIMS`` locates a sentence of ``docs/articles/llama-block.md`` (or a figure's title and caption) and
checks the numbers it states against a recomputation done here:

- the real models' KV cache from the published ``config.json`` fields written out here (and ``llama.LLAMA2_7B`` /
  ``LLAMA3_8B`` checked against them), by the formula 2 x layers x KV heads x head size x 2 bytes;
- parameter counts from PyTorch's own modules on the meta device (``nn.TransformerEncoderLayer``, ``nn.Linear``,
  ``nn.Embedding``), not from ``param_count``; the vocabulary recounted from the corpus with plain Python;
- the validation losses of the trained comparison (the ``llama-vs-gpt`` build artifact, read from the run's cache)
  recomputed with ``F.cross_entropy`` on windows cut here from the corpus, and the stage-1 GPT (``tang-gpt``) on
  the same windows;
- the logits of ``MiniLlama`` against ``transformers``' ``LlamaForCausalLM`` built here from a tiny random config;
- the RoPE figure's curves recomputed with 2 x 2 rotation matrices written out here.
"""

from __future__ import annotations

import collections
import math
import sys
from decimal import Decimal
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from . import claims
from .claims import Claim, approx, below_power_of_ten, holds
from .claims import rotate_pairs as rotate

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "code"
ARTICLE = ROOT / "docs" / "articles" / "llama-block.md"
FIGURES = CODE / "figures" / "llama_block.py"
CORPUS = ROOT / "data" / "tang_wujue" / "poems.txt"
SOURCES = claims.Sources(ROOT, ARTICLE, FIGURES)
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

import gpt_from_scratch as gpt  # noqa: E402
import llama  # noqa: E402
import llama_train  # noqa: E402

D, LAYERS, HEADS, KV_HEADS, D_FF, CONTEXT = 64, 4, 4, 2, 205, 64  # the comparison's shapes, as the article states
STEPS, BATCH, SEEDS = 75, 8, (0, 1, 2)

# The fields of the published config.json files (meta-llama/Llama-2-7b-hf, meta-llama/Meta-Llama-3-8B,
# meta-llama/Llama-3.1-8B) and of the first LLaMA's params.json (7B, Feb 2023), as released.
PUBLISHED = {
    "llama2-7b": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                  "num_attention_heads": 32, "num_key_value_heads": 32, "rms_norm_eps": 1e-05,
                  "tie_word_embeddings": False, "vocab_size": 32000, "max_position_embeddings": 4096,
                  "rope_theta": 10000.0},
    "llama3-8b": {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                  "num_attention_heads": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                  "tie_word_embeddings": False, "vocab_size": 128256, "max_position_embeddings": 8192,
                  "rope_theta": 500000.0},
    "llama3.1-8b": {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
                    "rope_theta": 500000.0,
                    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
    "llama1-7b": {"dim": 4096, "n_heads": 32, "n_layers": 32, "norm_eps": 1e-06},
}
OURS = {"llama2-7b": llama.LLAMA2_7B, "llama3-8b": llama.LLAMA3_8B}


# --------------------------------------------------------------------------- recomputations


def fact_configs_as_published() -> bool:
    for name, cfg in OURS.items():
        c = PUBLISHED[name]
        if (cfg.d_model, cfg.ffn_dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.norm_eps, cfg.tie_weights,
                cfg.vocab_size, cfg.max_len, cfg.rope_base) != (
                c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["num_attention_heads"],
                c["num_key_value_heads"], c["rms_norm_eps"], c["tie_word_embeddings"], c["vocab_size"],
                c["max_position_embeddings"], c["rope_theta"]):
            return False
    return True


def fact_eps_of_each_generation() -> bool:
    """Llama 2 and 3 use 1e-05, the first LLaMA 1e-06; our default is 1e-6."""
    return (fact_configs_as_published() and PUBLISHED["llama1-7b"]["norm_eps"] == 1e-06
            and llama.MiniLlamaConfig().norm_eps == 1e-6)


def head_size(name: str) -> int:
    c = PUBLISHED[name]
    return c["hidden_size"] // c["num_attention_heads"]


def wavelengths(base: float, d: int) -> list[float]:
    """Positions per full turn of each of the d/2 pairs: pair i turns base^(-2i/d) radians per position."""
    return [2 * math.pi / base ** (-2 * i / d) for i in range(d // 2)]


def fact_slow_pairs(stated: list[Decimal]) -> str | None:
    """Llama 2 7B: head size, base, trained length, and how many pairs do not finish one turn within it."""
    c = PUBLISHED["llama2-7b"]
    d, base, length = head_size("llama2-7b"), c["rope_theta"], c["max_position_embeddings"]
    slow = sum(w > length for w in wavelengths(base, d))
    return approx(lambda: d, lambda: base, lambda: length, lambda: d // 2, lambda: slow, exact=True)(stated)


def fact_bases() -> bool:
    return (fact_configs_as_published() and PUBLISHED["llama2-7b"]["rope_theta"] == 10000.0
            and PUBLISHED["llama3-8b"]["rope_theta"] == PUBLISHED["llama3.1-8b"]["rope_theta"] == 500000.0
            and head_size("llama3-8b") == head_size("llama2-7b") == 128)


def llama31_bands() -> list[int]:
    """Llama 3.1's rope_scaling (rope_type llama3): pairs whose wavelength is above original / low_freq_factor
    turn 'factor' times slower, those below original / high_freq_factor keep their speed, the rest are blended."""
    c = PUBLISHED["llama3.1-8b"]
    sc = c["rope_scaling"]
    low = sc["original_max_position_embeddings"] / sc["low_freq_factor"]
    high = sc["original_max_position_embeddings"] / sc["high_freq_factor"]
    waves = wavelengths(c["rope_theta"], head_size("llama3.1-8b"))
    return [sum(w > low for w in waves), sum(w < high for w in waves), sum(high <= w <= low for w in waves)]


def fact_llama31_config() -> bool:
    sc = PUBLISHED["llama3.1-8b"]["rope_scaling"]
    return (sc["rope_type"] == "llama3" and sc["factor"] == 8.0 and sc["original_max_position_embeddings"] == 8192
            and sc["original_max_position_embeddings"] / sc["high_freq_factor"] == 2048
            and PUBLISHED["llama3.1-8b"]["max_position_embeddings"] == 131072
            and PUBLISHED["llama3-8b"]["max_position_embeddings"] == 8192)


def silu_minimum() -> tuple[float, float]:
    """(where, value) of the minimum of z * sigmoid(z), by ternary search on [-5, 0] in double precision."""
    def silu(z: float) -> float:
        return z / (1 + math.exp(-z))

    lo, hi = -5.0, 0.0
    for _ in range(200):
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        lo, hi = (lo, b) if silu(a) < silu(b) else (a, hi)
    return lo, silu(lo)


def llama3_params() -> dict[str, int]:
    """Llama 3 8B's parameters by the formula, from the published fields (no code/): embedding and output layer,
    then per block the attention (q, o: d x d; k, v: d x KV heads x head size), SwiGLU (3 x d x hidden) and two
    RMSNorm gains, and the final RMSNorm."""
    c = PUBLISHED["llama3-8b"]
    d, layers = c["hidden_size"], c["num_hidden_layers"]
    kv = c["num_key_value_heads"] * head_size("llama3-8b")
    attention, ffn, norms = 2 * d * d + 2 * d * kv, 3 * d * c["intermediate_size"], 2 * d
    embedding = c["vocab_size"] * d
    total = 2 * embedding + layers * (attention + ffn + norms) + d
    return {"total": total, "embedding": embedding, "attention": attention, "ffn": ffn,
            "block": attention + ffn + norms}


def fact_param_count_agrees() -> bool:
    return llama.param_count(llama.LLAMA3_8B) == llama3_params()["total"]


GIB = 2**30


def weights_gib() -> float:
    return 2 * llama3_params()["total"] / GIB  # float16


def mha_extra_params() -> int:
    """What Llama 3 8B would have more with 32 key-value heads (one per query head) and nothing else changed: each
    layer's W_K and W_V grow from d x (8 x 128) to d x d."""
    c = PUBLISHED["llama3-8b"]
    d, kv = c["hidden_size"], c["num_key_value_heads"] * head_size("llama3-8b")
    return c["num_hidden_layers"] * 2 * d * (d - kv)


def fact_batch_one(stated: list[Decimal]) -> str | None:
    """One 4096-token sequence: the GQA cache, the same model with MHA; what a step reads with MHA (its larger
    weights plus its cache) and with GQA; the saving is about a sixth (within 2.5 points of 1/6), and the cache's part
    of it equals the weights' part."""
    gqa, mha = kv_bytes("llama3-8b") * 4096 / GIB, kv_bytes("llama2-7b") * 4096 / GIB
    extra = 2 * mha_extra_params() / GIB
    read_mha, read_gqa = weights_gib() + extra + mha, weights_gib() + gqa
    if abs(1 - read_gqa / read_mha - 1 / 6) > 0.025:
        return f"the saving is {1 - read_gqa / read_mha:.3f} of a step's reads, not about a sixth"
    if abs((mha - gqa) - extra) > 1e-9:
        return f"the cache saves {mha - gqa:.2f} GiB, the weights {extra:.2f} GiB: not half each"
    return approx(lambda: gqa, lambda: mha, lambda: read_mha, lambda: read_gqa)(stated)


def fact_batch_many(stated: list[Decimal]) -> str | None:
    """32 such sequences: 16 GiB of cache with GQA, 64 with MHA, and 16 GiB is more than the weights."""
    n = int(stated[0])
    gqa, mha = n * kv_bytes("llama3-8b") * 4096 / GIB, n * kv_bytes("llama2-7b") * 4096 / GIB
    if not gqa > weights_gib():
        return "the cache is not larger than the weights"
    return approx(lambda: 32, lambda: gqa, lambda: mha, exact=True)(stated)


def kv_bytes(name: str) -> int:
    """2 (K and V) x layers x KV heads x head size x 2 bytes (float16), from the published fields."""
    c = PUBLISHED[name]
    head = c["hidden_size"] // c["num_attention_heads"]
    return 2 * c["num_hidden_layers"] * c["num_key_value_heads"] * head * 2


def fact_kv_quarter() -> bool:
    return fact_configs_as_published() and kv_bytes("llama2-7b") == 4 * kv_bytes("llama3-8b")


def fact_kv_sequence(stated: list[Decimal]) -> str | None:
    """A 4096-token sequence: 2 GiB and 0.5 GiB."""
    gib = [kv_bytes(n) * 4096 / 2**30 for n in ("llama2-7b", "llama3-8b")]
    return approx(lambda: gib[0], lambda: gib[1], exact=True)(stated)


@cache
def corpus() -> dict:
    poems = CORPUS.read_bytes().decode("utf-8").split("\n")[:-1]
    train = [p for i, p in enumerate(poems) if (i + 1) % 10 != 0]
    held = [p for i, p in enumerate(poems) if (i + 1) % 10 == 0]
    counts = collections.Counter("".join(p + "\n" for p in train))
    chars = sorted((c for c, n in counts.items() if n >= 2), key=lambda c: (-counts[c], ord(c)))
    return {"train": train, "held": held, "chars": chars}


def vocab_size() -> int:
    return 256 + len(corpus()["chars"])


def numel(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


@cache
def param_counts() -> dict[str, int]:
    V = vocab_size()
    with torch.device("meta"):
        gpt_total = (numel(nn.Embedding(V, D)) + numel(nn.Embedding(CONTEXT, D))
                     + LAYERS * numel(nn.TransformerEncoderLayer(D, HEADS, 4 * D)) + numel(nn.LayerNorm(D))
                     + numel(nn.Linear(D, V)))
        hd = D // HEADS

        def block(d_ff: int) -> int:
            attn = sum(numel(nn.Linear(D, n, bias=False)) for n in (HEADS * hd, KV_HEADS * hd, KV_HEADS * hd))
            attn += numel(nn.Linear(HEADS * hd, D, bias=False))
            ffn = 2 * numel(nn.Linear(D, d_ff, bias=False)) + numel(nn.Linear(d_ff, D, bias=False))
            return attn + ffn + 2 * D  # two RMSNorm gains

        llama_total = numel(nn.Embedding(V, D)) + LAYERS * block(D_FF) + D + numel(nn.Linear(D, V, bias=False))
    return {"gpt": gpt_total, "llama": llama_total, "tied_saving": V * D}


@cache
def result() -> dict:
    return llama_train.comparison(verbose=False)


def fact_artifact_shapes() -> bool:
    """The trained models are the ones counted here, trained with the budget the article states."""
    r, c = result(), param_counts()
    s = r["settings"]
    return (all(numel(run["model"]) == c[kind] for kind in ("gpt", "llama") for run in r["runs"][kind])
            and [run["seed"] for run in r["runs"]["llama"]] == list(SEEDS)
            and (s.steps, s.batch_size, s.context) == (STEPS, BATCH, CONTEXT)
            and r["runs"]["llama"][0]["model"].cfg.ffn_dim == D_FF)


def encode(text: str, chars: list[str]) -> list[int]:
    index = {c: 256 + i for i, c in enumerate(chars)}
    out: list[int] = []
    for ch in text:
        out += [index[ch]] if ch in index else list(ch.encode("utf-8"))  # byte fallback
    return out


def held_stream() -> tuple[list[int], list[int]]:
    """The validation poems as one token stream, and the position of the newline that ends each poem."""
    chars = corpus()["chars"]
    ids: list[int] = []
    ends: list[int] = []
    for p in corpus()["held"]:
        ids += encode(p, chars)
        ends.append(len(ids))
        ids += encode("\n", chars)
    return ids, ends


def final_windows() -> torch.Tensor:
    """From the newline after every third poem (the 1st, 4th, 7th, ...), 65 tokens: poems 2, 5, 8, ..."""
    ids, ends = held_stream()
    starts = [s for s in ends if s + CONTEXT + 1 <= len(ids)][::3]
    return torch.tensor([ids[s : s + CONTEXT + 1] for s in starts])


def curve_windows() -> torch.Tensor:
    """The 48 windows of the curves: evenly spaced over all the poem ends (rounded down)."""
    ids, ends = held_stream()
    starts = [s for s in ends if s + CONTEXT + 1 <= len(ids)]
    return torch.tensor([ids[starts[k * (len(starts) - 1) // 47] : starts[k * (len(starts) - 1) // 47] + CONTEXT + 1]
                         for k in range(48)])


def loss_on(model: nn.Module, rows: torch.Tensor) -> float:
    with torch.no_grad():
        logits = model(rows[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), rows[:, 1:].reshape(-1)).item()


@cache
def losses() -> dict[str, list[float]]:
    assert result()["chars"] == corpus()["chars"]
    rows = final_windows()
    return {kind: [loss_on(run["model"], rows) for run in result()["runs"][kind]] for kind in ("gpt", "llama")}


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def stage_one_loss() -> float:
    model, tok, _ = gpt.pretrained_gpt(verbose=False)
    assert tok.chars == corpus()["chars"]
    return loss_on(model, final_windows())


def paired_gaps() -> list[float]:
    """Llama minus GPT, seed by seed (the same batches)."""
    return [b - a for a, b in zip(losses()["gpt"], losses()["llama"], strict=True)]


def fact_gpt_lower_every_seed() -> bool:
    return all(g > 0 for g in paired_gaps())


def fact_curves() -> bool:
    """From the training records (the last point of each is recomputed in fact_stored_losses; the first is the
    untrained model, recomputed in fact_untrained_record): at step 0 every Llama seed is below every GPT seed, from
    step 25 on every GPT seed is below every Llama seed."""
    curves = {kind: [run["history"].eval_held_out for run in result()["runs"][kind]] for kind in ("gpt", "llama")}
    steps = result()["runs"]["gpt"][0]["history"].eval_steps
    for i, step in enumerate(steps):
        gpt_at, llama_at = [c[i] for c in curves["gpt"]], [c[i] for c in curves["llama"]]
        if step == 0 and not max(llama_at) < min(gpt_at):
            return False
        if step >= 25 and not max(gpt_at) < min(llama_at):
            return False
    return fact_untrained_record()


def fact_untrained_record() -> bool:
    """The step-0 points are the freshly initialised models of each seed on the 48 windows."""
    rows = curve_windows()
    for kind in ("gpt", "llama"):
        for run in result()["runs"][kind]:
            torch.manual_seed(run["seed"])
            fresh = llama_train.make_model(kind, vocab_size()).eval()
            if abs(run["history"].eval_held_out[0] - loss_on(fresh, rows)) > 1e-4:
                return False
    return True


def fact_stored_losses() -> bool:
    """The losses the artifact stored, and its curves' last point, are the ones recomputed here."""
    rows = curve_windows()
    for kind in ("gpt", "llama"):
        for run, recomputed in zip(result()["runs"][kind], losses()[kind], strict=True):
            if abs(run["held_out"] - recomputed) > 1e-4:
                return False
            if abs(run["history"].eval_held_out[-1] - loss_on(run["model"], rows)) > 1e-4:
                return False
            if run["history"].eval_steps != list(range(0, STEPS + 1, 25)):
                return False
    return True


def fact_token_ratio() -> bool:
    s, base = llama_train.COMPARE_SETTINGS, gpt.TrainSettings()
    return (s.steps * s.batch_size) * 8 == base.steps * base.batch_size and (base.steps, base.batch_size) == (300, 16)


def gpt_biases() -> int:
    """Every bias of the stage-one GPT's shape (attention, feed-forward, LayerNorms, output layer), counted on torch's
    own modules: the Llama-style model has none of them."""
    V = vocab_size()
    with torch.device("meta"):
        modules = [*(nn.TransformerEncoderLayer(D, HEADS, 4 * D) for _ in range(LAYERS)),
                   nn.LayerNorm(D), nn.Linear(D, V)]
    return sum(p.numel() for m in modules for name, p in m.named_parameters() if name.endswith("bias"))


def fact_windows_start() -> bool:
    """The first two final windows begin with the newline before the 2nd and the 5th validation poem."""
    chars, held, rows = corpus()["chars"], corpus()["held"], final_windows()
    return all(rows[i].tolist() == encode("".join("\n" + h for h in held[k : k + 4]), chars)[: CONTEXT + 1]
               for i, k in ((0, 1), (1, 4)))


def fact_same_recipe() -> bool:
    s, base = llama_train.COMPARE_SETTINGS, gpt.TrainSettings()
    return ((s.steps, s.batch_size, s.context, s.eval_every, s.eval_windows) == (STEPS, BATCH, CONTEXT, 25, 48)
            and (s.peak_lr, s.min_lr, s.weight_decay, s.clip) == (base.peak_lr, base.min_lr, base.weight_decay,
                                                                  base.clip)
            and llama_train.SEEDS == SEEDS)


def logits_gap() -> float:
    """MiniLlama vs LlamaForCausalLM (tiny random config, CPU, no download), n_kv_heads 1, 2 and 4, tied or not,
    and once with Llama 3's RoPE base 500000."""
    from transformers import LlamaForCausalLM

    worst = 0.0
    cases = [(n_kv, tie, 10000.0) for n_kv in (1, 2, 4) for tie in (False, True)] + [(2, False, 500000.0)]
    for n_kv, tie, base in cases:
        cfg = llama.MiniLlamaConfig(vocab_size=50, d_model=32, n_layers=2, n_heads=4, n_kv_heads=n_kv, d_ff=40,
                                    max_len=16, tie_weights=tie, rope_base=base)
        torch.manual_seed(n_kv)
        ours = llama.MiniLlama(cfg).eval()
        with torch.no_grad():
            for p in ours.parameters():
                p.normal_(0, 0.3)
        config, state = llama.to_hf(ours)
        theirs = LlamaForCausalLM(config).eval()
        theirs.load_state_dict(state)
        tokens = torch.randint(0, 50, (2, 16), generator=torch.Generator().manual_seed(n_kv))
        with torch.no_grad():
            a, b = ours(tokens), theirs(tokens).logits
        assert a.abs().max() > 1
        worst = max(worst, (a - b).abs().max().item())
    return worst


def fact_rope_curves() -> bool:
    """The figure's pair (seed 0, 16-dim, float64): with RoPE the curves for s = 0, 64, 1024 coincide; with the
    sinusoidal encoding added to q and k they do not."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(16, generator=gen, dtype=torch.float64)
    k = torch.randn(16, generator=gen, dtype=torch.float64)
    rope = [[(rotate(q, s + dist) @ rotate(k, s)).item() for dist in range(32)] for s in (0, 64, 1024)]
    same = all(abs(a - b) < 1e-9 for curve in rope[1:] for a, b in zip(rope[0], curve, strict=True))

    def pe(pos: int) -> torch.Tensor:
        i = torch.arange(0, 16, 2, dtype=torch.float64)
        angle = pos / 10000.0 ** (i / 16)
        return torch.stack((torch.sin(angle), torch.cos(angle)), dim=-1).flatten()

    added = [[((q + pe(s + dist)) @ (k + pe(s))).item() for dist in range(32)] for s in (0, 64, 1024)]
    differ = all(max(abs(a - b) for a, b in zip(added[0], curve, strict=True)) > 0.5 for curve in added[1:])
    return same and differ


# --------------------------------------------------------------------------- the table

N = r"(\d[\d,]*(?:\.\d+)?)"

CLAIMS = [
    Claim("eps", "article", r"`rms_norm_eps` 都是 `1e-05`", holds(fact_configs_as_published)),
    Claim("llama1 eps", "article", r"第一代 LLaMA 7B 发布的 `params.json` 里 `norm_eps` 正是 `1e-06`",
          holds(fact_eps_of_each_generation)),
    Claim("eps pitfall", "article", r"Llama 2、Llama 3 的配置里是 `1e-05`，第一代 LLaMA 是 `1e-06`，我们默认 `1e-6`",
          holds(fact_eps_of_each_generation)),
    Claim("silu minimum", "article", rf"SiLU 的最小值约为 \$-{N}\$，在 \$z\\approx-{N}\$ 处取到",
          approx(lambda: -silu_minimum()[1], lambda: -silu_minimum()[0])),
    Claim("slow pairs", "article",
          rf"Llama 2 7B 每头 {N} 维、底数 {N}、训练长度 {N}，{N} 对里有 {N} 对是这样", fact_slow_pairs),
    Claim("fastest pair", "article", rf"第 0 对最快，约 {N} 个位置一圈",
          approx(lambda: wavelengths(10000.0, 128)[0])),
    Claim("slowest pair", "article",
          rf"每头 (\d+) 维时，底数 (\d+) 的最慢一对要约 {N} 万个位置才转一圈，底数 (\d+) 要约 {N} 万个",
          lambda st: (None if fact_bases() else "bases differ from the configs")
          or approx(lambda: 128, lambda: 10000, lambda: 500000, exact=True)([st[0], st[1], st[3]])
          or approx(lambda: wavelengths(10000.0, 128)[-1] / 1e4, lambda: wavelengths(500000.0, 128)[-1] / 1e4)(
              [st[2], st[4]])),
    Claim("bases", "article", r"Llama 2 用的是 10000，Llama 3 把它提到 500000", holds(fact_bases)),
    Claim("llama3.1 config", "article",
          r"`factor` 为 8，`original_max_position_embeddings` 为 8192。它按波长分三档改频率：波长超过 8192 个位置的对，"
          r"转速除以 8；短于 2048 的不动", holds(fact_llama31_config)),
    Claim("llama3.1 bands", "article",
          r"每头 (\d+) 维、底数 (\d+) 时，(\d+) 对里有 (\d+) 对转速除以 8，(\d+) 对不动，(\d+) 对在中间",
          lambda st: (None if fact_bases() else "bases differ") or approx(
              lambda: 128, lambda: 500000, lambda: 64, *(lambda i=i: llama31_bands()[i] for i in range(3)),
              exact=True)(st)),
    Claim("llama3.1 context", "article", r"上下文从 8192 个词元拉到了 131072 个", holds(fact_llama31_config)),
    Claim("swiglu 171", "article", rf"\$d=64\$ 时取整为 {N}", approx(lambda: math.ceil(8 / 3 * 64), exact=True)),
    Claim("llama2 ffn", "article",
          rf"Llama 2 7B 的配置里是 {N}（\$\\tfrac\{{8\}}\{{3\}}\\times4096\$ 向上取到 256 的倍数",
          lambda st: approx(lambda: 256 * math.ceil(8 / 3 * 4096 / 256), exact=True)(st)
          or (None if fact_configs_as_published() else "config differs")),
    Claim("llama3 ffn", "article", rf"Llama 3 8B 更宽，是 {N}，即 \$d\$ 的 {N} 倍",
          approx(lambda: PUBLISHED["llama3-8b"]["intermediate_size"],
                 lambda: PUBLISHED["llama3-8b"]["intermediate_size"] / PUBLISHED["llama3-8b"]["hidden_size"],
                 exact=True)),
    Claim("kv bytes", "article",
          rf"有 (\d+) 层、(\d+) 个键值头、每头 (\d+) 维，float16 下每个词元要 {N} 字节（(\d+) KiB）.*"
          rf"但只有 (\d+) 个键值头，每个词元 {N} 字节（(\d+) KiB），是前者的四分之一",
          lambda st: (None if fact_kv_quarter() else "not a quarter") or approx(
              lambda: 32, lambda: 32, lambda: 128, lambda: kv_bytes("llama2-7b"), lambda: kv_bytes("llama2-7b") / 1024,
              lambda: 8, lambda: kv_bytes("llama3-8b"), lambda: kv_bytes("llama3-8b") / 1024, exact=True)(st)),
    Claim("kv sequence", "article", rf"一条 4096 个词元的序列，前者的缓存是 {N} GiB，后者是 {N} GiB", fact_kv_sequence),
    Claim("weights", "article", rf"Llama 3 8B 有 {N} 亿个参数，float16 下约 {N} GiB",
          lambda st: (None if fact_configs_as_published() else "config differs")
          or approx(lambda: llama3_params()["total"] / 1e8, weights_gib)(st)),
    Claim("mha weights", "article",
          rf"每层的 \$W_K\$、\$W_V\$ 从 {N}×{N} 变成 {N}×{N}，整个模型多出 {N} 亿个参数，float16 下约 {N} GiB",
          lambda st: approx(*(lambda v=v: v for v in (4096, 1024, 4096, 4096)), exact=True)(st[:4])
          or (None if (PUBLISHED["llama3-8b"]["hidden_size"], PUBLISHED["llama3-8b"]["num_key_value_heads"]
                       * head_size("llama3-8b")) == (4096, 1024) else "the shapes differ from the config")
          or approx(lambda: mha_extra_params() / 1e8, lambda: 2 * mha_extra_params() / GIB)(st[4:])),
    Claim("batch one", "article",
          rf"缓存是 {N} GiB，换成多头注意力是 {N} GiB，每一步读的大头是权重："
          rf"多头注意力那一版每一步读 {N} GiB，GQA 读 {N} GiB，省下约六分之一，缓存和权重各占一半",
          fact_batch_one),
    Claim("batch many", "article",
          r"同时生成 (\d+) 条这样的序列，缓存就有 (\d+) GiB（多头注意力要 (\d+) GiB），比权重还多",
          fact_batch_many),
    Claim("breakdown", "article",
          rf"用 `param_count` 数一数 Llama 3 8B：词表有 {N} 个词元，词嵌入和输出层各 {N} 亿个参数，合起来 {N} 亿，"
          rf"占全部 {N} 亿的 {N}%；其余几乎都在 (\d+) 个块里，每个块里 SwiGLU 占 {N}%，注意力占 {N}%",
          lambda st: (None if fact_param_count_agrees() else "param_count disagrees with the formula")
          or approx(lambda: PUBLISHED["llama3-8b"]["vocab_size"], exact=True)(st[:1])
          or approx(lambda: llama3_params()["embedding"] / 1e8, lambda: 2 * llama3_params()["embedding"] / 1e8,
                    lambda: llama3_params()["total"] / 1e8,
                    lambda: 100 * 2 * llama3_params()["embedding"] / llama3_params()["total"])(st[1:5])
          or approx(lambda: PUBLISHED["llama3-8b"]["num_hidden_layers"], exact=True)(st[5:6])
          or approx(lambda: 100 * llama3_params()["ffn"] / llama3_params()["block"],
                    lambda: 100 * llama3_params()["attention"] / llama3_params()["block"])(st[6:])),
    Claim("tying", "article", rf"唐诗模型的词表有 {N} 个词元，共享能省下 {N} 个参数",
          approx(vocab_size, lambda: param_counts()["tied_saving"], exact=True)),
    Claim("untied", "article", r"它们的 `config.json` 里 `tie_word_embeddings` 是 `false`",
          holds(fact_configs_as_published)),
    Claim("logits", "article", r"float32 下最大的差小于 \$10\^\{(-\d+)\}\$", below_power_of_ten(logits_gap)),
    Claim("params", "article", rf"GPT 有 {N} 个参数，Llama 式的有 {N} 个，只差 (\d+) 个",
          lambda st: (None if fact_artifact_shapes() else "the trained models differ") or approx(
              lambda: param_counts()["gpt"], lambda: param_counts()["llama"],
              lambda: param_counts()["gpt"] - param_counts()["llama"], exact=True)(st)),
    Claim("widened", "article", rf"隐藏维度从默认的 {N} 加宽到 {N}",
          approx(lambda: math.ceil(8 / 3 * D), lambda: D_FF, exact=True)),
    Claim("budget", "article",
          r"只训练 75 步、每步 8 段，每段 64 个词元。第一阶段是 300 步、每步 16 段，"
          r"这里的词元数只有它的八分之一",
          holds(lambda: fact_token_ratio() and fact_same_recipe())),
    Claim("runs", "article", r"(\d+) 次训练要在构建网站时跑完",
          approx(lambda: sum(len(result()["runs"][kind]) for kind in ("gpt", "llama")), exact=True)),
    Claim("windows", "article", rf"段与段不重叠，一共 {N} 段", approx(lambda: len(final_windows()), exact=True)),
    Claim("window starts", "article", r"从验证集的第 2、5、8……首诗开头（连同它前面那个换行）各截一段",
          holds(fact_windows_start)),
    Claim("biases", "article", rf"还有 GPT 里全部 {N} 个偏置", approx(gpt_biases, exact=True)),
    Claim("warmup", "article", rf"只是预热从 {N} 步缩短到 {N} 步",
          approx(lambda: gpt.TrainSettings().warmup, lambda: llama_train.COMPARE_SETTINGS.warmup, exact=True)),
    Claim("gpt row", "article", rf"^\| GPT（LayerNorm、GELU、位置嵌入、MHA） \| {N} \| {N} \| {N} \| {N} \| {N} \|$",
          lambda st: approx(lambda: param_counts()["gpt"], exact=True)(st[:1])
          or approx(*(lambda i=i: losses()["gpt"][i] for i in range(3)), lambda: mean(losses()["gpt"]))(st[1:])),
    Claim("llama row", "article", rf"^\| Llama 式（RMSNorm、SwiGLU、RoPE、GQA） \| {N} \| {N} \| {N} \| {N} \| {N} \|$",
          lambda st: approx(lambda: param_counts()["llama"], exact=True)(st[:1])
          or approx(*(lambda i=i: losses()["llama"][i] for i in range(3)), lambda: mean(losses()["llama"]))(st[1:])),
    Claim("stored losses", "article", r"^\| 模型 \| 参数 \| 种子 0", holds(fact_stored_losses)),
    Claim("gap per seed", "article",
          rf"逐个种子比，Llama 式的高出 {N} 到 {N}，平均高 {N}。这个差不大，但比同一个模型三个种子之间的差大"
          rf"（GPT 是 {N}，Llama 式是 {N}），方向也一致",
          lambda st: (None if fact_gpt_lower_every_seed() else "not lower in every seed") or approx(
              lambda: min(paired_gaps()), lambda: max(paired_gaps()), lambda: mean(paired_gaps()),
              lambda: max(losses()["gpt"]) - min(losses()["gpt"]),
              lambda: max(losses()["llama"]) - min(losses()["llama"]))(st)),
    Claim("every seed", "article", r"三个种子都是 GPT 的损失更低", holds(fact_gpt_lower_every_seed)),
    Claim("summary", "article", r"Llama 式的块的验证集损失比小 GPT 略高，三个种子都是这样",
          holds(lambda: fact_gpt_lower_every_seed() and fact_same_recipe())),
    Claim("curves", "article",
          r"第 0 步（还没训练）Llama 式的损失更低，那只是初始化不同；从第 25 步起，每个检查点都是 GPT 的三个种子更低",
          holds(fact_curves)),
    Claim("stage one", "article",
          rf"验证集损失在 6 左右，而第一阶段训练了 300 步、每步 16 段的那个 GPT，在同样的 123 段上是 {N}",
          lambda st: (None if all(5.8 < x < 6.2 for k in losses() for x in losses()[k]) else "not about 6")
          or approx(stage_one_loss)(st)),
    # captions
    Claim("rope caption", "rope-shift-table", r"左：RoPE，三条线完全重合", holds(fact_rope_curves)),
    Claim("kv caption", "kv-bytes-gqa", r"Llama 2 7B 是 32 个键值头（普通的多头注意力），Llama 3 8B 是 8 个",
          holds(fact_configs_as_published)),
    Claim("comparison caption", "llama-vs-gpt",
          r"各训练 75 步，每步 8 段、每段 64 个词元，种子 0、1、2 各一次；"
          r"两个模型都是 4 层、4 个头、d_model = 64，参数量只差 1 个",
          holds(lambda: fact_same_recipe() and fact_artifact_shapes()
                and param_counts()["gpt"] - param_counts()["llama"] == 1)),
    Claim("comparison caption curves", "llama-vs-gpt", r"每 25 步在验证集固定的 48 段上量一次损失",
          holds(fact_stored_losses)),
]


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.where}:{c.name}" for c in CLAIMS])
def test_claim_holds(claim: Claim) -> None:
    SOURCES.assert_holds(claim)


# --------------------------------------------------------------------------- no new unchecked number

NOT_COMPUTED: dict[str, str] = {
    "0.02": "the standard deviation init_weights draws from (a setting, like transformers' initializer_range)",
    "3.1": "a model's name (Llama 3.1), not a computed number",
    "2407.21783": "the arXiv identifier of the Llama 3 paper",
}
