"""Visible tests for part06_post_training.dpo: run `pytest exercises/part06_post_training -m dpo`."""
import math

import pytest
import torch
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part06_post_training.dpo"


def test_sequence_logps_counts_only_response_tokens_with_shifted_logits(impl):
    """Uniform logits everywhere except one position that makes token 2 certain at t = 3."""
    V = 4
    logits = torch.zeros(1, 5, V)
    logits[0, 2, 2] = 50.0  # logits at t=2 predict the token at t=3, which is 2
    ids = torch.tensor([[0, 1, 3, 2, 1]])
    mask = torch.tensor([[0, 0, 0, 1, 1]])  # response = tokens 3 and 4
    # token 3: log p ~= 0 (certain); token 4 (predicted by uniform logits at t=3): -log 4
    expected = torch.tensor([F.log_softmax(logits[0, 2], -1)[2].item() - math.log(V)])
    got = impl(MODULE).sequence_logps(logits, ids, mask)
    assert_close(got, expected, name=("sequence log-prob", "序列的 log-prob"))
    got_mean = impl(MODULE).sequence_logps(logits, ids, mask, average=True)
    assert_close(got_mean, expected / 2, name=("mean log-prob over the 2 response tokens", "2 个回复 token 的平均 log-prob"))


def test_dpo_loss_is_log2_when_policy_equals_reference(impl, gen):
    logps = -randn(6, generator=gen).abs() * 20
    ref = logps.clone()
    other = -randn(6, generator=gen).abs() * 20
    loss = impl(MODULE).dpo_loss(logps, other, ref, other.clone(), beta=0.1)
    assert_close(loss, torch.full((6,), math.log(2.0)), name=("DPO loss at h = 0", "h = 0 时的 DPO 损失"))


def test_dpo_loss_matches_logsigmoid_formula(impl, gen):
    pc, pr, rc, rr = (randn(8, generator=gen, scale=5.0) for _ in range(4))
    h = (pc - rc) - (pr - rr)
    got = impl(MODULE).dpo_loss(pc, pr, rc, rr, beta=0.5)
    assert_close(got, -F.logsigmoid(0.5 * h), name=("DPO sigmoid loss", "DPO sigmoid 损失"))


def test_ipo_loss_is_zero_at_its_target_margin(impl):
    beta = 0.25  # target margin 1 / (2 * beta) = 2
    zero = torch.zeros(3)
    pc = torch.tensor([2.0, 3.0, 1.0])
    got = impl(MODULE).dpo_loss(pc, zero, zero, zero, beta=beta, loss_type="ipo")
    assert_close(got, torch.tensor([0.0, 1.0, 1.0]), name="IPO loss")


def test_rewards_and_margins_hand_computed(impl):
    pc, pr = torch.tensor([-10.0, -4.0]), torch.tensor([-12.0, -3.0])
    rc, rr = torch.tensor([-11.0, -4.0]), torch.tensor([-11.0, -5.0])
    chosen, rejected, margins = impl(MODULE).dpo_rewards(pc, pr, rc, rr, beta=0.5)
    assert_close(chosen, torch.tensor([0.5, 0.0]), name=("chosen rewards", "chosen 的奖励"))
    assert_close(rejected, torch.tensor([-0.5, 1.0]), name=("rejected rewards", "rejected 的奖励"))
    assert_close(margins, torch.tensor([1.0, -1.0]), name="margins")


def test_unknown_loss_type_raises_value_error(impl):
    x = torch.zeros(2)
    with pytest.raises(ValueError):
        impl(MODULE).dpo_loss(x, x, x, x, loss_type="hinge")


def test_beta_defaults_to_one_tenth(impl, gen):
    pc, pr, rc, rr = (randn(5, generator=gen, scale=5.0) for _ in range(4))
    h = (pc - rc) - (pr - rr)
    assert_close(impl(MODULE).dpo_loss(pc, pr, rc, rr), -F.logsigmoid(0.1 * h), name=("DPO loss with the default beta",
                                                                                      "默认 beta 下的 DPO 损失"),
                 mistakes={(f"the default beta is {b:g}, not 0.1",
                            f"默认 beta 是 {b:g}，而不是 0.1"): -F.logsigmoid(b * h) for b in (1.0, 0.5)})


def test_label_smoothing_gives_eps_to_the_flipped_preference(impl, gen):
    """Conservative DPO: (1 - eps) * -logsigmoid(beta h) + eps * -logsigmoid(-beta h)."""
    pc, pr, rc, rr = (randn(6, generator=gen, scale=5.0) for _ in range(4))
    h, beta, eps = (pc - rc) - (pr - rr), 0.5, 0.2
    got = impl(MODULE).dpo_loss(pc, pr, rc, rr, beta=beta, label_smoothing=eps)
    chosen_wins, rejected_wins = -F.logsigmoid(beta * h), -F.logsigmoid(-beta * h)
    assert_close(got, (1 - eps) * chosen_wins + eps * rejected_wins, name=("conservative DPO loss (eps = 0.2)",
                                                                           "保守 DPO 损失（eps = 0.2）"),
                 mistakes={("label smoothing on the wrong term (eps and 1 - eps swapped)",
                            "标签平滑加错了项（eps 与 1 - eps 对调了）"): eps * chosen_wins + (1 - eps) * rejected_wins,
                           ("label smoothing ignored (plain DPO)", "忽略了标签平滑（成了普通 DPO）"): chosen_wins})
