"""The decoding article's computed exercise answers, recomputed independently (collected by test_answers.py too).

Each recomputation starts again from the settings the exercise states -- the made-up 「今天天气真」 logits, GPT-2
small's shapes, the grouped-query configuration -- written out here, and uses plain PyTorch or arithmetic: softmax
by ``torch.softmax``, top-k and top-p decided token by token (no sorting, ``math.fsum``), bytes from tensors on the
meta device. Nothing here calls ``code/sampling.py``, ``code/kv_cache.py`` or the answer functions; the build's
value comes from ``answers.compute_value`` (see ``test_answers.check``). The facts the explanations state in words
("不到 2 倍", "四分之一", ...) are checked at the end, and so is that each question still states the settings the
recomputation uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import pytest
import torch
from torch import nn

from llmsite import exercises
from llmsite.content import frontmatter
from tests.exercises.test_answers import ROOT, Value, check

ARTICLE = ROOT / "docs" / "articles" / "decoding.md"

# The made-up logits after 「今天天气真」, as the questions list them (largest first)
WORDS = ["好", "不错", "热", "冷", "晴朗", "闷", "糟", "奇怪"]
LOGITS = [3.0, 2.2, 1.8, 1.2, 0.8, 0.3, -0.5, -1.5]
K, P = 5, 0.9
# GPT-2 small: 12 layers, 12 heads of 64, d = 768, MLP 4d, vocabulary 50257
L, H, D_HEAD, D, VOCAB = 12, 12, 64, 768, 50257
KIB, MIB = 2**10, 2**20


def probs(logits: list[float], temperature: float = 1.0) -> list[float]:
    return torch.softmax(torch.tensor(logits, dtype=torch.float64) / temperature, dim=-1).tolist()


def ahead(p_list: list[float], i: int) -> float:
    """The probability of the tokens strictly more likely than token i."""
    return math.fsum(q for q in p_list if q > p_list[i])


def top_p_keep(p_list: list[float], p: float) -> list[bool]:
    return [ahead(p_list, i) < p for i in range(len(p_list))]


def top_k_keep(z: list[float], k: int) -> list[bool]:
    return [sum(other > zi for other in z) < k for zi in z]


# --------------------------------------------------------------------------- recomputations


def temperature_half_ratio() -> float:
    """The denominators cancel: p_好 / p_不错 = exp((3.0 - 2.2) / 0.5), whatever the other six words are."""
    p = probs(LOGITS, 0.5)
    ratio = p[0] / p[1]
    assert math.isclose(ratio, math.exp((3.0 - 2.2) / 0.5), rel_tol=1e-12)
    return ratio


def after_top_k() -> list[float]:
    """Temperature 1, top-k 5: the five largest logits renormalised, the rest 0."""
    keep = top_k_keep(LOGITS, K)
    kept = [z for z, m in zip(LOGITS, keep, strict=True) if m]
    renormalised = iter(probs(kept))
    return [next(renormalised) if m else 0.0 for m in keep]


def top_k_then_top_p_count() -> int:
    p = after_top_k()
    survivors = [m and q > 0 for m, q in zip(top_p_keep(p, P), p, strict=True)]
    return sum(survivors)


def top_p_first_dropped() -> str:
    """Temperature 0.5, top-p 0.9: the most likely word whose more likely words already sum to 0.9 or more."""
    p = probs(LOGITS, 0.5)
    dropped = [i for i, keep in enumerate(top_p_keep(p, P)) if not keep]
    first = max(dropped, key=lambda i: p[i])
    return WORDS[first]


@cache
def gpt2_matrices() -> tuple[nn.Module, ...]:
    """The matrices a decode step multiplies by (biases are not read as matrices): qkv, out, MLP up and down, and
    the output matrix (tied to the embedding, read once)."""
    with torch.device("meta"):
        return (nn.Linear(D, 3 * D, bias=False), nn.Linear(D, D, bias=False), nn.Linear(D, 4 * D, bias=False),
                nn.Linear(4 * D, D, bias=False), nn.Linear(D, VOCAB, bias=False))


def weight_read_bytes() -> int:
    qkv, out, up, down, unembed = gpt2_matrices()
    per_layer = sum(m.weight.numel() for m in (qkv, out, up, down))
    return (L * per_layer + unembed.weight.numel()) * 2  # float16


def cache_read_bytes(layers: int, kv_heads: int, d_head: int, positions: int, batch: int) -> int:
    """The K and V tensors of every layer in float16, allocated on the meta device."""
    with torch.device("meta"):
        tensors = [torch.empty(batch, kv_heads, positions, d_head, dtype=torch.float16) for _ in range(2 * layers)]
    return sum(x.numel() * x.element_size() for x in tensors)


def batch8_step_mib() -> float:
    """One decode step of 8 sequences of 1024 positions: the weights once, the cache of every sequence."""
    return (weight_read_bytes() + cache_read_bytes(L, H, D_HEAD, 1024, batch=8)) / MIB


def gqa_cache_kib() -> int:
    """32 layers, 32 query heads in groups of 4 -> 8 key/value heads of 128, one token, float16."""
    kv_heads = 32 // 4
    nbytes = cache_read_bytes(32, kv_heads, 128, 1, batch=1)
    assert nbytes % KIB == 0
    return nbytes // KIB


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "temperature-half-ratio": temperature_half_ratio,
    "top-k-then-top-p-count": top_k_then_top_p_count,
    "top-p-first-dropped": top_p_first_dropped,
    "batch8-step-mib": batch8_step_mib,
    "gqa-cache-kib": gqa_cache_kib,
}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])


# --------------------------------------------------------------------------- what the explanations say in words


def test_ratio_is_the_square_of_temperature_one() -> None:
    """「比值变成温度 1 时的平方」."""
    p1 = probs(LOGITS)
    assert math.isclose(temperature_half_ratio(), (p1[0] / p1[1]) ** 2, rel_tol=1e-12)


def test_top_k_and_top_p_together_are_stricter() -> None:
    """「排在「晴朗」前面的 4 个词加起来已经超过 0.9」 after top-k, and 「单独用 top-k 或单独用 top-p，「晴朗」都会
    留下」."""
    i = WORDS.index("晴朗")
    assert ahead(after_top_k(), i) > P
    assert top_k_keep(LOGITS, K)[i] and top_p_keep(probs(LOGITS), P)[i]
    assert top_k_then_top_p_count() < min(sum(top_k_keep(LOGITS, K)), sum(top_p_keep(probs(LOGITS), P)))


def test_top_p_explanation() -> None:
    """At temperature 0.5: 「好」 and 「不错」 just under 0.9 (热 is the one crossing p), the three before 「冷」 over
    it, the naive rule (cumulative including itself < p) drops 「热」, and fewer words survive than at temperature 1;
    the order is the same as at temperature 1, as the question says."""
    p = probs(LOGITS, 0.5)
    assert ahead(p, WORDS.index("热")) < P < math.fsum(p[:3])
    assert f"{ahead(p, WORDS.index('热')):.3f}" == "0.898"  # 「加起来约 0.898」
    assert ahead(p, WORDS.index("冷")) > P
    naive = [math.fsum(p[: i + 1]) < P for i in range(len(p))]
    assert WORDS[naive.index(False)] == "热"
    assert sum(top_p_keep(p, P)) < sum(top_p_keep(probs(LOGITS), P))
    assert p == sorted(p, reverse=True) and probs(LOGITS) == sorted(probs(LOGITS), reverse=True)


def test_batch_explanation() -> None:
    """「读的字节还不到 2 倍，乘加却是 8 倍」 and 「8 份缓存加起来已经比权重那一遍还多」."""
    one = (weight_read_bytes() + cache_read_bytes(L, H, D_HEAD, 1024, batch=1)) / MIB
    assert batch8_step_mib() < 2 * one
    assert cache_read_bytes(L, H, D_HEAD, 1024, batch=8) > weight_read_bytes()


def test_gqa_is_a_quarter_of_llama2() -> None:
    """「是 Llama 2 7B 的四分之一」: 32 key/value heads there."""
    assert 4 * gqa_cache_kib() * KIB == cache_read_bytes(32, 32, 128, 1, batch=1)


# --------------------------------------------------------------------------- the questions state these settings


STATED = {
    "temperature-half-ratio": ["3.0", "2.2", "温度取 0.5"],
    "top-k-then-top-p-count": ["好 3.0、不错 2.2、热 1.8、冷 1.2、晴朗 0.8、闷 0.3、糟 -0.5、奇怪 -1.5", "温度 1",
                               "$k=5$", "$p=0.9$"],
    "top-p-first-dropped": ["温度 0.5", "$p=0.9$"],
    "batch8-step-mib": ["GPT-2 small", "float16", "8 条序列", "1024 个位置"],
    "gqa-cache-kib": ["32 层、32 个查询头、每头 128 维", "每 4 个查询头共用一组键和值", "float16"],
}


def test_questions_state_the_recomputed_settings() -> None:
    fm = frontmatter.split(ARTICLE.read_text(encoding="utf-8"))
    parsed = exercises.parse(fm.body, fm.body_line, str(ARTICLE))
    assert not parsed.problems, parsed.problems
    questions = {ex.id: ex.question for ex in parsed.exercises}
    for ex_id, fragments in STATED.items():
        for fragment in fragments:
            assert fragment in questions[ex_id], f"练习 {ex_id} 的题目里没有「{fragment}」"
    assert set(STATED) == set(RECOMPUTED)
