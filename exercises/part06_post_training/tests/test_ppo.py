"""Visible tests for part06_post_training.ppo: run `pytest exercises/part06_post_training -m ppo`."""
import math

import torch

from infralab.testing import assert_close

MODULE = "part06_post_training.ppo"


def test_gae_hand_computed_with_an_episode_end(impl):
    """gamma = lam = 0.5; the episode ends at t = 1, so t = 0 sees only t = 1's delta."""
    rewards = torch.tensor([[1.0, 0.0, 2.0, 1.0]])
    values = torch.tensor([[0.5, 1.0, 0.0, 1.0]])
    dones = torch.tensor([[0, 1, 0, 0]])
    # t=3: 1 + 0.5*2 - 1 = 1;  t=2: (2 + 0.5*1 - 0) + 0.25*1 = 2.75
    # t=1: 0 - 1 = -1 (no bootstrap, no carry);  t=0: (1 + 0.5*1 - 0.5) + 0.25*(-1) = 0.75
    adv, ret = impl(MODULE).gae(rewards, values, dones, torch.tensor([2.0]), gamma=0.5, lam=0.5)
    assert_close(adv, torch.tensor([[0.75, -1.0, 2.75, 1.0]]), name="GAE advantages")
    assert_close(ret, torch.tensor([[1.25, 0.0, 2.75, 2.0]]), name="returns = A + V")


def test_returns_use_the_advantages_before_whitening(impl):
    rewards = torch.tensor([[1.0, 0.0, 2.0, 1.0]])
    values = torch.tensor([[0.5, 1.0, 0.0, 1.0]])
    dones = torch.tensor([[0, 1, 0, 0]])
    adv, ret = impl(MODULE).gae(rewards, values, dones, torch.tensor([2.0]), gamma=0.5, lam=0.5, normalize=True)
    raw = torch.tensor([[0.75, -1.0, 2.75, 1.0]])
    assert_close(adv, (raw - raw.mean()) / (raw.std() + 1e-8), name=("whitened advantages", "白化后的优势"))
    assert_close(ret, torch.tensor([[1.25, 0.0, 2.75, 2.0]]), name=("returns (from the raw advantages)", "回报（由原始优势得到）"))


def test_value_clipping_is_centred_on_the_old_value(impl):
    old = torch.ones(1, 4)
    returns = torch.full((1, 4), 2.0)
    values = torch.tensor([[1.5, 2.5, 1.1, 0.0]])
    # clipped values: 1.2, 1.2, 1.1, 0.8; 0.5 * max(unclipped^2, clipped^2)
    expected = torch.tensor([[0.32, 0.32, 0.405, 2.0]])
    got = impl(MODULE).clipped_value_loss(values, old, returns, clip_range=0.2)
    assert_close(got, expected, name=("clipped value loss", "裁剪后的价值损失"))


def test_policy_loss_takes_the_pessimistic_side(impl):
    ratios = torch.tensor([[1.5, 0.5, 1.5, 0.5]])
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    got = impl(MODULE).clipped_policy_loss(ratios.log(), torch.zeros(1, 4), adv, clip_range=0.2)
    assert_close(got, torch.tensor([[-1.2, -0.5, 1.5, 0.8]]), name=("clipped policy loss", "裁剪后的策略损失"))


def test_entropy_of_uniform_logits_is_log_vocab(impl):
    got = impl(MODULE).entropy_from_logits(torch.zeros(2, 3, 8))
    assert_close(got, torch.full((2, 3), math.log(8.0)), name=("entropy of a uniform distribution", "均匀分布的熵"))


def test_entropy_bonus_lowers_the_total_loss(impl):
    z = torch.zeros(1, 2)
    mask = torch.ones(1, 2)
    total, pg, vf, ent = impl(MODULE).ppo_loss(z, z, z, z, z, z, torch.full((1, 2), 3.0), mask, ent_coef=0.1)
    assert_close(ent, torch.tensor(3.0), name=("mean entropy", "平均熵"))
    assert_close(total, torch.tensor(-0.3), name=("total = pg + vf_coef * vf - ent_coef * entropy",
                                                  "total = pg + vf_coef * vf - ent_coef * entropy"))
