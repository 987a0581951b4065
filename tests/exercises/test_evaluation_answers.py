"""The computed answers of the evaluation article's exercises, recomputed independently.

Collected by ``tests/exercises/test_answers.py`` (``RECOMPUTED`` here) and checked here with its ``check``: the
build's value (``answers.compute_value``) against a recomputation that calls neither the answer functions nor
``code/evaluation.py`` / ``code/verifiers.py``: pass@k by enumerating every pick with ``itertools.combinations``,
the Wilson bound from ``scipy.stats.binomtest``, and the 500-step model's pass@k recounted from its stored poems
by the article's claims test (``tests/figures/test_evaluation_claims.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from ..figures import test_evaluation_claims as evaluation_claims
from .test_answers import Value, check

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")


def pass_at_k_10_3_5() -> float:
    """Every way to pick 5 of 10 poems, the first 3 of them right: the share of picks holding a right one."""
    picks = list(itertools.combinations(range(10), 5))
    return sum(any(i < 3 for i in pick) for pick in picks) / len(picks)


def wilson_zero_of_342() -> float:
    from scipy.stats import binomtest

    return float(binomtest(0, 342).proportion_ci(method="wilson").high)


def capable_pass8_vs_pass1() -> str:
    if not evaluation_claims.fact_artifact():
        raise AssertionError("the comparison artifact is not what the models write")
    ratio = evaluation_claims.pass_at("capable-0", 8) / evaluation_claims.pass_at("capable-0", 1)
    options = ("不到 2 倍", "2 到 4 倍", "4 倍以上")
    return options[0] if ratio < 2 else options[1] if ratio < 4 else options[2]


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "pass-at-k-10-3-5": pass_at_k_10_3_5,
    "wilson-zero-of-342": wilson_zero_of_342,
    "capable-pass8-vs-pass1": capable_pass8_vs_pass1,
}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])
