"""Hidden tests for part06_post_training.ppo (trl 1.13 has no PPO code: references here are
written out step by step, and a hand-derived table fixes the conventions)."""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.testing import assert_close, expect, randn, tolerance

MODULE = "part06_post_training.ppo"


# ---- GAE ---------------------------------------------------------------------------------------

def reference_gae(rewards, values, dones, last_value, gamma, lam):
    """Forward, as a sum: A_t = sum_l (gamma*lam)^l delta_{t+l}, stopping after the episode's end."""
    r, v, d = rewards.double(), values.double(), dones.bool()
    N, T = r.shape
    next_v = torch.cat([v[:, 1:], last_value.double().unsqueeze(1)], dim=1)
    delta = r + gamma * next_v * (~d) - v
    adv = torch.zeros(N, T, dtype=torch.float64)
    for n in range(N):
        for t in range(T):
            weight = 1.0
            for k in range(t, T):
                adv[n, t] += weight * delta[n, k]
                if d[n, k]:
                    break
                weight *= gamma * lam
    return adv.float(), (adv + v).float()


def gae_mistakes(rewards, values, dones, last_value, gamma, lam, normalize=False):
    N, T = rewards.shape
    nd = 1.0 - dones.float()

    def recursion(reset=True, bootstrap_mask=True, lam_=lam):
        adv, carry, next_v = torch.zeros(N, T), torch.zeros(N), last_value.clone()
        for t in reversed(range(T)):
            delta = rewards[:, t] + gamma * next_v * (nd[:, t] if bootstrap_mask else 1.0) - values[:, t]
            carry = delta + gamma * lam_ * (nd[:, t] if reset else 1.0) * carry
            adv[:, t] = carry
            next_v = values[:, t]
        return adv

    def w(a):
        return (a - a.mean()) / (a.std() + 1e-8) if normalize else a
    raw = recursion()
    return {
        ("GAE recursion not reset at done (the carry crosses the episode boundary)",
         "GAE 递推在 done 处没有重置（累积值跨越了回合边界）"):
            lambda: w(recursion(reset=False)),
        ("value bootstrapped across done (next value not masked)",
         "价值跨越 done 做了自举（下一步的价值没有被掩掉）"): lambda: w(recursion(bootstrap_mask=False)),
        ("dones ignored entirely", "完全忽略了 dones"): lambda: w(recursion(reset=False, bootstrap_mask=False)),
        ("lambda left out of the recursion (gamma only)",
         "递推中漏了 lambda（只用了 gamma）"): lambda: w(recursion(lam_=1.0)),
        ("advantages normalised before computing returns (returns = whitened A + V)",
         "在计算回报之前就归一化了优势（回报 = 白化后的 A + V）"):
            lambda: w(raw) + values,
        ("returns taken as the advantages (V not added)", "把优势当成了回报（没有加 V）"): lambda: raw,
    }


def random_rollout(g, N, T, p_done=0.25):
    rewards = randn(N, T, generator=g)
    values = randn(N, T, generator=g)
    dones = (torch.rand(N, T, generator=g) < p_done).long()
    last_value = randn(N, generator=g)
    return rewards, values, dones, last_value


@pytest.mark.weight(3)
@given(N=st.integers(1, 4), T=st.integers(1, 12), gamma=st.sampled_from([1.0, 0.99, 0.9, 0.5]),
       lam=st.sampled_from([1.0, 0.95, 0.5, 0.0]), seed=st.integers(0, 2**31 - 1))
def test_gae_matches_the_forward_sum_reference(impl, N, T, gamma, lam, seed):
    g = torch.Generator().manual_seed(seed)
    rewards, values, dones, last_value = random_rollout(g, N, T)
    adv, ret = impl(MODULE).gae(rewards, values, dones, last_value, gamma=gamma, lam=lam)
    e_adv, e_ret = reference_gae(rewards, values, dones, last_value, gamma, lam)
    mistakes = gae_mistakes(rewards, values, dones, last_value, gamma, lam)
    assert_close(adv, e_adv, name="GAE advantages", mistakes=mistakes)
    assert_close(ret, e_ret, name="GAE returns", mistakes=mistakes)


