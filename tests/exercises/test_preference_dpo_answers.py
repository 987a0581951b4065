"""The computed answers of the DPO article's exercises, recomputed independently.

Collected by ``tests/exercises/test_answers.py`` (``RECOMPUTED`` here) and checked here with its ``check``: the
build's value (``answers.compute_value``) against a recomputation that calls neither the answer functions nor
``code/preference.py`` / ``code/dpo_train.py``: the DPO loss with ``math`` from the definition, and the artifact's
pairs and sweep recounted by the article's claims test (``tests/figures/test_preference_dpo_claims.py``), which
first checks the pairs and the poems against the models.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from ..figures import test_preference_dpo_claims as dpo_claims
from .test_answers import Value, check

pytestmark = pytest.mark.usefixtures("trained_artifacts", "one_thread")


def dpo_loss_two_nats() -> float:
    """-log sigmoid(beta * ((+2) - (-2))) with beta = 0.1."""
    margin = 0.1 * (2 - (-2))
    return -math.log(1 / (1 + math.exp(-margin)))


def dpo_same_heads_share() -> float:
    if not dpo_claims.fact_pairs(0):
        raise AssertionError("the seed-0 pairs are not what the article says")
    return dpo_claims.same_heads_share(0)


def dpo_beta_kl() -> str:
    if not dpo_claims.fact_artifact():
        raise AssertionError("the DPO artifact is not what the models write")
    kls = [dpo_claims.stored_kl(0, dpo_claims.run_name(b)) for b in dpo_claims.BETAS]
    rates = [dpo_claims.heads_rate(0, dpo_claims.run_name(b)) for b in dpo_claims.BETAS]
    smaller, flat = kls[-1] < kls[0], max(rates) - min(rates) < 2  # percentage points
    if not smaller:
        return "KL 变大，句首命中几乎不变"
    return "KL 变小，句首命中几乎不变" if flat else "KL 变小，句首命中明显上升"


RECOMPUTED: dict[str, Callable[[], Value]] = {
    "dpo-loss-two-nats": dpo_loss_two_nats,
    "dpo-same-heads-share": dpo_same_heads_share,
    "dpo-beta-kl": dpo_beta_kl,
}


@pytest.mark.parametrize("name", sorted(RECOMPUTED))
def test_answer(name: str) -> None:
    check(name, RECOMPUTED[name])
