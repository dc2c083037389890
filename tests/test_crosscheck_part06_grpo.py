"""Cross-check: part06_post_training.grpo (the reference solution) against trl 1.13's GRPO code.

trl 1.x has no standalone GRPO loss: the per-token formulas and the aggregation live in
``GRPOTrainer._compute_loss(model, inputs)``, which first runs the model for per-token log-probs
(``_get_per_token_logps_and_entropies``). We call ``_compute_loss`` unbound on a minimal stand-in
trainer whose ``_get_per_token_logps_and_entropies`` returns fixed log-probs, with the same
``old_per_token_logps``, ``ref_per_token_logps``, advantages and completion mask, one process, no
gradient accumulation. trl's group normalisation sits inside the rollout code
(``_generate_and_score_completions``, which needs a model, a tokenizer and reward functions); we
compare ours with its formula written with trl's own ``nanstd``: ``(r - mean_g) / (nanstd_g + 1e-4)``.

Conventions compared (see the stub's docstrings):
- ``loss_type="dapo"`` (trl 1.13's default; ``num_items_in_batch`` = the mask's sum) and
  ``"bnpo"`` are our ``"token_mean"``; ``"grpo"`` is ``"sequence_mean"``; ``"dr_grpo"`` is
  ``"constant"`` with ``max_len = max_completion_length``;
- the KL term (``beta > 0``) is k3, added to the clipped per-token loss before aggregation.
"""
from __future__ import annotations

import types

import pytest
import torch

from infralab.testing import assert_close

trl_grpo = pytest.importorskip("trl.trainer.grpo_trainer", reason="trl (dev extra) not installed")
trl_utils = pytest.importorskip("trl.trainer.utils", reason="trl (dev extra) not installed")

from solutions.part06_post_training import grpo  # noqa: E402

OUR_MODE = {"dapo": "token_mean", "bnpo": "token_mean", "grpo": "sequence_mean", "dr_grpo": "constant"}


class _Accelerator:
    num_processes = 1
    sync_gradients = True

    @staticmethod
    def gather(t):
        return t

    gather_for_metrics = gather

    @staticmethod
    def reduce(t, reduction="sum"):
        return t


class _Metrics(dict):
    def __missing__(self, key):
        self[key] = []
        return self[key]


def _trl_loss(logps, old, ref, adv, mask, *, loss_type, beta, eps_low, eps_high, max_len):
    trainer = types.SimpleNamespace(
        _get_per_token_logps_and_entropies=lambda *a, **k: (logps, torch.zeros_like(logps), None),
        top_entropy_quantile=1.0, off_policy_mask_threshold=None, importance_sampling_level="token",
        beta=beta, loss_type=loss_type, epsilon_low=eps_low, epsilon_high=eps_high, use_vllm=False,
        vllm_importance_sampling_correction=False, model=torch.nn.Module().train(),
        current_gradient_accumulation_steps=1, accelerator=_Accelerator(), max_completion_length=max_len,
        _entropy_bonus_enabled=False, aux_loss_enabled=False, _metrics={"train": _Metrics(), "eval": _Metrics()},
        args=types.SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=1),
    )
    B, T = logps.shape
    inputs = {"prompt_ids": torch.zeros(B, 2, dtype=torch.long), "prompt_mask": torch.ones(B, 2, dtype=torch.long),
              "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": mask,
              "advantages": adv, "old_per_token_logps": old, "ref_per_token_logps": ref,
              "num_items_in_batch": mask.sum().float()}
    return trl_grpo.GRPOTrainer._compute_loss(trainer, trainer.model, inputs)


def _rollout(gen, B, T):
    old = -torch.rand(B, T, generator=gen) * 3 - 0.05
    logps = old + torch.randn(B, T, generator=gen) * 0.3
    ref = old + torch.randn(B, T, generator=gen) * 0.3
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    mask = (torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)).long()
    return logps, old, ref, mask


@pytest.mark.parametrize("loss_type", ["dapo", "bnpo", "grpo", "dr_grpo"])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_grpo_loss_equals_trl(loss_type, beta):
    gen = torch.Generator().manual_seed(4321 + len(loss_type) + int(beta * 100))
    G, groups, T = 4, 3, 10
    for eps_low, eps_high in ((0.2, 0.2), (0.2, 0.28)):
        logps, old, ref, mask = _rollout(gen, G * groups, T)
        rewards = torch.randn(G * groups, generator=gen)
        adv = grpo.group_advantages(rewards, group_size=G)
        expected = _trl_loss(logps, old, ref, adv, mask, loss_type=loss_type, beta=beta,
                             eps_low=eps_low, eps_high=eps_high, max_len=T)
        per_token = grpo.grpo_per_token_loss(logps, old, adv, ref_logps=ref, beta=beta,
                                             eps_low=eps_low, eps_high=eps_high)
        ours = grpo.aggregate_loss(per_token, mask, OUR_MODE[loss_type], max_len=T)
        assert_close(ours, expected.detach(), name=f"GRPO loss vs trl {loss_type} (beta={beta})")


def test_group_advantages_equal_trl_formula_with_its_nanstd():
    gen = torch.Generator().manual_seed(17)
    for G in (2, 4, 8):
        rewards = torch.randn(3 * G, generator=gen) * 2
        grouped = rewards.view(-1, G)
        mean = grouped.mean(1).repeat_interleave(G)
        std = trl_utils.nanstd(grouped, dim=1).repeat_interleave(G)
        assert_close(grpo.group_advantages(rewards, group_size=G), (rewards - mean) / (std + 1e-4),
                     name=f"group advantages vs trl's formula (G={G})")
        assert_close(grpo.group_advantages(rewards, group_size=G, scale=False), rewards - mean,
                     name=f"Dr. GRPO advantages vs trl scale_rewards='none' (G={G})")