# A hand-derived table (gamma = 0.9, lam = 0.8, so gamma * lam = 0.72), two rollouts:
#   row 0: episodes end at t = 1 and t = 3 (the last step: last_value is not used);
#   row 1: no episode end, bootstrap from last_value = 10.
#   row 0: t=3: 1 - 2 = -1; t=2: 0 + 0.9*2 - 1 = 0.8, A = 0.8 + 0.72*(-1) = 0.08;
#          t=1: 1 - 0 = 1 (done); t=0: 0 + 0.9*0 - 1 = -1, A = -1 + 0.72*1 = -0.28
#   row 1: t=3: 0 + 0.9*10 - 5 = 4; t=2: 1 + 0.9*5 - 0 = 5.5, A = 5.5 + 0.72*4 = 8.38;
#          t=1: 0 + 0 - 0 = 0, A = 0.72*8.38 = 6.0336; t=0: 1 + 0 - 1 = 0, A = 0.72*6.0336 = 4.344192
HAND_TABLE = dict(
    rewards=[[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]],
    values=[[1.0, 0.0, 1.0, 2.0], [1.0, 0.0, 0.0, 5.0]],
    dones=[[0, 1, 0, 1], [0, 0, 0, 0]],
    last_value=[7.0, 10.0],
    advantages=[[-0.28, 1.0, 0.08, -1.0], [4.344192, 6.0336, 8.38, 4.0]],
)


@pytest.mark.weight(2)
def test_gae_hand_derived_table(impl):
    h = HAND_TABLE
    rewards, values, last = torch.tensor(h["rewards"]), torch.tensor(h["values"]), torch.tensor(h["last_value"])
    dones = torch.tensor(h["dones"])
    adv, ret = impl(MODULE).gae(rewards, values, dones, last, gamma=0.9, lam=0.8)
    expected = torch.tensor(h["advantages"])
    mistakes = gae_mistakes(rewards, values, dones, last, 0.9, 0.8)
    assert_close(adv, expected, name=("GAE advantages (hand table)", "GAE 优势（手算表）"), mistakes=mistakes)
    assert_close(ret, expected + values, name=("returns (hand table)", "回报（手算表）"), mistakes=mistakes)


@pytest.mark.weight(2)
@given(N=st.integers(1, 3), T=st.integers(2, 10), seed=st.integers(0, 2**31 - 1))
def test_normalised_gae_whitens_advantages_but_not_returns(impl, N, T, seed):
    g = torch.Generator().manual_seed(seed)
    rewards, values, dones, last_value = random_rollout(g, N, T)
    adv, ret = impl(MODULE).gae(rewards, values, dones, last_value, gamma=0.99, lam=0.95, normalize=True)
    e_adv, e_ret = reference_gae(rewards, values, dones, last_value, 0.99, 0.95)
    mistakes = gae_mistakes(rewards, values, dones, last_value, 0.99, 0.95, normalize=True)
    assert_close(ret, e_ret, name=("returns with normalize=True", "normalize=True 时的回报"), mistakes=mistakes)
    # whitening divides fp32 rounding of the advantages (about eps * max|A|) by their std: the bound scales so
    rtol, atol = tolerance(torch.float32, reduction=T)
    widen = max(1.0, float(e_adv.abs().max() / (e_adv.std() + 1e-8)))
    assert_close(adv, (e_adv - e_adv.mean()) / (e_adv.std() + 1e-8), name=("whitened advantages", "白化后的优势"), rtol=rtol,
                 atol=atol * widen, mistakes=mistakes)


def test_gae_leaves_inputs_untouched(impl, gen):
    args = random_rollout(gen, 2, 6)
    before = [a.clone() for a in args]
    impl(MODULE).gae(*args, normalize=True)
    expect(all(torch.equal(a, b) for a, b in zip(args, before)), "check.modified_input", name="gae")


# ---- whiten ------------------------------------------------------------------------------------

