"""Every computed exercise answer, recomputed independently and compared with what the build computes.

``RECOMPUTED`` maps each ``@exercise_answer`` name to a recomputation that does not call the answer function
(nor, where it can be avoided, the teaching module it calls): plain PyTorch, written out again here. The
build's value comes from the same call the figure step makes (``llmsite.figures.answers.compute_value``:
the module imported, seeded, time-limited). A recomputation returns the expected value; numbers are
compared within the exercise's own tolerance (or exactly), option texts exactly.

An article's answers may also live in a module of its own beside this one (``test_<article>_answers.py``
with its own ``RECOMPUTED``); ``test_every_declared_answer_is_recomputed`` collects all of them, so a new
``@exercise_answer`` without a recomputation fails the suite.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import torch

from llmsite import exercises
from llmsite.content import frontmatter
from llmsite.figures import answers, registry

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
Value = int | float | str


# --------------------------------------------------------------------------- 《Transformer 与注意力机制》


def causal_uniform_row4() -> float:
    """Equal scores, causal mask: row 4 spreads its weight evenly over the 4 positions it sees."""
    T = 6
    scores = torch.zeros(T, T)  # q = 0: every score is 0
    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    assert math.isclose(weights[3, 0].item(), 1 / 4)
    return weights[3, 0].item()


def mha_params_96() -> int:
    """A fused (d, 3d) projection and a (d, d) output projection, both with bias: 4d^2 + 4d."""
    d = 96
    fused, out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
    count = sum(p.numel() for layer in (fused, out) for p in layer.parameters())
    assert count == 4 * d * d + 4 * d
    return count


def rope_rotate(x: torch.Tensor, position: int, base: float = 10000.0) -> torch.Tensor:
    """RoPE written out again: the pair (2i, 2i+1) turned by position * base^(-2i/d)."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = position * theta
    even, odd = x[0::2], x[1::2]
    out = torch.empty_like(x)
    out[0::2] = even * torch.cos(angle) - odd * torch.sin(angle)
    out[1::2] = even * torch.sin(angle) + odd * torch.cos(angle)
    return out


def rope_same_score() -> str:
    """The pair of positions, among the four options, whose score equals (5, 7)'s: the same distance n - m."""
    generator = torch.Generator().manual_seed(3)  # the rope-relative figure's pair, as its caption describes
    q = torch.randn(64, generator=generator, dtype=torch.float64)
    k = torch.randn(64, generator=generator, dtype=torch.float64)

    def score(m: int, n: int) -> float:
        return (rope_rotate(q, m) @ rope_rotate(k, n)).item()

    target = score(5, 7)
    options = {(7, 5): "q 在位置 7，k 在位置 5", (0, 2): "q 在位置 0，k 在位置 2", (5, 5): "q 在位置 5，k 在位置 5",
               (10, 14): "q 在位置 10，k 在位置 14"}
    same = [text for (m, n), text in options.items() if abs(score(m, n) - target) < 1e-9]
    assert same == ["q 在位置 0，k 在位置 2"], same
    others = [abs(score(m, n) - target) for (m, n) in options if (m, n) != (0, 2)]
    assert min(others) > 1e-3, "the wrong options must really give other scores"
    return same[0]


def dk512_typical_max() -> str:
    """Unscaled d_k = 512: the row whose softmax Jacobian norm is the (lower) median of 256 has its largest weight
    above 0.9 -- and so do the rows around it, so the answer does not hang on which of them is "typical"."""
    d_k = 512
    generator = torch.Generator().manual_seed(d_k)  # the recipe the dk-explorer caption states
    q = torch.randn(256, d_k, generator=generator, dtype=torch.float64)
    k = torch.randn(64, d_k, generator=generator, dtype=torch.float64)
    p = (q @ k.T).softmax(dim=-1)
    jacobian = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # dp_i/dz_j = p_i (delta_ij - p_j)
    norms = jacobian.flatten(1).norm(dim=-1)
    order = norms.argsort()
    typical = int(order[(len(order) - 1) // 2])
    top = p[typical].max().item()
    assert all(p[int(i)].max().item() > 0.9 for i in order[118:138]), "the rows around the median saturate too"
    options = ("基本不变，一直在均匀分布的 1/64 附近", "慢慢升高，到 512 时也不到一半",
               "升高到 0.9 以上，几乎全部权重落在一个键上")
    assert top > 0.9
    return options[2]


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "causal-uniform-row4": causal_uniform_row4,
    "mha-params-96": mha_params_96,
    "rope-same-score": rope_same_score,
    "dk512-typical-max": dk512_typical_max,
}


# --------------------------------------------------------------------------- machinery


@cache
def declared() -> dict[str, registry.AnswerSpec]:
    return registry.discover_answers()


@cache
def exercises_using() -> dict[str, list[exercises.Exercise]]:
    """{answer name: the exercises of the articles that use it}."""
    out: dict[str, list[exercises.Exercise]] = {}
    for path in sorted((ROOT / "docs" / "articles").glob("*.md")):
        fm = frontmatter.split(path.read_text(encoding="utf-8"))
        for ex in exercises.parse(fm.body, fm.body_line, str(path)).exercises:
            if ex.answer:
                out.setdefault(ex.answer, []).append(ex)
    return out


def all_recomputed() -> dict[str, Callable[[], Value]]:
    found = dict(RECOMPUTED)
    for path in sorted(HERE.glob("test_*_answers.py")):
        module = importlib.import_module(f"tests.exercises.{path.stem}")
        for name, fn in getattr(module, "RECOMPUTED", {}).items():
            assert name not in found, f"{name} is recomputed twice ({path.name})"
            found[name] = fn
    return found


def check(name: str, recompute: Callable[[], Value]) -> None:
    """The build's value of answer ``name`` against ``recompute()``, judged as the page judges a reader."""
    spec = declared()[name]
    built = answers.compute_value(spec)
    expected = recompute()
    uses = exercises_using().get(name, [])
    assert uses, f"answer {name} ({spec.where}) is used by no exercise"
    for ex in uses:
        if isinstance(expected, str):
            assert built == expected, f"{spec.where}: the build says {built!r}, recomputed {expected!r}"
            assert expected in [o.text for o in ex.options], (expected, ex.options)
        else:
            assert isinstance(built, (int, float)) and not isinstance(built, str)
            tolerance = ex.tolerance or 0.0
            assert abs(built - expected) <= tolerance, f"{spec.where}: the build says {built}, recomputed {expected}"
            # and a reader typing the shown answer is right
            shown = float(exercises.format_value(built, ex.tolerance).replace(",", ""))
            assert abs(shown - expected) <= tolerance + 1e-12, (shown, expected)


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])


def test_every_declared_answer_is_recomputed() -> None:
    missing = sorted(set(declared()) - set(all_recomputed()))
    assert not missing, (
        "练习答案没有独立的重新计算：" + "、".join(missing)
        + "（在 tests/exercises/test_answers.py 或 tests/exercises/test_<文章>_answers.py 的 RECOMPUTED 里加一项）"
    )
    stale = sorted(set(all_recomputed()) - set(declared()))
    assert not stale, f"RECOMPUTED names answers that are no longer declared: {stale}"
