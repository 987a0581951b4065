"""Run trl's own loss code on a fixed batch, without a model, a dataset or an accelerator.

trl 1.16 computes the DPO and GRPO losses inside the trainers' ``_compute_loss`` methods, which take a model and the
batch. Building a real trainer needs a Hugging Face model and a dataset, and would test their plumbing, not the loss.
Here each method is called unbound on a small stand-in for the trainer that carries exactly the attributes it reads
(settings, a metrics dict, an accelerator whose gathers are the identity), and a stand-in model whose output carries the
per-token log-probabilities we fix. What runs is trl's code, line for line, on our numbers.

If trl renames an attribute these methods read, the stand-in raises AttributeError naming it: update it here.

trl is imported inside the two functions, not at the top: importing it takes about 5 CPU-seconds, and every pytest-xdist
worker imports this module while it collects the tests; only the worker that runs an oracle test needs trl.
"""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import torch
from torch import Tensor


class _Accelerator:
    device = torch.device("cpu")
    num_processes = 1
    sync_gradients = True

    @staticmethod
    def gather(x: Tensor) -> Tensor:
        return x

    gather_for_metrics = gather

    @staticmethod
    def reduce(x: Tensor, reduction: str = "sum") -> Tensor:
        return x

    @staticmethod
    def unwrap_model(model: object) -> object:
        return model


def _metrics() -> defaultdict:
    return defaultdict(lambda: defaultdict(list))


def trl_dpo_loss(per_token_logps: Tensor, completion_mask: Tensor, ref_chosen: Tensor, ref_rejected: Tensor,
                 beta: float, loss_type: str = "sigmoid") -> Tensor:
    """trl's DPO loss for a batch laid out as trl lays it out: the chosen rows first, then the rejected rows.

    per_token_logps (2B, T-1): log-probability of token t+1 at position t, already 0 where it is not a completion
    token (trl's fused head returns 0 for ignored labels); completion_mask (2B, T) marks the completion tokens;
    ref_chosen / ref_rejected (B,): the reference model's summed log-probabilities (trl's precomputed reference)."""
    n = per_token_logps.size(0)
    outputs = SimpleNamespace(
        log_probs=per_token_logps,
        entropy=torch.zeros_like(per_token_logps),
        mean_logits=torch.zeros_like(per_token_logps),
        is_top1=torch.zeros_like(per_token_logps, dtype=torch.bool),
    )

    def model(**kwargs: object) -> SimpleNamespace:
        return outputs

    model.training = True  # type: ignore[attr-defined]
    trainer = SimpleNamespace(
        model=model, ref_model=None, accelerator=_Accelerator(), aux_loss_enabled=False, beta=beta,
        loss_types=[loss_type], loss_weights=[1.0], f_divergence_type="reverse_kl", f_alpha_divergence_coef=1.0,
        ld_alpha=None, precompute_ref_logps=True, use_weighting=False, label_smoothing=0.0,
        _metrics=_metrics(), _total_train_tokens=0, _tp_size=1,
    )
    inputs = {
        "input_ids": torch.zeros(n, completion_mask.size(1), dtype=torch.long),
        "attention_mask": torch.ones(n, completion_mask.size(1), dtype=torch.long),
        "completion_mask": completion_mask.long(),
        "ref_chosen_logps": ref_chosen,
        "ref_rejected_logps": ref_rejected,
    }
    from trl.trainer.dpo_trainer import DPOTrainer

    return DPOTrainer._compute_loss(trainer, model, inputs, return_outputs=False)


def trl_grpo_loss(per_token_logps: Tensor, old_per_token_logps: Tensor, ref_per_token_logps: Tensor,
                  advantages: Tensor, completion_mask: Tensor, beta: float, epsilon: float,
                  loss_type: str = "grpo", max_completion_length: int | None = None) -> Tensor:
    """trl's GRPO loss on fixed per-token log-probabilities (B, T) of the completions, their advantages (B,) and
    mask (B, T): the policy's (with gradient), the sampling policy's and the reference model's."""
    B, T = per_token_logps.shape

    def per_token(model: object, input_ids: Tensor, attention_mask: Tensor, logits_to_keep: int,
                  **kwargs: object) -> tuple[Tensor, Tensor, None]:
        return per_token_logps, torch.zeros_like(per_token_logps), None

    model = SimpleNamespace(training=True)
    trainer = SimpleNamespace(
        model=model, accelerator=_Accelerator(), _get_per_token_logps_and_entropies=per_token,
        aux_loss_enabled=False, top_entropy_quantile=1.0, off_policy_mask_threshold=None,
        importance_sampling_level="token", beta=beta, loss_type=loss_type,
        epsilon_low=epsilon, epsilon_high=epsilon, use_vllm=False, vllm_importance_sampling_correction=False,
        current_gradient_accumulation_steps=1, max_completion_length=max_completion_length or T,
        _entropy_bonus_enabled=False, _metrics=_metrics(),
        args=SimpleNamespace(use_bias_correction_kl=False, delta=None),
    )
    inputs = {
        "prompt_ids": torch.zeros(B, 1, dtype=torch.long), "prompt_mask": torch.ones(B, 1, dtype=torch.long),
        "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": completion_mask.long(),
        "advantages": advantages, "old_per_token_logps": old_per_token_logps,
        "ref_per_token_logps": ref_per_token_logps,
    }
    from trl.trainer.grpo_trainer import GRPOTrainer

    return GRPOTrainer._compute_loss(trainer, model, inputs)