@given(N=st.integers(1, 4), T=st.integers(2, 10), seed=st.integers(0, 2**31 - 1))
def test_whiten_over_masked_elements(impl, N, T, seed):
    g = torch.Generator().manual_seed(seed)
    x = randn(N, T, generator=g, scale=3.0) + 2.0
    mask = torch.rand(N, T, generator=g) < 0.7
    mask[0, :2] = True
    vals = x[mask].double()
    expected = torch.where(mask, (x.double() - vals.mean()) / (vals.std() + 1e-8), torch.zeros_like(vals.mean()))
    got = impl(MODULE).whiten(x, mask)
    # fp32 rounding of x - mean (about eps * max|x|) is divided by the std: with two close values
    # (std << max|x|) a correct fp32 answer is off by more than the table's tolerance; widen by that ratio.
    rtol, atol = tolerance(torch.float32)
    widen = max(1.0, float(vals.abs().max() / (vals.std() + 1e-8)))
    assert_close(got, expected.float(), name=("whitened values",
                                              "白化后的值"), rtol=rtol * widen, atol=atol * widen, mistakes={
        ("statistics over every element, padding included", "统计量在所有元素上计算，包含了 padding"):
            lambda: torch.where(mask, (x - x.mean()) / (x.std() + 1e-8), torch.zeros_like(x)),
        ("biased std (divides by n, not n - 1)", "有偏 std（除以 n，而不是 n - 1）"):
            lambda: torch.where(mask, (x - x[mask].mean()) / (x[mask].std(correction=0) + 1e-8), torch.zeros_like(x)),
        ("masked-out elements not set to 0", "被掩掉的元素没有置 0"):
            lambda: (x - x[mask].mean()) / (x[mask].std() + 1e-8)})


def test_whiten_adds_eps_to_the_std(impl, gen):
    """A large eps shows where it goes: (x - mean) / (std + eps)."""
    x = randn(3, 8, generator=gen, scale=0.5) + 1.0
    mask = torch.rand(3, 8, generator=gen) < 0.7
    mask[0, :2] = True
    vals = x[mask].double()
    eps = 0.25
    expected = torch.where(mask, (x.double() - vals.mean()) / (vals.std() + eps), torch.zeros_like(vals.mean()))
    centred = torch.where(mask, x - x[mask].mean(), torch.zeros_like(x))
    got = impl(MODULE).whiten(x, mask, eps=eps)
    assert_close(got, expected.float(), name=("whitened values with eps = 0.25", "eps = 0.25 时白化后的值"), mistakes={
        ("eps added to the variance (sqrt(var + eps)) instead of to the std",
         "eps 加在方差上（sqrt(var + eps)），而不是 std 上"): lambda: centred / (x[mask].var() + eps).sqrt(),
        ("eps ignored", "忽略了 eps"): lambda: centred / (x[mask].std() + 1e-8)})


# ---- losses ------------------------------------------------------------------------------------

def reference_value_loss(values, old, returns, c):
    v, o, r = values.double(), old.double(), returns.double()
    clipped = torch.minimum(torch.maximum(v, o - c), o + c)
    return (0.5 * torch.maximum((v - r) ** 2, (clipped - r) ** 2)).float()


def value_mistakes(values, old, returns, c):
    clipped = old + torch.clamp(values - old, -c, c)
    return {
        ("value clipping centred on the new value (clip(old, V - c, V + c))",
         "价值裁剪以新价值为中心（clip(old, V - c, V + c)）"):
            lambda: 0.5 * torch.max((values - returns) ** 2, (torch.clamp(old, values - c, values + c) - returns) ** 2),
        ("min instead of max of the clipped and unclipped errors", "对裁剪和未裁剪的误差取了 min 而不是 max"):
            lambda: 0.5 * torch.min((values - returns) ** 2, (clipped - returns) ** 2),
        ("no value clipping", "没有价值裁剪"): lambda: 0.5 * (values - returns) ** 2,
        ("the 0.5 factor left out",
         "漏了系数 0.5"): lambda: torch.max((values - returns) ** 2, (clipped - returns) ** 2),
        ("only the clipped error", "只用了裁剪后的误差"): lambda: 0.5 * (clipped - returns) ** 2,
    }


@pytest.mark.weight(2)
@given(N=st.integers(1, 4), T=st.integers(1, 10), c=st.sampled_from([0.1, 0.2, 1.0]), seed=st.integers(0, 2**31 - 1))
def test_clipped_value_loss_matches_reference(impl, N, T, c, seed):
    g = torch.Generator().manual_seed(seed)
    old = randn(N, T, generator=g)
    values = old + randn(N, T, generator=g, scale=0.5)
    returns = old + randn(N, T, generator=g)
    got = impl(MODULE).clipped_value_loss(values, old, returns, clip_range=c)
    assert_close(got, reference_value_loss(values, old, returns, c), name=("clipped value loss", "裁剪后的价值损失"),
                 mistakes=value_mistakes(values, old, returns, c))


