"""The computed answers of the GRPO article's exercises, recomputed independently.

Collected by ``tests/exercises/test_answers.py`` (``RECOMPUTED`` here) and checked here with its ``check``: the
build's value (``answers.compute_value``) against a recomputation that calls neither the answer functions nor
``code/grpo.py`` / ``code/grpo_train.py``: the advantage with ``math`` from the paper's formula, the per-token weights
from the definition of the per-answer mean written out by hand, and the artifact's runs read by the article's claims
test (``tests/figures/test_grpo_claims.py``), which first checks the stored poems against the models.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from ..figures import test_grpo_claims as grpo_claims
from .test_answers import Value, check

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")


def grpo_advantage() -> float:
    """(r - mean) / std over the group, std with G - 1 (the paper's formula, without the code's tiny epsilon)."""
    rewards = [0.25, 1.0, 0.5, 0.25]
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1))
    return (1.0 - mean) / std


def grpo_token_weight() -> float:
    """The loss is (1/B) sum_i (1/|o_i|) sum_t (-A_i * ratio): d loss / d logp of one token is A_i / (B |o_i|)."""
    batch, short, long = 2, 5, 20
    return (1 / (batch * short)) / (1 / (batch * long))


def grpo_weak_flat() -> float:
    if not grpo_claims.fact_artifact():
        raise AssertionError("the GRPO artifact is not what the models write")
    return grpo_claims.flat_share("weak")


def grpo_form_only() -> str:
    if not grpo_claims.fact_artifact():
        raise AssertionError("the GRPO artifact is not what the models write")
    b, a = grpo_claims.heads_rate("form-only", "before"), grpo_claims.heads_rate("form-only", "after")
    if abs(a - b) < 1:  # percentage points
        return "格式上升，句首几乎不变"
    return "格式上升，句首也上升" if a > b else "格式上升，句首下降"


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "grpo-advantage": grpo_advantage,
    "grpo-token-weight": grpo_token_weight,
    "grpo-weak-flat": grpo_weak_flat,
    "grpo-form-only": grpo_form_only,
}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])
