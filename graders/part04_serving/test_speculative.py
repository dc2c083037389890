"""Hidden tests for part04_serving.speculative.

The sampler is checked statistically, never against one draw: draws are compared with the
distribution they must follow through infralab.stats.assert_draws_follow (the total-variation
distance of the empirical frequencies, bounded by the Bretagnolle-Huber-Carol inequality: a
correct sampler fails one check with probability < 1e-9, whatever the distribution; that bound is
exact, not the asymptotic approximation a chi-square p-value rests on). A test making m such checks
fails a correct answer with probability < m * 1e-9 (the union bound), stated per test below; so the
60-seed soundness sweep never flakes. Each test first makes sure the known mistakes' distributions
lie farther than twice the bound from the right one, so that it has teeth at every seed.
"""
import math

import pytest
import torch

from infralab.i18n import tr
from infralab.mistakes.part04_serving.speculative import (ABS_RESIDUAL, CONTINUES, INVERTED_RATIO,
                                                          NO_BONUS, RESAMPLE_FROM_TARGET, greedy_mistakes, greedy_reference,
                                                          position_mistakes, residual, residual_mistakes,
                                                          spread_probs, tokens_per_step)
from infralab.stats import assert_draws_follow, tv_bound, tv_distance
from infralab.testing import Mismatch, assert_close, assert_equal, expect, randn

MODULE = "part04_serving.speculative"
OWN_STREAM = 1_000_003  # the sampler's seed differs from the drafts' generator seed: the same stream would
#                         make its uniforms the very numbers the drafts were drawn from (correlated)
FALSE_ALARM = 1e-9  # per statistical check
DRAWS, K, V = 20000, 3, 6


def separated_pair(gen, v=V):
    """(p, q) over v tokens, every known mistake's emitted distribution farther than 2.5 bounds from p."""
    limit = 2.5 * tv_bound(v, DRAWS, FALSE_ALARM)
    for _ in range(200):
        p, q = spread_probs(v, generator=gen), spread_probs(v, generator=gen)
        if min(tv_distance(p, wrong) for wrong in position_mistakes(p, q).values()) > limit:
            return p, q
    raise AssertionError("no separated (p, q) in 200 draws: the test lost its teeth")  # setup check


def draft_from(q, gen, rows=DRAWS):
    """(rows, K) draft tokens, position i drawn from q[i]."""
    return torch.stack([torch.multinomial(q[i], rows, replacement=True, generator=gen) for i in range(q.shape[0])], 1)


def check_shape_and_prefix(out, num_accepted, drafts):
    b, k = drafts.shape
    assert_equal(tuple(out.shape), (b, k + 1), name="output_tokens shape")
    assert_equal(tuple(num_accepted.shape), (b,), name="num_accepted shape")
    expect(out.dtype == torch.int64 and num_accepted.dtype == torch.int64, "part04.spec.int64", tokens=out.dtype,
           accepted=num_accepted.dtype)
    n = num_accepted
    if int(n.min()) < 0 or int(n.max()) > k:
        raise Mismatch(tr("part04.spec.accepted_range", k=k, got=n.unique().tolist()))
    pos = torch.arange(k + 1)[None]
    accepted_part = torch.where(pos[:, :k] < n[:, None], drafts, -1)
    if not torch.equal(torch.where(pos[:, :k] < n[:, None], out[:, :k], -1), accepted_part):
        raise Mismatch(tr("part04.spec.accepted_not_drafts"))
    extra = out[torch.arange(b), n]
    if bool((extra < 0).any()):
        bad = int((extra < 0).nonzero()[0])
        raise Mismatch(tr("part04.spec.no_token_after", row=bad, accepted=int(n[bad])),
                       NO_BONUS if int(n[bad]) == k else None)
    tail = torch.where(pos > n[:, None], out, -1)
    if bool((tail != -1).any()):
        raise Mismatch(tr("part04.spec.tail_not_padded"), CONTINUES)


