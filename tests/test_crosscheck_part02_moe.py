"""Cross-check: part02_parallelism.moe (the reference solution) against transformers 5.x's Mixtral MoE code.

- ``moe_forward`` equals ``MixtralSparseMoeBlock`` (eval mode, no jitter) on random weights, with our
  ``gate_proj`` / ``up_proj`` stacked into its fused ``experts.gate_up_proj`` (gate rows first);
- ``top_k_routing`` equals ``MixtralTopKRouter`` (softmax in float32, top-k, renormalised);
- ``load_balancing_loss`` times k equals ``load_balancing_loss_func`` (transformers divides the
  expert counts by the number of tokens T, we by T k as Switch and DeepSeek do).
"""
from __future__ import annotations

import pytest
import torch

from infralab.testing import assert_close, assert_equal, randn

mixtral = pytest.importorskip("transformers.models.mixtral.modeling_mixtral", reason="transformers (dev extra) not installed")

from transformers import MixtralConfig  # noqa: E402

from solutions.part02_parallelism import moe  # noqa: E402


def mixtral_block(router, gate, up, down, k):
    E, I, H = gate.shape
    config = MixtralConfig(hidden_size=H, intermediate_size=I, num_local_experts=E, num_experts_per_tok=k)
    block = mixtral.MixtralSparseMoeBlock(config).eval()
    with torch.no_grad():
        block.gate.weight.copy_(router)
        block.experts.gate_up_proj.copy_(torch.cat([gate, up], dim=1))
        block.experts.down_proj.copy_(down)
    return block


@pytest.mark.parametrize("E,k,T", [(4, 2, 7), (8, 2, 12), (6, 3, 5), (4, 1, 6)])
def test_moe_forward_equals_mixtral_sparse_moe_block(E, k, T, gen):
    H, I = 8, 6
    x = randn(2, T, H, generator=gen)
    router, gate, up, down = (randn(E, H, generator=gen), randn(E, I, H, generator=gen) * 0.3,
                              randn(E, I, H, generator=gen) * 0.3, randn(E, H, I, generator=gen) * 0.3)
    block = mixtral_block(router, gate, up, down, k)
    with torch.no_grad():
        expected = block(x)
        logits, weights, experts = block.gate(x)
    assert_close(moe.moe_forward(x, router, gate, up, down, k), expected, name="MoE block output", reduction=I * k)
    ours_w, ours_e = moe.top_k_routing(x.reshape(-1, H) @ router.T, k)
    assert_equal(ours_e, experts, name="chosen experts")
    assert_close(ours_w, weights, name="renormalised routing weights")


@pytest.mark.parametrize("E,k", [(4, 2), (8, 3), (5, 1)])
def test_load_balancing_loss_is_transformers_over_k(E, k, gen):
    logits = randn(10, E, generator=gen, scale=2.0)
    experts = moe.top_k_routing(logits, k)[1]
    theirs = mixtral.load_balancing_loss_func((logits,), E, k)
    assert_close(moe.load_balancing_loss(logits, experts, E) * k, theirs, name="k x our aux loss vs transformers'")
