"""Visible tests for part01_transformer.sampling: run `pytest exercises/part01_transformer -m sampling`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import math

import torch

from infralab.i18n import tr
from infralab.stats import assert_draws_follow
from infralab.testing import Mismatch, assert_close, assert_equal, randn

MODULE = "part01_transformer.sampling"
INF = float("inf")


def log_probs(*probs):
    return torch.tensor([[math.log(p) for p in probs]])


def test_top_k_keeps_the_k_largest_and_ties(impl, golden):
    z = torch.tensor([[1.0, 3.0, 2.0, 2.0, 0.0]])
    assert_equal(impl(MODULE).top_k_filter(z, 1), torch.tensor([[-INF, 3.0, -INF, -INF, -INF]]), name="top-1",
                 mistakes=golden.ref.top_k_mistakes(z, 1))
    # the 2nd largest value (2.0) is tied: both copies stay
    assert_equal(impl(MODULE).top_k_filter(z, 2), torch.tensor([[-INF, 3.0, 2.0, 2.0, -INF]]), name="top-2",
                 mistakes=golden.ref.top_k_mistakes(z, 2))


def test_top_k_on_random_logits_keeps_the_k_largest(impl, golden):
    z = randn(3, 20, generator=golden.gen)
    assert_equal(impl(MODULE).top_k_filter(z, 5), golden.ref.ref_top_k(z, 5), name="top-5", mistakes=golden.ref.top_k_mistakes(z, 5))


def test_top_p_keeps_the_token_that_reaches_p(impl, golden):
    z = log_probs(0.05, 0.5, 0.15, 0.3)
    m = impl(MODULE)
    assert_equal(m.top_p_filter(z, 0.1), torch.where(z == z.max(), z, -INF), name=("p=0.1 (top token only)",
                                                                                   "p=0.1（只保留概率最高的 token）"),
                 mistakes=golden.ref.top_p_mistakes(z, 0.1))
    # 0.5 < 0.7, 0.5 + 0.3 >= 0.7: the 0.3 token crosses p and is kept
    assert_equal(m.top_p_filter(z, 0.7), torch.tensor([[-INF, z[0, 1], -INF, z[0, 3]]]), name="p=0.7",
                 mistakes=golden.ref.top_p_mistakes(z, 0.7))
    assert_equal(m.top_p_filter(z, 0.9), torch.tensor([[-INF, z[0, 1], z[0, 2], z[0, 3]]]), name="p=0.9",
                 mistakes=golden.ref.top_p_mistakes(z, 0.9))


def test_top_p_keeps_tied_tokens_together(impl, golden):
    z = torch.tensor([[1.0, 1.0, 1.0, 0.0]])  # three tied tokens of probability 0.30 each, then 0.11
    # p = 0.5: nothing is more likely than the tied tokens (0 < p), so all three stay; transformers'
    # TopPLogitsWarper would cut inside the tie (the diagnosis names it)
    assert_equal(impl(MODULE).top_p_filter(z, 0.5), torch.tensor([[1.0, 1.0, 1.0, -INF]]), name=("p=0.5 with ties",
                                                                                                 "有并列时 p=0.5"),
                 mistakes=golden.ref.top_p_mistakes(z, 0.5))


def test_min_p_is_relative_to_the_top_probability(impl, golden):
    z = log_probs(0.4, 0.3, 0.2, 0.06, 0.04)
    # min_p = 0.35: threshold 0.35 * 0.4 = 0.14, so 0.06 and 0.04 go (not 0.3 and 0.2: they are below 0.35)
    assert_equal(impl(MODULE).min_p_filter(z, 0.35), torch.cat([z[:, :3], torch.full((1, 2), -INF)], 1),
                 name="min_p=0.35", mistakes=golden.ref.min_p_mistakes(z, 0.35))


def test_repetition_penalty_lowers_seen_tokens_of_either_sign(impl, golden):
    z = torch.tensor([[2.0, -2.0, 1.0, -1.0]])
    context = torch.tensor([[0, 1, 1]])
    got = impl(MODULE).apply_repetition_penalty(z, context, 2.0)
    assert_close(got, torch.tensor([[1.0, -4.0, 1.0, -1.0]]), mistakes=golden.ref.penalty_mistakes(z, context, 2.0))


def test_sample_is_greedy_at_temperature_zero_and_reproducible(impl, seed, gen):
    z = randn(32, 20, generator=gen)
    m = impl(MODULE)
    assert_equal(m.sample(z, seed=seed, temperature=0.0), z.argmax(-1), name=("greedy tokens", "贪心解码的 token"))
    assert_equal(m.sample(z, seed=seed), m.sample(z, seed=seed), name=("two draws with the same seed", "同一种子的两次采样"))


def test_sample_leaves_the_global_rng_alone(impl, seed, gen, golden):
    """sample draws with torch.Generator().manual_seed(seed): torch.manual_seed would reset the user's RNG."""
    z = randn(16, 10, generator=gen)
    diagnosis = golden.ref.GLOBAL_RNG
    state = torch.get_rng_state()
    impl(MODULE).sample(z, seed=seed)
    if not torch.equal(torch.get_rng_state(), state):
        raise Mismatch(tr("check.global_rng", name="sample"), diagnosis)


def test_sample_follows_softmax_of_logits_over_temperature(impl, seed, golden):
    z = torch.tensor([2.0, 1.0, 0.0, -1.0, -3.0])
    draws = impl(MODULE).sample(z.expand(40_000, 5).contiguous(), seed=seed, temperature=0.5)
    assert_draws_follow(draws, torch.softmax(z / 0.5, -1), mistakes=golden.ref.draw_mistakes(z, 0.5))