@pytest.mark.weight(4)
def test_every_position_follows_the_target_distribution(impl, gen, seed):
    """K + 1 = 4 statistical checks (positions 1..K given they are reached, and the bonus):
    false-failure rate < 4e-9."""
    pairs = [separated_pair(gen) for _ in range(K)]
    q = torch.stack([pq[1] for pq in pairs])  # (K, V)
    p = torch.stack([pq[0] for pq in pairs] + [spread_probs(V, generator=gen)])  # (K + 1, V)
    drafts = draft_from(q, gen)
    out, n = impl(MODULE).rejection_sample(drafts, q.float().expand(DRAWS, K, V).contiguous(),
                                           p.float().expand(DRAWS, K + 1, V).contiguous(), seed + OWN_STREAM)
    check_shape_and_prefix(out, n, drafts)
    for i in range(K):
        reached = n >= i
        assert_draws_follow(out[reached, i], p[i], name=(f"tokens at draft position {i + 1} (when reached)",
                                                         f"草稿位置 {i + 1} 处的 token（到达时）"),
                            false_alarm=FALSE_ALARM, mistakes=position_mistakes(p[i], q[i]))
    assert_draws_follow(out[n == K, K], p[K], name=("bonus tokens", "额外（bonus）token"), false_alarm=FALSE_ALARM)


@pytest.mark.weight(2)
def test_mean_tokens_per_step_matches_the_closed_form(impl, gen, seed):
    """Same p and q at every position: E[1 + num_accepted] = (1 - a^(K+1)) / (1 - a), a = sum min(p, q).
    Hoeffding: the mean of DRAWS values in [1, K + 1] strays more than K sqrt(ln(2/1e-9) / (2 DRAWS))
    from its expectation with probability < 1e-9 (the false-failure rate of this test)."""
    p, q = separated_pair(gen)
    alpha = float(torch.minimum(p, q).sum())
    expected = tokens_per_step(alpha, K)
    bound = K * math.sqrt(math.log(2 / FALSE_ALARM) / (2 * DRAWS))
    qs, ps = q.expand(K, V), p.expand(K + 1, V)
    drafts = draft_from(qs, gen)
    out, n = impl(MODULE).rejection_sample(drafts, qs.float().expand(DRAWS, K, V).contiguous(),
                                           ps.float().expand(DRAWS, K + 1, V).contiguous(), seed + OWN_STREAM)
    mean = float((n + 1).double().mean())
    if abs(mean - expected) > bound:
        inverted = float((q * (q / p).clamp(max=1)).sum())
        raise Mismatch(tr("part04.spec.mean_tokens", mean=mean, expected=expected, alpha=alpha, k=K, bound=bound),
                       INVERTED_RATIO if abs(mean - tokens_per_step(inverted, K)) <= bound else None)


def test_a_token_the_target_never_emits_is_rejected_and_the_residual_decides(impl, seed):
    """p = (.5, .5, 0, 0), q = (.5, 0, .5, 0): token 2 has p = 0 and is always rejected; the residual
    max(0, p - q) is all on token 1. Token 0 has p/q = 1: always accepted. The bonus row is one-hot on 3.
    The right outcome is deterministic; each row is repeated 256 times so that a wrong resampling
    distribution shows with probability > 1 - 2^-256."""
    copies = 256
    p = torch.tensor([[.5, .5, 0, 0]] * 3 + [[0, 0, 0, 1.]])
    q = torch.tensor([[.5, 0, .5, 0]] * 3)
    drafts = torch.tensor([[2, 0, 0], [0, 0, 0], [0, 2, 0], [0, 0, 2]]).repeat(copies, 1)
    out, n = impl(MODULE).rejection_sample(drafts, q.expand(4 * copies, 3, 4).contiguous(),
                                           p.expand(4 * copies, 4, 4).contiguous(), seed + OWN_STREAM)
    check_shape_and_prefix(out, n, drafts)
    want_n = torch.tensor([0, 3, 1, 2]).repeat(copies)
    want = torch.tensor([[1, -1, -1, -1], [0, 0, 0, 3], [0, 1, -1, -1], [0, 0, 1, -1]]).repeat(copies, 1)
    bad = (out != want).any(-1) | (n != want_n)
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        acc, extra = int(n[row]), int(out[row, int(n[row])])
        label = (INVERTED_RATIO if acc > int(want_n[row]) else
                 RESAMPLE_FROM_TARGET if acc == int(want_n[row]) and extra == 0 else
                 ABS_RESIDUAL if acc == int(want_n[row]) and extra == 2 else None)
        raise Mismatch(tr("part04.spec.row_outcome", draft=drafts[row].tolist(), got=out[row].tolist(), accepted=acc,
                          expected=want[row].tolist(), want_accepted=int(want_n[row])), label)