def policy_mistakes(logps, old, adv, c):
    ratio = torch.exp(logps - old)
    clipped = torch.clamp(ratio, 1 - c, 1 + c)
    return {
        ("clip without the min: -clip(ratio) * A", "只做了 clip 没有取 min：-clip(ratio) * A"): lambda: -clipped * adv,
        ("max instead of min", "取了 max 而不是 min"): lambda: -torch.max(ratio * adv, clipped * adv),
        ("no clipping: -ratio * A", "没有 clip：-ratio * A"): lambda: -ratio * adv,
        ("ratio inverted: exp(old - new)", "ratio 取反了：exp(old - new)"):
            lambda: -torch.min(torch.exp(old - logps) * adv, torch.clamp(torch.exp(old - logps), 1 - c, 1 + c) * adv),
    }


@pytest.mark.weight(2)
@given(N=st.integers(1, 4), T=st.integers(1, 10), c=st.sampled_from([0.1, 0.2]), seed=st.integers(0, 2**31 - 1))
def test_clipped_policy_loss_matches_reference(impl, N, T, c, seed):
    g = torch.Generator().manual_seed(seed)
    old = -randn(N, T, generator=g).abs() - 0.1
    logps = old + randn(N, T, generator=g, scale=0.4)
    adv = randn(N, T, generator=g)
    ratio = (logps.double() - old.double()).exp()
    a = adv.double()
    expected = -torch.minimum(ratio * a, ratio.clamp(1 - c, 1 + c) * a)
    got = impl(MODULE).clipped_policy_loss(logps, old, adv, clip_range=c)
    assert_close(got, expected.float(), name=("clipped policy loss",
                                              "裁剪后的策略损失"), mistakes=policy_mistakes(logps, old, adv, c))


@given(shape=st.sampled_from([(3, 7), (2, 4, 33), (5, 2)]), dtype=st.sampled_from([torch.float32, torch.bfloat16]),
       seed=st.integers(0, 2**31 - 1))
