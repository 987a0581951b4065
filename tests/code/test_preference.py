"""code/preference.py: the DPO and IPO losses equal trl's on the same batch of log-probabilities (trl's own loss code,
run by tests/code/trl_oracle.py), the log-probabilities of completions equal a position-by-position loop, and bad
input gets a clear error."""

from __future__ import annotations

import pytest
import torch
from preference import completion_log_probs, dpo_loss, ipo_loss

from .trl_oracle import trl_dpo_loss


def fixed_batch(seed: int, B: int = 5, T: int = 9) -> dict[str, torch.Tensor]:
    """Per-token log-probabilities for B chosen and B rejected completions of different lengths after a prompt."""
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(1, 4, (2 * B,), generator=g)
    length = torch.randint(1, T - 3, (2 * B,), generator=g)
    pos = torch.arange(T)
    completion_mask = (pos >= prompt[:, None]) & (pos < (prompt + length)[:, None])  # (2B, T)
    per_token = -torch.rand(2 * B, T - 1, generator=g, dtype=torch.float64) * 3
    per_token = torch.where(completion_mask[:, 1:], per_token, 0.0)
    ref = -torch.rand(2 * B, generator=g, dtype=torch.float64) * 10
    return {"per_token": per_token, "mask": completion_mask, "ref": ref, "length": completion_mask.sum(1)}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("beta", [0.05, 0.1, 0.5])
def test_dpo_loss_equals_trl(seed: int, beta: float) -> None:
    b = fixed_batch(seed)
    logps = b["per_token"].sum(1)
    chosen, rejected = logps.chunk(2)
    ref_chosen, ref_rejected = b["ref"].chunk(2)
    theirs = trl_dpo_loss(b["per_token"], b["mask"], ref_chosen, ref_rejected, beta, "sigmoid")
    ours = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta)
    assert abs(ours.item() - theirs.item()) <= 1e-6


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("beta", [0.1, 1.0])
def test_ipo_loss_equals_trl(seed: int, beta: float) -> None:
    b = fixed_batch(seed)
    chosen, rejected = b["per_token"].sum(1).chunk(2)
    ref_chosen, ref_rejected = b["ref"].chunk(2)
    len_chosen, len_rejected = b["length"].double().chunk(2)
    theirs = trl_dpo_loss(b["per_token"], b["mask"], ref_chosen, ref_rejected, beta, "ipo")
    ours = ipo_loss(chosen, rejected, ref_chosen, ref_rejected, beta, len_chosen, len_rejected)
    assert abs(ours.item() - theirs.item()) <= 1e-6


def test_dpo_loss_at_equal_policy_and_reference_is_log_2() -> None:
    x = torch.tensor([-3.0, -7.0])
    assert dpo_loss(x, x - 1, x, x - 1).item() == pytest.approx(torch.log(torch.tensor(2.0)).item())


def test_completion_log_probs_equal_a_loop() -> None:
    g = torch.Generator().manual_seed(0)
    B, T, V = 3, 7, 11
    logits = torch.randn(B, T, V, generator=g)
    tokens = torch.randint(0, V, (B, T), generator=g)
    mask = torch.zeros(B, T, dtype=torch.bool)
    mask[0, 3:] = True
    mask[1, 2:5] = True
    mask[2, 6] = True
    expected = []
    for b in range(B):
        total = 0.0
        for t in range(1, T):
            if mask[b, t]:
                total += torch.log_softmax(logits[b, t - 1], -1)[tokens[b, t]].item()
        expected.append(total)
    assert completion_log_probs(logits, tokens, mask).tolist() == pytest.approx(expected, abs=1e-5)


def test_masked_minus_infinity_does_not_give_nan() -> None:
    logits = torch.zeros(1, 3, 4)
    logits[0, 0, 2] = float("-inf")  # position 0 predicts token 2 with probability 0, but that token is prompt
    tokens = torch.tensor([[1, 2, 3]])
    mask = torch.tensor([[False, False, True]])
    assert completion_log_probs(logits, tokens, mask).item() == pytest.approx(torch.log(torch.tensor(0.25)).item())


def test_half_precision_logits_are_computed_in_float32() -> None:
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 6, 50, generator=g) * 30
    tokens = torch.randint(0, 50, (2, 6), generator=g)
    mask = torch.ones(2, 6, dtype=torch.bool)
    full = completion_log_probs(logits, tokens, mask)
    half = completion_log_probs(logits.bfloat16(), tokens, mask)
    assert half.dtype == torch.float32
    assert torch.isfinite(half).all()
    assert half.tolist() == pytest.approx(full.tolist(), rel=0.02)


V = torch.zeros(2)
BAD = [
    (lambda: dpo_loss([-1.0], V[:1], V[:1], V[:1]), "torch.Tensor"),
    (lambda: dpo_loss(V, V[:1], V, V), "相同"),
    (lambda: dpo_loss(torch.zeros(2, 1), torch.zeros(2, 1), torch.zeros(2, 1), torch.zeros(2, 1)), r"\(B,\)"),
    (lambda: dpo_loss(torch.zeros(0), torch.zeros(0), torch.zeros(0), torch.zeros(0)), r"\(B,\)"),
    (lambda: dpo_loss(V.long(), V.long(), V.long(), V.long()), "浮点"),
    (lambda: dpo_loss(V, V, V, V, beta=0), "beta"),
    (lambda: dpo_loss(V, V, V, V, beta="0.1"), "beta"),
    (lambda: ipo_loss(V, V, V, V, 0.1, torch.tensor([3.0, 0.0]), torch.ones(2)), "正数"),
    (lambda: ipo_loss(V, V, V, V, 0.1, torch.ones(3), torch.ones(2)), "chosen_lengths"),
    (lambda: completion_log_probs(torch.zeros(2, 5), torch.zeros(2, 5).long(), torch.ones(2, 5).bool()),
     r"\(B, T, V\)"),
    (lambda: completion_log_probs(torch.zeros(2, 5, 3), torch.zeros(2, 5, dtype=torch.int32),
                                  torch.ones(2, 5).bool()), "int64"),
    (lambda: completion_log_probs(torch.zeros(2, 5, 3), torch.zeros(2, 5).long(), torch.ones(2, 5)), "bool"),
    (lambda: completion_log_probs(torch.zeros(2, 5, 3), torch.full((2, 5), 3), torch.ones(2, 5).bool()), "0 到 2"),
    (lambda: completion_log_probs(torch.zeros(2, 1, 3), torch.zeros(2, 1).long(), torch.ones(2, 1).bool()),
     "2 个词元"),
    (lambda: completion_log_probs(torch.zeros(2, 5, 3), torch.zeros(2, 4).long(), torch.ones(2, 4).bool()),
     "tokens"),
]


@pytest.mark.parametrize(("call", "message"), BAD)
def test_bad_input_gets_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
