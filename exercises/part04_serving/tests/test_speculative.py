"""Visible tests for part04_serving.speculative: `pytest exercises/part04_serving -m speculative`.

The rejection sampler is checked on hand-made distributions whose right outcome is certain, and
once statistically (a correct sampler fails that check with probability < 2e-9)."""
import math

import torch

from infralab.i18n import tr
from infralab.stats import assert_draws_follow
from infralab.testing import assert_close, assert_equal, expect

MODULE = "part04_serving.speculative"
OWN_STREAM = 1_000_003  # the sampler's seed differs from the drafts' generator seed: the same stream would
#                         make its uniforms the very numbers the drafts were drawn from (correlated)


def one_hot_logits(tokens, vocab=8):
    logits = torch.zeros(len(tokens), vocab)
    logits[torch.arange(len(tokens)), torch.tensor(tokens)] = 5.0
    return logits


def test_greedy_keeps_the_agreeing_prefix_then_emits_the_target_token(impl):
    target = one_hot_logits([3, 1, 4, 1, 5])  # argmax per row; row 4 is the bonus position
    got = impl(MODULE).greedy_verify(torch.tensor([3, 1, 6, 1]), target)
    assert_equal(got.tolist(), [3, 1, 4], name=("greedy output", "贪心解码的输出"),
                 mistakes={("stopped at the disagreement without the target's token", "在不一致处停止，没有输出目标模型的 token"): [3, 1],
                           ("emitted the draft's token at the disagreement", "在不一致处输出了草稿 token"): [3, 1, 6]})


def test_greedy_adds_the_bonus_token_when_the_whole_draft_agrees(impl):
    got = impl(MODULE).greedy_verify(torch.tensor([3, 1, 4, 1]), one_hot_logits([3, 1, 4, 1, 5]))
    assert_equal(got.tolist(), [3, 1, 4, 1, 5], name=("greedy output", "贪心解码的输出"),
                 mistakes={("no bonus token after a fully accepted draft", "草稿全部被接受后没有 bonus token"): [3, 1, 4, 1]})


def test_residual_is_the_normalised_positive_part_of_p_minus_q(impl):
    p, q = torch.tensor([0.5, 0.3, 0.2, 0.0]), torch.tensor([0.2, 0.5, 0.1, 0.2])
    assert_close(impl(MODULE).residual_distribution(p, q), torch.tensor([0.75, 0.0, 0.25, 0.0]),
                 mistakes={("|p - q| normalised", "用了 norm(|p − q|)"): torch.tensor([0.3, 0.2, 0.1, 0.2]) / 0.8,
                           ("max(0, p - q) not normalised", "max(0, p − q) 没有归一化"): torch.tensor([0.3, 0.0, 0.1, 0.0])})
    assert_close(impl(MODULE).acceptance_rate(p, q), torch.tensor(0.6))


def test_expected_tokens_per_step(impl):
    m = impl(MODULE)
    for alpha, k, expected, note in ((0.5, 3, 1.875, "part04.spec.sum_half"), (1.0, 4, 5.0, "part04.spec.alpha_one"),
                                     (0.0, 4, 1.0, "part04.spec.alpha_zero")):
        got = m.expected_tokens_per_step(alpha, k)
        expect(math.isclose(got, expected), "part04.spec.tokens_per_step", alpha=alpha, k=k, expected=expected,
               got=repr(got), note=tr(note))


def test_rejection_keeps_tokens_the_target_likes_and_replaces_those_it_never_emits(impl, seed):
    """p = (.5, .5, 0, 0), q = (.5, 0, .5, 0) at every draft position; the bonus row is one-hot on 3.
    Token 0 (p/q = 1) is always accepted; token 2 (p = 0) always rejected, and the residual
    max(0, p - q) puts everything on token 1. So the outcome is certain."""
    p = torch.tensor([[.5, .5, 0, 0]] * 3 + [[0, 0, 0, 1.]])
    q = torch.tensor([[.5, 0, .5, 0]] * 3)
    drafts = torch.tensor([[2, 0, 0], [0, 0, 0], [0, 2, 0]]).repeat(64, 1)
    out, n = impl(MODULE).rejection_sample(drafts, q.expand(192, 3, 4).contiguous(), p.expand(192, 4, 4).contiguous(),
                                           seed)
    assert_equal(n, torch.tensor([0, 3, 1]).repeat(64), name="num_accepted")
    assert_equal(out, torch.tensor([[1, -1, -1, -1], [0, 0, 0, 3], [0, 1, -1, -1]]).repeat(64, 1),
                 name=("output tokens (rejected token 2 -> 1 from the residual; all accepted -> bonus 3; -1 after)",
                       "输出 token（被拒的 token 2 -> 从残差分布采得 1；全部接受 -> 额外 token 3；其后为 -1）"))


def test_the_first_token_follows_the_target_distribution(impl, seed):
    """20000 drafts from q; whatever is accepted or resampled, the first emitted token follows p."""
    p = torch.tensor([0.1, 0.4, 0.3, 0.2])
    q = torch.tensor([0.4, 0.1, 0.2, 0.3])
    drafts = torch.multinomial(q, 20000, replacement=True, generator=torch.Generator().manual_seed(seed))[:, None]
    out, n = impl(MODULE).rejection_sample(drafts, q.expand(20000, 1, 4).contiguous(),
                                           p.expand(20000, 2, 4).contiguous(), seed + OWN_STREAM)
    both, residual = torch.minimum(p, q), torch.tensor([0.0, 0.75, 0.25, 0.0])  # alpha = 0.6
    inverted = q * torch.clamp(q / p, max=1)
    assert_draws_follow(out[:, 0], p, name=("first emitted token", "第一个输出的 token"), false_alarm=1e-9,
                        mistakes={("accepted with min(1, q/p) instead of min(1, p/q)", "以 min(1, q/p) 而不是 min(1, p/q) 接受"):
                                  inverted + (1 - inverted.sum()) * residual,
                                  ("resampled from p on rejection instead of the residual", "拒绝后从 p 而不是残差分布重新采样"): both + 0.4 * p})
    assert_draws_follow(out[n == 1, 1], p, name=("bonus token", "额外（bonus）token"), false_alarm=1e-9)