def test_the_same_seed_gives_the_same_draws_and_another_seed_others(impl, gen, seed):
    p, q = separated_pair(gen)
    drafts = draft_from(q.expand(K, V), gen, rows=2000)
    args = (drafts, q.float().expand(2000, K, V).contiguous(), p.float().expand(2000, K + 1, V).contiguous())
    m = impl(MODULE)
    first = m.rejection_sample(*args, seed + OWN_STREAM)
    torch.manual_seed(seed + 99)  # the global RNG must play no part
    again = m.rejection_sample(*args, seed + OWN_STREAM)
    assert_equal(again[0], first[0], name=("output tokens for the same seed", "同一种子下的输出 token"))
    expect(not torch.equal(m.rejection_sample(*args, seed + OWN_STREAM + 1)[0], first[0]), "check.seed_unused",
           name="rejection_sample")


@pytest.mark.parametrize("mismatch", [0, 1, 3, 4])
def test_greedy_verify_keeps_the_agreeing_prefix_and_adds_the_target_token(impl, gen, mismatch):
    """K = 4; the draft equals the target's argmax before position ``mismatch`` (4: everywhere)."""
    logits = randn(5, 11, generator=gen, scale=3.0)
    target = logits.argmax(-1)
    draft = target[:4].clone()
    if mismatch < 4:
        draft[mismatch] = (target[mismatch] + 1 + torch.randint(10, (), generator=gen)) % 11
    got = impl(MODULE).greedy_verify(draft, logits)
    assert_equal(got.dtype, torch.int64, name=("dtype of the greedy output", "贪心解码输出的 dtype"))
    assert_equal(got.tolist(), greedy_reference(draft, logits).tolist(),  # lists: a wrong length is diagnosed too
                 name=(f"greedy output (first disagreement at {mismatch})", f"贪心解码的输出（第一处不一致在 {mismatch}）"),
                 mistakes={label: wrong.tolist() for label, wrong in greedy_mistakes(draft, logits).items()})


@pytest.mark.parametrize("shape", [(9,), (3, 9), (2, 3, 9)])
def test_acceptance_rate_and_residual_distribution(impl, gen, shape):
    """Over the last dimension, whatever the leading ones ((..., V) as a draft's (B, K, V))."""
    p, q = spread_probs(*shape, generator=gen).float(), spread_probs(*shape, generator=gen).float()
    m = impl(MODULE)
    assert_close(m.acceptance_rate(p, q), torch.minimum(p, q).sum(-1), name=("acceptance rate", "接受率"),
                 mistakes={("alpha = sum max(p, q)",
                            "alpha = sum max(p, q)（应为 sum min(p, q)）"): torch.maximum(p, q).sum(-1),
                           ("alpha = TV(p, q) instead of 1 - TV",
                            "alpha = TV(p, q)，而不是 1 - TV"): 1 - torch.minimum(p, q).sum(-1)})
    assert_close(m.residual_distribution(p, q), residual(p, q).float(), name=("residual distribution", "残差分布"),
                 mistakes=residual_mistakes(p, q))
    assert_close(m.residual_distribution(p, p), p, name=("residual where p == q (must be p)", "p == q 时的残差分布（应为 p）"))


def test_expected_tokens_per_step_is_the_geometric_sum(impl, gen):
    m = impl(MODULE)
    for alpha, k in [(0.0, 3), (1.0, 5), (0.5, 3), (float(torch.rand((), generator=gen)), 4)]:
        got, want = m.expected_tokens_per_step(alpha, k), tokens_per_step(alpha, k)
        if not math.isclose(got, want, rel_tol=1e-9):
            label = (("counted the accepted drafts only: alpha (1 - alpha^k) / (1 - alpha)",
                      "只数了被接受的草稿：alpha (1 - alpha^k) / (1 - alpha)")
                     if math.isclose(got, want - 1, rel_tol=1e-9) else None)
            raise Mismatch(tr("part04.spec.tokens_per_step_value", alpha=alpha, k=k, got=got, expected=want), label)
