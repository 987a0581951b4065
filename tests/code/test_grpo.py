"""code/grpo.py: the per-token loss equals trl's GRPO and Dr. GRPO losses on a fixed batch (trl's own loss code, run by
tests/code/trl_oracle.py). trl computes the group advantages inline while it generates and scores completions, not in
a function that takes a fixed batch of rewards, so ``group_advantages`` is checked against the formula of the GRPO paper
written out here, with trl's own ``nanstd`` as the standard deviation."""

from __future__ import annotations

import pytest
import torch
from grpo import group_advantages, grpo_loss

from .trl_oracle import trl_grpo_loss


def fixed_batch(seed: int, B: int = 6, T: int = 8) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None, :] < lengths[:, None]
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 4
    logps = old + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.3  # ratios on both sides of the clip
    ref = old + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.2
    advantages = torch.randn(B, generator=g, dtype=torch.float64)
    return {"logps": logps, "old": old, "ref": ref, "adv": advantages, "mask": mask}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("beta", "clip"), [(0.0, 0.2), (0.02, 0.2), (0.1, 0.1)])
def test_grpo_loss_equals_trl(seed: int, beta: float, clip: float) -> None:
    b = fixed_batch(seed)
    theirs = trl_grpo_loss(b["logps"], b["old"], b["ref"], b["adv"], b["mask"], beta, clip, "grpo")
    ours = grpo_loss(b["logps"], b["old"], b["ref"], b["adv"], b["mask"], beta, clip)
    assert abs(ours.item() - theirs.item()) <= 1e-6


@pytest.mark.parametrize("seed", range(4))
def test_dr_grpo_loss_equals_trl(seed: int) -> None:
    b = fixed_batch(seed)
    theirs = trl_grpo_loss(b["logps"], b["old"], b["ref"], b["adv"], b["mask"], 0.02, 0.2, "dr_grpo")
    ours = grpo_loss(b["logps"], b["old"], b["ref"], b["adv"], b["mask"], 0.02, 0.2, per_sequence=False)
    assert abs(ours.item() - theirs.item()) <= 1e-6


def test_the_clip_is_what_limits_the_gradient() -> None:
    """A token whose ratio is already past 1 + clip with a positive advantage gets no gradient; inside it does."""
    old = torch.zeros(1, 2)
    logps = torch.tensor([[0.5, 0.05]], requires_grad=True)  # ratios e^0.5 ≈ 1.65 (clipped), e^0.05 ≈ 1.05
    grpo_loss(logps, old, logps.detach(), torch.ones(1), torch.ones(1, 2, dtype=torch.bool), beta=0.0).backward()
    assert logps.grad[0, 0] == 0 and logps.grad[0, 1] < 0


def test_group_advantages_follow_the_paper() -> None:
    g = torch.Generator().manual_seed(0)
    rewards = torch.rand(5, 8, generator=g)
    rewards[2] = 0.75  # a group whose answers all scored the same
    from trl.trainer.utils import nanstd  # imported here: see tests/code/trl_oracle.py

    expected = (rewards - rewards.mean(1, keepdim=True)) / (nanstd(rewards, dim=1, keepdim=True) + 1e-4)
    assert torch.allclose(group_advantages(rewards), expected, atol=1e-7)
    assert (group_advantages(rewards)[2] == 0).all()
    assert torch.allclose(group_advantages(rewards, scale=False), rewards - rewards.mean(1, keepdim=True))


def test_advantages_sum_to_zero_in_each_group() -> None:
    rewards = torch.tensor([[0.0, 1.0, 1.0, 0.5], [0.25, 0.0, 0.0, 0.0]])
    assert group_advantages(rewards).sum(1).abs().max() < 1e-6


M = torch.ones(2, 3, dtype=torch.bool)
Z = torch.zeros(2, 3)
BAD = [
    (lambda: group_advantages([[0.0, 1.0]]), "torch.Tensor"),
    (lambda: group_advantages(torch.zeros(4)), r"\(P, G\)"),
    (lambda: group_advantages(torch.zeros(3, 1)), "至少要有 2 个"),
    (lambda: group_advantages(torch.zeros(3, 2, dtype=torch.long)), "浮点"),
    (lambda: group_advantages(torch.tensor([[0.0, float("nan")]])), "NaN"),
    (lambda: group_advantages(torch.zeros(3, 2), eps=0), "eps"),
    (lambda: grpo_loss(Z, Z, Z, torch.zeros(2), M.float()), "bool"),
    (lambda: grpo_loss(Z, Z, Z, torch.zeros(3), M), r"\(2,\)"),
    (lambda: grpo_loss(Z, Z[:, :2], Z, torch.zeros(2), M), "old_logps"),
    (lambda: grpo_loss(Z, Z, Z, torch.zeros(2), M, clip=1.5), "小于 1"),
    (lambda: grpo_loss(Z, Z, Z, torch.zeros(2), M, beta=-0.1), "beta"),
    (lambda: grpo_loss(torch.zeros(0, 3), torch.zeros(0, 3), torch.zeros(0, 3), torch.zeros(0),
                       torch.ones(0, 3, dtype=torch.bool)), "B、T ≥ 1"),
    (lambda: grpo_loss(Z.long(), Z, Z, torch.zeros(2), M), "浮点"),
]


@pytest.mark.parametrize(("call", "message"), BAD)
def test_bad_input_gets_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
