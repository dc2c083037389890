"""Visible tests for part06_post_training.grpo: run `pytest exercises/part06_post_training -m grpo`."""
import math

import pytest
import torch

from infralab.testing import assert_close, expect

MODULE = "part06_post_training.grpo"


def test_advantages_are_normalised_within_each_group(impl):
    rewards = torch.tensor([1.0, 2.0, 3.0, 10.0, 10.0, 13.0])  # two groups of three
    # group 0: mean 2, unbiased std 1; group 1: mean 11, unbiased std sqrt(3)
    s = math.sqrt(3.0)
    expected = torch.tensor([-1.0, 0.0, 1.0]) / (1.0 + 1e-4)
    expected = torch.cat([expected, torch.tensor([-1.0, -1.0, 2.0]) / (s + 1e-4)])
    assert_close(impl(MODULE).group_advantages(rewards, group_size=3), expected, name="GRPO advantages")


def test_dr_grpo_advantages_only_subtract_the_group_mean(impl):
    rewards = torch.tensor([0.0, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 9.0])  # two groups of four
    expected = torch.tensor([-0.75, 0.25, 0.25, 0.25, -1.0, -1.0, -1.0, 3.0])
    got = impl(MODULE).group_advantages(rewards, group_size=4, scale=False)
    assert_close(got, expected, name="Dr. GRPO advantages")


def test_a_group_with_equal_rewards_has_zero_advantage(impl):
    got = impl(MODULE).group_advantages(torch.tensor([3.0, 3.0, 3.0, 3.0]), group_size=4)
    assert_close(got, torch.zeros(4), name=("advantages of a constant group", "常数组的优势"))


def test_k3_kl_matches_its_formula_and_is_never_negative(impl):
    ln2 = math.log(2.0)
    logps = torch.tensor([[0.0, ln2, -1.0]])
    ref = torch.tensor([[ln2, 0.0, -1.0]])
    expected = torch.tensor([[1.0 - ln2, 0.5 + ln2 - 1.0, 0.0]])  # exp(d) - d - 1 with d = ref - logp
    got = impl(MODULE).kl_k3(logps, ref)
    assert_close(got, expected, name=("k3 KL per token", "每个 token 的 k3 KL"))
    expect(bool((got >= 0).all()), "part06.k3_negative", count=int((got < 0).sum()), got=float(got.min()))


def test_clipped_surrogate_takes_the_pessimistic_side(impl):
    ratios = torch.tensor([[1.5, 0.5, 0.5, 1.5, 1.0]])
    adv = torch.tensor([1.0])
    old = torch.zeros(1, 5)
    got_pos = impl(MODULE).grpo_per_token_loss(ratios.log(), old, adv, eps_low=0.2)
    # A > 0: ratio 1.5 clipped to 1.2; ratio 0.5 stays 0.5 (min picks the unclipped side)
    assert_close(got_pos, -torch.tensor([[1.2, 0.5, 0.5, 1.2, 1.0]]), name=("loss with A = +1", "A = +1 时的损失"))
    got_neg = impl(MODULE).grpo_per_token_loss(ratios.log(), old, -adv, eps_low=0.2)
    # A < 0: ratio 0.5 clipped to 0.8; ratio 1.5 stays 1.5
    assert_close(got_neg, torch.tensor([[1.5, 0.8, 0.8, 1.5, 1.0]]), name=("loss with A = -1", "A = -1 时的损失"))


def test_aggregation_modes_weight_tokens_differently(impl):
    loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 100.0, 100.0]])  # 100 = padding, must not count
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    agg = impl(MODULE).aggregate_loss
    assert_close(agg(loss, mask, "token_mean"), torch.tensor(2.5), name=("token mean (10 / 4 tokens)",
                                                                         "按 token 平均（10 / 4 个 token）"))
    assert_close(agg(loss, mask, "sequence_mean"), torch.tensor(3.0), name=("sequence mean ((2 + 4) / 2)",
                                                                            "按序列平均（(2 + 4) / 2）"))
    assert_close(agg(loss, mask, "constant", max_len=5), torch.tensor(1.0), name="Dr. GRPO (10 / (2 * 5))")


def test_group_size_must_divide_the_batch(impl):
    with pytest.raises(ValueError):
        impl(MODULE).group_advantages(torch.zeros(5), group_size=2)
