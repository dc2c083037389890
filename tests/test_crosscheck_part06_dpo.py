"""Cross-check: part06_post_training.dpo (the reference solution) against trl 1.13's DPO loss code.

trl 1.x has no standalone ``dpo_loss``: the formulas live in ``DPOTrainer._compute_loss(model,
inputs)``, which runs the policy and reference models, computes completion log-probs, the loss
and the logged metrics (rewards, margins, log-probs). We call that method unbound on a minimal
stand-in for the trainer, with two stand-in "models" that return fixed logits, one preference
pair per call (so the logged batch means are the pair's own values).

Conventions compared (see the stub's docstring):
- sequence log-probs: trl's ``completion_mask`` is our ``response_mask``; both shift by one;
- DPO sigmoid: equal (trl 1.13's "sigmoid" ignores ``label_smoothing``);
- conservative DPO: trl 1.13's ``"aot_unpaired"`` loss on a single pair is exactly cDPO;
- IPO: trl divides each log-ratio by the response length; ours equals it when given
  ``sequence_logps(..., average=True)``.
"""
from __future__ import annotations

import types

import pytest
import torch

from infralab.testing import assert_close

trl_dpo = pytest.importorskip("trl.trainer.dpo_trainer", reason="trl (dev extra) not installed")

from solutions.part06_post_training import dpo  # noqa: E402


class _FixedLogits(torch.nn.Module):
    """A "model" whose forward returns the logits it was built with."""

    def __init__(self, logits: torch.Tensor):
        super().__init__()
        self.logits = logits
        self.is_gradient_checkpointing = False

    def forward(self, **kwargs):
        return types.SimpleNamespace(logits=self.logits.clone(), aux_loss=None)


class _Accelerator:
    device = torch.device("cpu")

    @staticmethod
    def gather_for_metrics(t):
        return t

    @staticmethod
    def gather(t):
        return t

    @staticmethod
    def unwrap_model(m):
        return m


def _trl(policy_logits, ref_logits, input_ids, completion_mask, *, beta, loss_type, label_smoothing=0.0):
    """Run trl's DPOTrainer._compute_loss for one pair: rows [chosen, rejected]."""
    policy = _FixedLogits(policy_logits).train()
    trainer = types.SimpleNamespace(
        model=policy, ref_model=_FixedLogits(ref_logits), accelerator=_Accelerator(),
        aux_loss_enabled=False, ld_alpha=None, precompute_ref_logps=False,
        args=types.SimpleNamespace(gradient_checkpointing_kwargs=None),
        f_divergence_type="reverse_kl", loss_types=[loss_type], loss_weights=[1.0], beta=beta,
        label_smoothing=label_smoothing, use_weighting=False, _tp_size=1, _total_train_tokens=0,
        _metrics={"train": _Metrics(), "eval": _Metrics()},
    )
    inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids),
              "completion_mask": completion_mask}
    loss = trl_dpo.DPOTrainer._compute_loss(trainer, policy, inputs, return_outputs=False)
    metrics = {k: v[-1] for k, v in trainer._metrics["train"].items() if v}
    return loss, metrics


class _Metrics(dict):
    def __missing__(self, key):
        self[key] = []
        return self[key]


def _pair(gen, T=12, V=19):
    """One preference pair sharing a prompt of random length; responses of different lengths."""
    prompt = int(torch.randint(2, 6, (1,), generator=gen))
    ids = torch.randint(0, V, (2, T), generator=gen)
    ids[1, :prompt] = ids[0, :prompt]
    mask = torch.zeros(2, T, dtype=torch.long)
    mask[0, prompt:T] = 1
    mask[1, prompt:T - int(torch.randint(1, T - prompt, (1,), generator=gen))] = 1
    policy = torch.randn(2, T, V, generator=gen) * 2
    ref = policy + torch.randn(2, T, V, generator=gen)
    return policy, ref, ids, mask


def _ours(policy, ref, ids, mask, average=False):
    pol = dpo.sequence_logps(policy, ids, mask, average=average)
    rf = dpo.sequence_logps(ref, ids, mask, average=average)
    return pol[0:1], pol[1:2], rf[0:1], rf[1:2]


@pytest.mark.parametrize("beta", [0.1, 0.5])
def test_sigmoid_loss_logps_rewards_and_margins_equal_trl(beta):
    gen = torch.Generator().manual_seed(1234 + int(beta * 10))
    for _ in range(5):
        policy, ref, ids, mask = _pair(gen)
        loss, m = _trl(policy, ref, ids, mask, beta=beta, loss_type="sigmoid")
        pc, pr, rc, rr = _ours(policy, ref, ids, mask)
        assert_close(pc[0], torch.tensor(m["logps/chosen"]), name="chosen log-prob vs trl")
        assert_close(pr[0], torch.tensor(m["logps/rejected"]), name="rejected log-prob vs trl")
        assert_close(dpo.dpo_loss(pc, pr, rc, rr, beta=beta)[0], loss.detach(), name="DPO loss vs trl")
        chosen, rejected, margins = dpo.dpo_rewards(pc, pr, rc, rr, beta=beta)
        assert_close(chosen[0], torch.tensor(m["rewards/chosen"]), name="chosen reward vs trl")
        assert_close(rejected[0], torch.tensor(m["rewards/rejected"]), name="rejected reward vs trl")
        assert_close(margins[0], torch.tensor(m["rewards/margins"]), name="margin vs trl")


def test_trl_sigmoid_ignores_label_smoothing_ours_is_cdpo_equal_to_trl_aot_unpaired():
    gen = torch.Generator().manual_seed(99)
    for eps in (0.1, 0.3):
        policy, ref, ids, mask = _pair(gen)
        pc, pr, rc, rr = _ours(policy, ref, ids, mask)
        plain, _ = _trl(policy, ref, ids, mask, beta=0.2, loss_type="sigmoid", label_smoothing=eps)
        assert_close(dpo.dpo_loss(pc, pr, rc, rr, beta=0.2)[0], plain.detach(),
                     name="trl 1.13 sigmoid with label_smoothing (ignored) vs our plain DPO")
        cdpo, _ = _trl(policy, ref, ids, mask, beta=0.2, loss_type="aot_unpaired", label_smoothing=eps)
        assert_close(dpo.dpo_loss(pc, pr, rc, rr, beta=0.2, label_smoothing=eps)[0], cdpo.detach(),
                     name=f"conservative DPO (eps={eps}) vs trl aot_unpaired on one pair")


def test_ipo_equals_trl_when_given_length_averaged_logps():
    gen = torch.Generator().manual_seed(7)
    for beta in (0.1, 0.5, 1.0):
        policy, ref, ids, mask = _pair(gen)
        loss, _ = _trl(policy, ref, ids, mask, beta=beta, loss_type="ipo")
        averaged = dpo.dpo_loss(*_ours(policy, ref, ids, mask, average=True), beta=beta, loss_type="ipo")
        assert_close(averaged[0], loss.detach(), name="IPO on mean log-probs vs trl")
        summed = dpo.dpo_loss(*_ours(policy, ref, ids, mask), beta=beta, loss_type="ipo")
        assert not torch.allclose(summed[0], loss.detach()), \
            "IPO on summed log-probs should differ from trl's length-normalised IPO (the stated difference)"