def test_entropy_matches_the_distribution(impl, shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    logits = randn(*shape, generator=g, scale=4.0, dtype=dtype)
    p = torch.softmax(logits.double(), -1)
    expected = -(p * p.log()).sum(-1)
    got = impl(MODULE).entropy_from_logits(logits)
    assert_close(got, expected.float(), name="entropy", reduction=shape[-1], mistakes={
        ("sum of p * log p without the minus sign", "p * log p 求和时漏了负号"): lambda: -expected.float(),
        ("entropy in the logits' dtype (not fp32)",
         "熵用 logit 的 dtype 计算（不是 fp32）"): lambda: torch.distributions.Categorical(logits=logits).entropy()})


def test_entropy_is_finite_for_very_confident_logits(impl):
    logits = torch.tensor([[1000.0, 0.0, -1000.0]])
    got = impl(MODULE).entropy_from_logits(logits)
    assert_close(got, torch.tensor([0.0]), name=("entropy of a one-hot distribution", "one-hot 分布的熵"),
                 mistakes={("log(softmax(x)) instead of log_softmax: 0 * log 0 = NaN",
                            "用了 log(softmax(x)) 而不是 log_softmax：0 * log 0 = NaN"): torch.tensor([math.nan])})


@pytest.mark.weight(3)
@given(N=st.integers(1, 4), T=st.integers(1, 10), seed=st.integers(0, 2**31 - 1))
def test_ppo_loss_combines_the_three_token_means(impl, N, T, seed):
    g = torch.Generator().manual_seed(seed)
    old = -randn(N, T, generator=g).abs() - 0.1
    logps = old + randn(N, T, generator=g, scale=0.3)
    adv, old_v = randn(N, T, generator=g), randn(N, T, generator=g)
    values, returns = old_v + randn(N, T, generator=g, scale=0.3), old_v + randn(N, T, generator=g)
    ent = randn(N, T, generator=g).abs() * 2
    mask = (torch.rand(N, T, generator=g) < 0.8).long()
    mask[0, 0] = 1
    m = mask.double()
    n = m.sum()
    ratio = (logps.double() - old.double()).exp()
    pg = (-torch.minimum(ratio * adv.double(), ratio.clamp(0.8, 1.2) * adv.double()) * m).sum() / n
    vf = (reference_value_loss(values, old_v, returns, 0.3).double() * m).sum() / n
    em = (ent.double() * m).sum() / n
    got = impl(MODULE).ppo_loss(logps, old, adv, values, old_v, returns, ent, mask, clip_range=0.2,
                                value_clip_range=0.3, vf_coef=0.5, ent_coef=0.05)
    expect(isinstance(got, tuple) and len(got) == 4, "check.not_a_tuple", name="ppo_loss", count=4,
           fields="total, policy_loss, value_loss, entropy", got=type(got).__name__)
    total, g_pg, g_vf, g_ent = got
    assert_close(g_pg, pg.float(), name=("policy loss (token mean)", "策略损失（按 token 平均）"), mistakes={
        ("padding tokens counted",
         "算上了 padding token"): lambda: (-torch.min(ratio * adv.double(), ratio.clamp(0.8, 1.2) * adv.double())).mean().float()})
    assert_close(g_vf, vf.float(), name=("value loss (token mean)", "价值损失（按 token 平均）"))
    assert_close(g_ent, em.float(), name=("mean entropy", "平均熵"))
    assert_close(total, (pg + 0.5 * vf - 0.05 * em).float(), name=("total PPO loss", "PPO 总损失"), mistakes={
        ("entropy bonus added instead of subtracted", "熵奖励被加上而不是减去"): lambda: (pg + 0.5 * vf + 0.05 * em).float(),
        ("value loss not weighted by vf_coef", "价值损失没有乘以 vf_coef"): lambda: (pg + vf - 0.05 * em).float()})


def test_ppo_loss_of_an_empty_mask_is_zero_not_nan(impl, gen):
    """No real token: every token mean is 0 (the count is clamped to at least 1), not 0 / 0."""
    old = -randn(2, 5, generator=gen).abs()
    args = (old + 0.1, old, randn(2, 5, generator=gen), randn(2, 5, generator=gen), randn(2, 5, generator=gen),
            randn(2, 5, generator=gen), randn(2, 5, generator=gen).abs())
    got = impl(MODULE).ppo_loss(*args, torch.zeros(2, 5, dtype=torch.long))
    expect(isinstance(got, tuple) and len(got) == 4, "check.not_a_tuple", name="ppo_loss", count=4,
           fields="total, policy_loss, value_loss, entropy", got=type(got).__name__)
    names = [("total PPO loss with an all-zero mask", "掩码全为 0 时的 PPO 总损失"),
             ("policy loss with an all-zero mask", "掩码全为 0 时的策略损失"),
             ("value loss with an all-zero mask", "掩码全为 0 时的价值损失"),
             ("mean entropy with an all-zero mask", "掩码全为 0 时的平均熵")]
    for value, name in zip(got, names):
        assert_close(value, torch.tensor(0.0), name=name)


def test_defaults_are_the_documented_ones(impl, gen):
    """gamma 0.99, lam 0.95, clip 0.2 (policy and value), vf_coef 0.5, ent_coef 0.01."""
    m = impl(MODULE)
    rollout = random_rollout(gen, 2, 6)
    for got, want in zip(m.gae(*rollout), m.gae(*rollout, gamma=0.99, lam=0.95, normalize=False)):
        assert_close(got, want, name=("gae with its default gamma and lambda", "默认 gamma 和 lambda 下的 gae"))
    old = -randn(2, 6, generator=gen).abs()
    logps = old + randn(2, 6, generator=gen, scale=0.5)
    adv, vals = randn(2, 6, generator=gen), randn(2, 6, generator=gen)
    assert_close(m.clipped_policy_loss(logps, old, adv), m.clipped_policy_loss(logps, old, adv, clip_range=0.2),
                 name=("clipped_policy_loss with its default clip range", "默认裁剪范围下的 clipped_policy_loss"))
    args = (logps, old, adv, vals + 0.5, vals, vals + 1.0, adv.abs(), torch.ones(2, 6))
    for got, want in zip(m.ppo_loss(*args), m.ppo_loss(*args, clip_range=0.2, value_clip_range=0.2, vf_coef=0.5, ent_coef=0.01)):
        assert_close(got, want, name=("ppo_loss with its default coefficients", "默认系数下的 ppo_loss"))
