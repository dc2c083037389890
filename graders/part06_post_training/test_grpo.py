"""Hidden tests for part06_post_training.grpo."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.testing import assert_close, expect, randn, tolerance

MODULE = "part06_post_training.grpo"


# ---- advantages --------------------------------------------------------------------------------

def reference_advantages(rewards, G, scale=True, eps=1e-4):
    """Group by group in fp64, the unbiased std written out."""
    out = torch.empty(rewards.numel(), dtype=torch.float64)
    r = rewards.double()
    for start in range(0, r.numel(), G):
        grp = r[start:start + G]
        mean = grp.sum() / G
        std = (((grp - mean) ** 2).sum() / (G - 1)).sqrt()
        out[start:start + G] = (grp - mean) / (std + eps) if scale else grp - mean
    return out.float()


def advantage_mistakes(rewards, G, eps=1e-4):
    groups = rewards.view(-1, G)
    centred = (groups - groups.mean(1, keepdim=True)).reshape(-1)
    return {
        ("std taken over the whole batch instead of per group", "std 在整个 batch 上计算，而不是每组分别计算"):
            lambda: centred / (rewards.std() + eps),
        ("mean and std taken over the whole batch instead of per group", "均值和 std 在整个 batch 上计算，而不是每组分别计算"):
            lambda: (rewards - rewards.mean()) / (rewards.std() + eps),
        ("biased std (divides by G instead of G - 1)", "有偏 std（除以 G 而不是 G - 1）"):
            lambda: centred / (groups.std(1, correction=0, keepdim=True).expand_as(groups).reshape(-1) + eps),
        ("eps added to the variance (sqrt(var + eps)) instead of to the std",
         "eps 加在方差上（sqrt(var + eps)），而不是 std 上"):
            lambda: centred / (groups.var(1, keepdim=True) + eps).sqrt().expand_as(groups).reshape(-1),
        ("not divided by the std (Dr. GRPO) where scale=True was asked",
         "要求 scale=True 时却没有除以 std（那是 Dr. GRPO）"): lambda: centred,
        ("groups taken as strided rows (i, i + B/G, ...) instead of consecutive rows",
         "组取成了跨步的行（i, i + B/G, ...），而不是连续的行"):
            lambda: reference_advantages(rewards.view(G, -1).T.reshape(-1), G).view(-1, G).T.reshape(-1),
    }


@pytest.mark.weight(3)
@given(groups=st.integers(1, 5), G=st.integers(2, 8), scale=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_group_advantages_match_the_group_by_group_reference(impl, groups, G, scale, seed):
    g = torch.Generator().manual_seed(seed)
    rewards = randn(groups * G, generator=g, scale=2.0) + torch.arange(groups).repeat_interleave(G) * 3.0
    got = impl(MODULE).group_advantages(rewards, group_size=G, scale=scale)
    # r - mean in fp32 is off by about eps * max|r|; dividing by a group's std scales that error by 1 / std
    rtol, atol = tolerance(torch.float32)
    std = rewards.double().view(groups, G).std(dim=1).min().item() if scale else 1.0
    widen = max(1.0, float(rewards.abs().max()) / max(std, 1e-4))
    assert_close(got, reference_advantages(rewards, G, scale), name=f"advantages (scale={scale})", rtol=rtol,
                 atol=atol * widen, mistakes=advantage_mistakes(rewards, G))


@pytest.mark.weight(2)
def test_group_advantages_use_each_groups_own_statistics(impl, gen):
    """Groups of very different spread: a batch-wide mean or std moves every advantage."""
    rewards = torch.cat([randn(4, generator=gen) * 0.1, randn(4, generator=gen) * 10 + 50,
                         torch.tensor([0.0, 1.0, 0.0, 1.0])])
    got = impl(MODULE).group_advantages(rewards, group_size=4)
    assert_close(got, reference_advantages(rewards, 4), name=("advantages of unlike groups", "各不相同的组的优势"),
                 mistakes=advantage_mistakes(rewards, 4))


def test_group_advantages_eps_is_added_to_the_std(impl):
    """std 1e-4 with eps 1e-4: the advantages halve; with eps inside a sqrt they barely move."""
    rewards = torch.tensor([0.0, 2e-4], dtype=torch.float32) + 1.0
    std = float(rewards.double().std())
    got = impl(MODULE).group_advantages(rewards, group_size=2, eps=1e-4)
    expected = (rewards.double() - rewards.double().mean()) / (std + 1e-4)
    assert_close(got, expected.float(), name=("advantages with std ~ eps",
                                              "std ~ eps 时的优势"), rtol=1e-3, atol=1e-4,  # fp32 rewards near 1
                 mistakes=advantage_mistakes(rewards, 2))


def test_constant_groups_have_zero_advantage_not_nan(impl):
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    for scale in (True, False):
        got = impl(MODULE).group_advantages(rewards, group_size=3, scale=scale)
        assert_close(got, torch.zeros(6), name=(f"advantages of constant groups (scale={scale})",
                                                f"常数组的优势（scale={scale}）"))


@pytest.mark.parametrize("B,G", [(6, 4), (4, 1), (3, 0)], ids=["not-dividing", "group-of-one", "zero"])
def test_bad_group_size_raises_value_error(impl, B, G):
    with pytest.raises(ValueError):
        impl(MODULE).group_advantages(torch.arange(B, dtype=torch.float32), group_size=G)


# ---- KL ----------------------------------------------------------------------------------------

def kl_mistakes(logps, ref):
    d = ref - logps
    return {
        ("k1 estimator (logp - ref) instead of k3", "用了 k1 估计量（logp - ref），而不是 k3"): lambda: logps - ref,
        ("k2 estimator ((logp - ref)**2 / 2) instead of k3",
         "用了 k2 估计量（(logp - ref)**2 / 2），而不是 k3"): lambda: 0.5 * d ** 2,
        ("k3 with the log-ratio reversed: exp(logp - ref) - (logp - ref) - 1",
         "k3 的对数比方向反了：exp(logp - ref) - (logp - ref) - 1"): lambda: torch.exp(-d) + d - 1,
    }


@pytest.mark.weight(2)
@given(B=st.integers(1, 4), T=st.integers(1, 10), seed=st.integers(0, 2**31 - 1))
def test_kl_k3_matches_its_formula(impl, B, T, seed):
    g = torch.Generator().manual_seed(seed)
    logps = -randn(B, T, generator=g).abs() * 2
    ref = logps + randn(B, T, generator=g, scale=0.7)
    d = ref.double() - logps.double()
    got = impl(MODULE).kl_k3(logps, ref)
    assert_close(got, (d.exp() - d - 1).float(), name="k3 KL", mistakes=kl_mistakes(logps, ref))


def test_kl_k3_is_zero_where_policy_equals_reference(impl, gen):
    logps = -randn(3, 7, generator=gen).abs()
    assert_close(impl(MODULE).kl_k3(logps, logps.clone()), torch.zeros(3, 7), name=("k3 at pi = pi_ref",
                                                                                    "pi = pi_ref 时的 k3"))


# ---- per-token loss ----------------------------------------------------------------------------

def reference_per_token_loss(logps, old, adv, ref=None, beta=0.0, eps_low=0.2, eps_high=None):
    """fp64, case by case: the clipped objective is the unclipped one unless the ratio left the
    trust region on the side the advantage pushes it."""
    eps_high = eps_low if eps_high is None else eps_high
    ratio = (logps.double() - old.double()).exp()
    a = adv.double().unsqueeze(-1).expand_as(ratio)
    capped_up = (a > 0) & (ratio > 1 + eps_high)
    capped_down = (a < 0) & (ratio < 1 - eps_low)
    objective = torch.where(capped_up, (1 + eps_high) * a, torch.where(capped_down, (1 - eps_low) * a, ratio * a))
    loss = -objective
    if beta != 0.0:
        d = ref.double() - logps.double()
        loss = loss + beta * (d.exp() - d - 1)
    return loss.float()


def per_token_mistakes(logps, old, adv, ref, beta, eps_low, eps_high):
    eh = eps_low if eps_high is None else eps_high
    ratio = torch.exp(logps - old)
    a = adv.unsqueeze(-1)
    clipped = torch.clamp(ratio, 1 - eps_low, 1 + eh)
    d = (ref - logps) if ref is not None else torch.zeros_like(logps)
    k3 = beta * (d.exp() - d - 1)
    return {
        ("clip without the min: -clip(ratio) * A", "只做了 clip 没有取 min：-clip(ratio) * A"): lambda: -clipped * a + k3,
        ("max instead of min (the optimistic side)",
         "取了 max 而不是 min（乐观的一侧）"): lambda: -torch.max(ratio * a, clipped * a) + k3,
        ("no clipping at all: -ratio * A", "完全没有 clip：-ratio * A"): lambda: -ratio * a + k3,
        ("ratio taken against the reference instead of the old policy", "ratio 相对参考模型计算，而不是相对旧策略"):
            lambda: -torch.min(torch.exp(logps - ref) * a, torch.clamp(torch.exp(logps - ref), 1 - eps_low, 1 + eh) * a) + k3,
        ("eps_high ignored (symmetric clip at eps_low)", "忽略了 eps_high（按 eps_low 对称 clip）"):
            lambda: -torch.min(ratio * a, torch.clamp(ratio, 1 - eps_low, 1 + eps_low) * a) + k3,
        ("KL term subtracted instead of added", "KL 项被减去而不是加上"): lambda: -torch.min(ratio * a, clipped * a) - k3,
        ("KL term k1 instead of k3",
         "KL 项用了 k1 而不是 k3"): lambda: -torch.min(ratio * a, clipped * a) + beta * (logps - (ref if ref is not None else logps)),
    }


def random_rollout(g, B, T, spread=0.4):
    old = -randn(B, T, generator=g).abs() * 2 - 0.1
    logps = old + randn(B, T, generator=g, scale=spread)      # ratios well outside [0.8, 1.2] too
    ref = old + randn(B, T, generator=g, scale=spread)
    adv = randn(B, generator=g)
    return logps, old, ref, adv


@pytest.mark.weight(3)
@given(B=st.integers(1, 6), T=st.integers(1, 12), beta=st.sampled_from([0.0, 0.04, 0.5]),
       eps=st.sampled_from([(0.2, None), (0.2, 0.28), (0.1, 0.3)]), seed=st.integers(0, 2**31 - 1))
def test_per_token_loss_matches_the_case_by_case_reference(impl, B, T, beta, eps, seed):
    g = torch.Generator().manual_seed(seed)
    logps, old, ref, adv = random_rollout(g, B, T)
    eps_low, eps_high = eps
    got = impl(MODULE).grpo_per_token_loss(logps, old, adv, ref_logps=ref, beta=beta,
                                           eps_low=eps_low, eps_high=eps_high)
    assert_close(got, reference_per_token_loss(logps, old, adv, ref, beta, eps_low, eps_high),
                 name=("GRPO per-token loss",
                       "GRPO 逐 token 损失"), mistakes=per_token_mistakes(logps, old, adv, ref, beta, eps_low, eps_high))


@pytest.mark.weight(2)
def test_every_clipping_case_is_exercised(impl):
    """Each of the four (sign of A) x (ratio above/below the region) cases, plus inside."""
    ratios = torch.tensor([[1.5, 0.5, 1.1, 0.9], [1.5, 0.5, 1.1, 0.9]])
    old = torch.full((2, 4), -1.0)
    logps = old + ratios.log()
    adv = torch.tensor([2.0, -3.0])
    got = impl(MODULE).grpo_per_token_loss(logps, old, adv, eps_low=0.2, eps_high=0.3)
    expected = torch.tensor([[-2.6, -1.0, -2.2, -1.8], [4.5, 2.4, 3.3, 2.7]])
    assert_close(got, expected, name=("loss in each clipping case", "各种裁剪情形下的损失"),
                 mistakes=per_token_mistakes(logps, old, adv, None, 0.0, 0.2, 0.3))


def test_per_token_loss_with_beta_needs_ref_logps(impl):
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError):
        impl(MODULE).grpo_per_token_loss(x, x, torch.zeros(2), ref_logps=None, beta=0.1)


def test_per_token_loss_leaves_inputs_untouched(impl, gen):
    logps, old, ref, adv = random_rollout(gen, 3, 5)
    before = [t.clone() for t in (logps, old, ref, adv)]
    impl(MODULE).grpo_per_token_loss(logps, old, adv, ref_logps=ref, beta=0.1)
    expect(all(torch.equal(a, b) for a, b in zip((logps, old, ref, adv), before)), "check.modified_input",
           name="grpo_per_token_loss")


# ---- aggregation -------------------------------------------------------------------------------

def random_mask(g, B, T, allow_empty=False):
    lengths = torch.randint(0 if allow_empty else 1, T + 1, (B,), generator=g)
    return (torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)).long()


def reference_aggregate(loss, mask, mode, max_len=None):
    rows = [(loss[b].double()[mask[b].bool()]) for b in range(loss.shape[0])]
    if mode == "token_mean":
        n = sum(len(r) for r in rows)
        return torch.tensor(sum(float(r.sum()) for r in rows) / max(n, 1), dtype=torch.float32)
    if mode == "sequence_mean":
        return torch.tensor(sum(float(r.sum()) / max(len(r), 1) for r in rows) / len(rows), dtype=torch.float32)
    return torch.tensor(sum(float(r.sum()) for r in rows) / (len(rows) * max_len), dtype=torch.float32)


def aggregate_mistakes(loss, mask, max_len):
    m = mask.float()
    masked = loss * m
    return {
        ("padding counted: divided by B * T instead of the number of real tokens",
         "算上了 padding：除以 B * T 而不是真实 token 数"): lambda: masked.sum() / m.numel(),
        ("padding losses included in the sum (mask not applied)",
         "求和时包含了 padding 的损失（没有应用掩码）"): lambda: loss.sum() / m.sum(),
        ("sequence mean where token mean was asked (or the reverse)", "要求 token 平均却用了序列平均（或相反）"):
            lambda: (masked.sum(-1) / m.sum(-1).clamp(min=1)).mean(),
        ("token mean where sequence mean was asked", "要求序列平均却用了 token 平均"): lambda: masked.sum() / m.sum(),
        ("constant normaliser max_len only (not B * max_len)",
         "常数归一化因子只用了 max_len（不是 B * max_len）"): lambda: masked.sum() / max_len,
        ("constant normaliser B * T instead of B * max_len",
         "常数归一化因子用了 B * T，而不是 B * max_len"): lambda: masked.sum() / m.numel(),
    }


@pytest.mark.weight(3)
@given(B=st.integers(1, 6), T=st.integers(1, 12), mode=st.sampled_from(["token_mean", "sequence_mean", "constant"]),
       seed=st.integers(0, 2**31 - 1))
def test_aggregate_loss_matches_reference(impl, B, T, mode, seed):
    g = torch.Generator().manual_seed(seed)
    loss = randn(B, T, generator=g) + 1.0
    mask = random_mask(g, B, T)
    loss = torch.where(mask.bool(), loss, torch.full_like(loss, 37.0))  # padding carries garbage
    max_len = T + 3
    got = impl(MODULE).aggregate_loss(loss, mask, mode, max_len=max_len if mode == "constant" else None)
    assert_close(got, reference_aggregate(loss, mask, mode, max_len), name=(f"aggregated loss ({mode})",
                                                                            f"聚合后的损失（{mode}）"),
                 mistakes=aggregate_mistakes(loss, mask, max_len))


def test_token_mean_and_sequence_mean_differ_on_unequal_lengths(impl):
    """Why it matters: a long completion with small losses and a short one with a large loss."""
    loss = torch.tensor([[0.1] * 8, [2.0] + [0.0] * 7])
    mask = torch.tensor([[1] * 8, [1] + [0] * 7])
    agg = impl(MODULE).aggregate_loss
    assert_close(agg(loss, mask, "token_mean"), torch.tensor(2.8 / 9), name=("token mean", "按 token 平均"),
                 mistakes=aggregate_mistakes(loss, mask, 8))
    assert_close(agg(loss, mask, "sequence_mean"), torch.tensor(1.05), name=("sequence mean", "按序列平均"),
                 mistakes=aggregate_mistakes(loss, mask, 8))


def test_empty_rows_contribute_zero_not_nan(impl):
    loss = torch.tensor([[1.0, 3.0], [5.0, 5.0]])
    mask = torch.tensor([[1, 1], [0, 0]])
    agg = impl(MODULE).aggregate_loss
    assert_close(agg(loss, mask, "token_mean"), torch.tensor(2.0), name=("token mean with an empty row",
                                                                         "含空行时按 token 平均"))
    assert_close(agg(loss, mask, "sequence_mean"), torch.tensor(1.0), name=("sequence mean with an empty row",
                                                                            "含空行时按序列平均"))
    assert_close(agg(loss, torch.zeros(2, 2), "token_mean"), torch.tensor(0.0), name=("token mean of no tokens",
                                                                                      "没有 token 时按 token 平均"))


def test_constant_mode_accepts_max_len_one(impl, gen):
    """max_len = 1 is allowed (>= 1): completions of at most one token, divided by B * 1."""
    loss = randn(4, 1, generator=gen) + 1.0
    mask = torch.tensor([[1], [0], [1], [1]])
    got = impl(MODULE).aggregate_loss(loss, mask, "constant", max_len=1)
    assert_close(got, reference_aggregate(loss, mask, "constant", 1), name=("aggregated loss (constant, max_len=1)",
                                                                           "聚合后的损失（constant，max_len=1）"),
                 mistakes=aggregate_mistakes(loss, mask, 1))


@pytest.mark.parametrize("kwargs", [dict(mode="mean"), dict(mode="constant"), dict(mode="constant", max_len=0)],
                         ids=["unknown-mode", "constant-without-max-len", "constant-max-len-zero"])
def test_bad_aggregation_raises_value_error(impl, kwargs):
    with pytest.raises(ValueError):
        impl(MODULE).aggregate_loss(torch.zeros(2, 3), torch.ones(2, 3), **kwargs)


# ---- all together ------------------------------------------------------------------------------

@pytest.mark.weight(2)
def test_full_grpo_loss_from_rewards_and_logps(impl, gen):
    m = impl(MODULE)
    G, groups, T = 4, 3, 9
    rewards = (torch.rand(groups * G, generator=gen) > 0.5).float()  # 0/1 rewards, some groups constant
    logps, old, ref, _ = random_rollout(gen, groups * G, T)
    mask = random_mask(gen, groups * G, T)
    adv = m.group_advantages(rewards, group_size=G)
    loss = m.aggregate_loss(m.grpo_per_token_loss(logps, old, adv, ref_logps=ref, beta=0.04), mask, "token_mean")
    e_adv = reference_advantages(rewards, G)
    expected = reference_aggregate(reference_per_token_loss(logps, old, e_adv, ref, 0.04), mask, "token_mean")
    assert_close(loss, expected, name=("GRPO loss end to end", "端到端的 GRPO 损失"))


def test_defaults_are_the_documented_ones(impl, gen):
    """scale=True, eps=1e-4; beta 0, eps_low 0.2 = eps_high; token_mean."""
    m = impl(MODULE)
    rewards = randn(8, generator=gen)
    assert_close(m.group_advantages(rewards, 4), m.group_advantages(rewards, 4, scale=True, eps=1e-4),
                 name=("group_advantages with its defaults", "默认参数下的 group_advantages"))
    logps, old, ref, adv = random_rollout(gen, 3, 5)
    loss = m.grpo_per_token_loss(logps, old, adv)
    assert_close(loss, m.grpo_per_token_loss(logps, old, adv, ref_logps=ref, beta=0.0, eps_low=0.2, eps_high=0.2),
                 name=("grpo_per_token_loss with its defaults", "默认参数下的 grpo_per_token_loss"))
    mask = random_mask(gen, 3, 5)
    assert_close(m.aggregate_loss(loss, mask), m.aggregate_loss(loss, mask, "token_mean"), name=("aggregate_loss default mode",
                                                                                                 "aggregate_loss 的默认模式"))
