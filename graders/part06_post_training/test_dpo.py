"""Hidden tests for part06_post_training.dpo."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from infralab.testing import assert_close, expect, randn

MODULE = "part06_post_training.dpo"


# ---- sequence log-probabilities ---------------------------------------------------------------

def reference_sequence_logps(logits, ids, mask, average=False):
    """Token by token, in fp64: position t is predicted by the logits at t - 1."""
    out = torch.zeros(logits.shape[0], dtype=torch.float64)
    for b in range(logits.shape[0]):
        positions = torch.nonzero(mask[b, 1:]).flatten() + 1          # response tokens, t >= 1
        predictors = torch.log_softmax(logits[b, positions - 1].double(), -1)
        out[b] = predictors[torch.arange(len(positions)), ids[b, positions]].sum()
        if average:
            out[b] /= max(len(positions), 1)
    return out.float()


def logps_mistakes(logits, ids, mask, average=False):
    lp = logits.float().log_softmax(-1)
    unshifted = lp.gather(-1, ids.unsqueeze(-1)).squeeze(-1)                 # logits[t] scored token t
    shifted = lp[:, :-1].gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    m = mask.float()
    n = m[:, 1:].sum(-1).clamp(min=1)

    def finish(total, count):
        return total / count if average else total
    return {
        ("logits not shifted: logits[:, t] scored token t instead of token t + 1",
         "logits 没有错位：logits[:, t] 给 token t 打分，而不是 token t + 1"):
            lambda: finish((unshifted * m).sum(-1), m.sum(-1).clamp(min=1)),
        ("prompt (and padding) tokens counted: the response mask was not applied", "提示（和填充）token 也计入了：没有应用回答掩码"):
            lambda: finish(shifted.sum(-1), torch.full_like(n, ids.shape[1] - 1)),
        ("mask shifted the wrong way (mask[:, :-1] instead of mask[:, 1:])",
         "掩码移错了方向（用了 mask[:, :-1] 而不是 mask[:, 1:]）"):
            lambda: finish((shifted * m[:, :-1]).sum(-1), m[:, :-1].sum(-1).clamp(min=1)),
        ("mean over response tokens instead of the sum",
         "对回答 token 取了平均而不是求和"): lambda: (shifted * m[:, 1:]).sum(-1) / n,
        ("sum instead of the mean over response tokens", "对回答 token 求了和而不是取平均"): lambda: (shifted * m[:, 1:]).sum(-1),
    }


def random_batch(g, B, T, V, dtype=torch.float32):
    """Prompts of random length, responses of random length, then padding (mask 0)."""
    logits = randn(B, T, V, dtype=dtype, generator=g, scale=3.0)
    ids = torch.randint(0, V, (B, T), generator=g)
    mask = torch.zeros(B, T, dtype=torch.long)
    for b in range(B):
        start = int(torch.randint(1, T, (1,), generator=g))
        end = int(torch.randint(start, T + 1, (1,), generator=g))
        mask[b, start:end] = 1
    return logits, ids, mask


@pytest.mark.weight(2)
@given(B=st.integers(1, 4), T=st.integers(2, 12), V=st.sampled_from([5, 17, 64]),
       average=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_sequence_logps_match_token_by_token_reference(impl, B, T, V, average, seed):
    g = torch.Generator().manual_seed(seed)
    logits, ids, mask = random_batch(g, B, T, V)
    expected = reference_sequence_logps(logits, ids, mask, average)  # from the inputs as they were before the call
    got = impl(MODULE).sequence_logps(logits, ids, mask, average=average)
    assert_close(got, expected, name=("sequence log-probs", "序列的 log-prob"),
                 mistakes=logps_mistakes(logits, ids, mask, average))


@pytest.mark.weight(2)
def test_sequence_logps_ignore_prompt_and_padding(impl, gen):
    """Long prompts and padding with confident logits: counting them moves the sum a lot."""
    B, T, V = 3, 16, 11
    logits, ids, _ = random_batch(gen, B, T, V)
    mask = torch.zeros(B, T, dtype=torch.bool)
    mask[0, 9:12] = True
    mask[1, 5:16] = True
    mask[2, 14:15] = True
    expected = reference_sequence_logps(logits, ids, mask)  # from the inputs as they were before the call
    got = impl(MODULE).sequence_logps(logits, ids, mask)
    assert_close(got, expected, name=("sequence log-probs", "序列的 log-prob"),
                 mistakes=logps_mistakes(logits, ids, mask))


def test_sequence_logps_of_half_precision_logits_are_fp32(impl, gen):
    logits, ids, mask = random_batch(gen, 2, 10, 50, dtype=torch.bfloat16)
    expected = reference_sequence_logps(logits, ids, mask)  # from the inputs as they were before the call
    got = impl(MODULE).sequence_logps(logits, ids, mask)
    assert_close(got, expected, name=("sequence log-probs of bf16 logits", "bf16 logits 的序列 log-prob"),
                 mistakes=logps_mistakes(logits, ids, mask))


def test_sequence_logps_without_response_tokens_is_zero(impl, gen):
    logits, ids, _ = random_batch(gen, 2, 6, 9)
    mask = torch.zeros(2, 6, dtype=torch.long)
    for average in (False, True):
        expected = torch.zeros(2)  # from the inputs as they were before the call
        got = impl(MODULE).sequence_logps(logits, ids, mask, average=average)
        assert_close(got, expected, name=(f"log-prob of an empty response (average={average})",
                                          f"空回复的 log-prob（average={average}）"))


def test_sequence_logps_leave_inputs_untouched(impl, gen):
    logits, ids, mask = random_batch(gen, 2, 7, 13)
    before = (logits.clone(), ids.clone(), mask.clone())
    impl(MODULE).sequence_logps(logits, ids, mask)
    expect(all(torch.equal(a, b) for a, b in zip((logits, ids, mask), before)), "check.modified_input",
           name="sequence_logps")


# ---- rewards -----------------------------------------------------------------------------------

def four_logps(g, B, scale=20.0):
    return tuple(-randn(B, generator=g, scale=scale).abs() for _ in range(4))


def reward_mistakes(pc, pr, rc, rr, beta):
    return {
        ("beta left out of the rewards (plain log-ratios)", "奖励中漏了 beta（直接用对数比）"): lambda: pc - rc,
        ("policy and reference swapped (reference - policy)",
         "策略与参考模型对调了（reference - policy）"): lambda: beta * (rc - pc),
        ("chosen and rejected swapped", "chosen 与 rejected 对调了"): lambda: beta * (pr - rr),
    }


@pytest.mark.weight(2)
@given(B=st.integers(1, 16), beta=st.sampled_from([0.01, 0.1, 0.5, 2.0]), seed=st.integers(0, 2**31 - 1))
def test_rewards_and_margins_match_their_definition(impl, B, beta, seed):
    g = torch.Generator().manual_seed(seed)
    pc, pr, rc, rr = four_logps(g, B)
    expected = beta * (pc - rc), beta * (pr - rr), beta * ((pc - rc) - (pr - rr))  # before the call
    chosen, rejected, margins = impl(MODULE).dpo_rewards(pc, pr, rc, rr, beta=beta)
    assert_close(chosen, expected[0], name=("chosen rewards",
                                            "chosen 的奖励"), mistakes=reward_mistakes(pc, pr, rc, rr, beta))
    assert_close(rejected, expected[1], name=("rejected rewards", "rejected 的奖励"),
                 mistakes={("beta left out of the rewards (plain log-ratios)",
                            "奖励中漏了 beta（直接用对数比）"): lambda: pr - rr})
    assert_close(margins, expected[2], name=("reward margins", "奖励差值"),
                 mistakes={("beta left out of the rewards (plain log-ratios)",
                            "奖励中漏了 beta（直接用对数比）"): lambda: (pc - rc) - (pr - rr),
                           ("margin taken as rejected - chosen",
                            "margin 取成了 rejected - chosen"): lambda: beta * ((pr - rr) - (pc - rc))})


# ---- losses ------------------------------------------------------------------------------------

def reference_loss(pc, pr, rc, rr, beta, loss_type="sigmoid", eps=0.0):
    """In fp64, with the pieces named after the papers' notation."""
    pi_logratios = pc.double() - pr.double()
    ref_logratios = rc.double() - rr.double()
    h = pi_logratios - ref_logratios
    if loss_type == "ipo":
        return ((h - 1.0 / (2.0 * beta)) ** 2).float()
    # -log sigmoid(x) = softplus(-x), exact for large |x| in fp64
    return ((1 - eps) * F.softplus(-beta * h) + eps * F.softplus(beta * h)).float()


def loss_mistakes(pc, pr, rc, rr, beta, eps=0.0):
    h = (pc - rc) - (pr - rr)
    return {
        ("sign flipped: rejected - chosen instead of chosen - rejected",
         "符号反了：用了 rejected - chosen 而不是 chosen - rejected"):
            lambda: -(1 - eps) * F.logsigmoid(-beta * h) - eps * F.logsigmoid(beta * h),
        ("label smoothing applied to the wrong term (eps and 1 - eps swapped)", "标签平滑加错了项（eps 与 1 - eps 对调了）"):
            lambda: -eps * F.logsigmoid(beta * h) - (1 - eps) * F.logsigmoid(-beta * h),
        ("label smoothing ignored (plain DPO)", "忽略了标签平滑（成了普通 DPO）"): lambda: -F.logsigmoid(beta * h),
        ("beta left out of the sigmoid",
         "sigmoid 里漏了 beta"): lambda: -(1 - eps) * F.logsigmoid(h) - eps * F.logsigmoid(-h),
        ("IPO target written 1/2*beta (= beta/2) instead of 1/(2*beta)",
         "IPO 目标写成了 1/2*beta（= beta/2），而不是 1/(2*beta)"): lambda: (h - beta / 2) ** 2,
        ("IPO target 1/beta instead of 1/(2*beta)", "IPO 目标用了 1/beta 而不是 1/(2*beta)"): lambda: (h - 1 / beta) ** 2,
    }


@pytest.mark.weight(3)
@given(B=st.integers(1, 16), beta=st.sampled_from([0.05, 0.1, 0.5, 1.0]), seed=st.integers(0, 2**31 - 1))
def test_dpo_sigmoid_loss_matches_reference(impl, B, beta, seed):
    g = torch.Generator().manual_seed(seed)
    pc, pr, rc, rr = four_logps(g, B)
    expected = reference_loss(pc, pr, rc, rr, beta)  # from the inputs as they were before the call
    got = impl(MODULE).dpo_loss(pc, pr, rc, rr, beta=beta)
    assert_close(got, expected, name=("DPO loss per pair", "每对样本的 DPO 损失"),
                 mistakes=loss_mistakes(pc, pr, rc, rr, beta))


def test_dpo_loss_falls_as_the_chosen_response_gains_probability(impl, gen):
    pc, pr, rc, rr = four_logps(gen, 8)
    dpo = impl(MODULE).dpo_loss
    before = dpo(pc, pr, rc, rr, beta=0.1)
    after = dpo(pc + 1.0, pr, rc, rr, beta=0.1)
    expect(bool((after < before).all()), "part06.dpo_sign", count=int((after >= before).sum()), total=after.numel())


def test_dpo_loss_is_stable_for_large_margins(impl):
    """|beta * h| = 200: log(sigmoid(.)) underflows to -inf; logsigmoid does not."""
    zero = torch.zeros(2)
    pc = torch.tensor([2000.0, -2000.0])
    expected = torch.tensor([0.0, 200.0])  # from the inputs as they were before the call
    got = impl(MODULE).dpo_loss(pc, zero, zero, zero, beta=0.1)
    assert_close(got, expected, name=("DPO loss at beta*h = +-200", "beta*h = +-200 时的 DPO 损失"),
                 mistakes={("log(sigmoid(x)) instead of logsigmoid(x): overflow to inf",
                            "用了 log(sigmoid(x)) 而不是 logsigmoid(x)：溢出为 inf"):
                           torch.tensor([0.0, math.inf])})


@pytest.mark.weight(2)
@given(eps=st.sampled_from([0.05, 0.1, 0.3, 0.45]), beta=st.sampled_from([0.1, 0.5]),
       seed=st.integers(0, 2**31 - 1))
def test_conservative_dpo_weights_both_directions(impl, eps, beta, seed):
    g = torch.Generator().manual_seed(seed)
    pc, pr, rc, rr = four_logps(g, 12, scale=5.0)
    expected = reference_loss(pc, pr, rc, rr, beta, eps=eps)  # from the inputs as they were before the call
    got = impl(MODULE).dpo_loss(pc, pr, rc, rr, beta=beta, label_smoothing=eps)
    assert_close(got, expected, name=("conservative DPO loss", "保守 DPO 损失"),
                 mistakes=loss_mistakes(pc, pr, rc, rr, beta, eps))


@pytest.mark.weight(2)
@given(beta=st.sampled_from([0.1, 0.25, 0.5, 1.0, 4.0]), seed=st.integers(0, 2**31 - 1))
def test_ipo_loss_matches_reference(impl, beta, seed):
    g = torch.Generator().manual_seed(seed)
    pc, pr, rc, rr = four_logps(g, 10, scale=3.0)
    expected = reference_loss(pc, pr, rc, rr, beta, "ipo")  # from the inputs as they were before the call
    got = impl(MODULE).dpo_loss(pc, pr, rc, rr, beta=beta, loss_type="ipo")
    assert_close(got, expected, name=("IPO loss per pair", "每对样本的 IPO 损失"),
                 mistakes=loss_mistakes(pc, pr, rc, rr, beta))


@pytest.mark.parametrize("kwargs", [
    dict(loss_type="kto"), dict(beta=0.0), dict(beta=-0.1), dict(label_smoothing=0.5),
    dict(label_smoothing=-0.1), dict(loss_type="ipo", label_smoothing=0.1)],
    ids=["unknown-loss", "beta-zero", "beta-negative", "eps-half", "eps-negative", "ipo-with-eps"])
def test_invalid_arguments_raise_value_error(impl, kwargs):
    x = torch.zeros(3)
    with pytest.raises(ValueError):
        impl(MODULE).dpo_loss(x, x, x, x, **kwargs)


def test_full_pipeline_from_logits_to_loss(impl, gen):
    """Logits of policy and reference for a batch of pairs -> per-pair loss and margins."""
    m = impl(MODULE)
    logits_pol, ids, mask = random_batch(gen, 8, 10, 23)
    logits_ref = logits_pol + randn(*logits_pol.shape, generator=gen, scale=0.5)
    pol = m.sequence_logps(logits_pol, ids, mask)
    ref = m.sequence_logps(logits_ref, ids, mask)
    pc, pr, rc, rr = pol[:4], pol[4:], ref[:4], ref[4:]
    e_pol = reference_sequence_logps(logits_pol, ids, mask)
    e_ref = reference_sequence_logps(logits_ref, ids, mask)
    expected = reference_loss(e_pol[:4], e_pol[4:], e_ref[:4], e_ref[4:], 0.2)
    assert_close(m.dpo_loss(pc, pr, rc, rr, beta=0.2), expected, name=("loss from logits", "由 logits 计算的损失"),
                 mistakes=loss_mistakes(e_pol[:4], e_pol[4:], e_ref[:4], e_ref[4:], 0.2))


def default_beta_mistakes(make):
    """The output ``make(beta)`` for betas a student might take as the default."""
    return {(f"the default beta is {b:g}, not 0.1",
             f"默认 beta 是 {b:g}，而不是 0.1"): (lambda b: lambda: make(b))(b) for b in (1.0, 0.5, 0.2, 0.01)}


def test_beta_defaults_to_one_tenth(impl, gen):
    pc, pr, rc, rr = four_logps(gen, 8, scale=5.0)
    m = impl(MODULE)
    chosen, rejected, margins = m.dpo_rewards(pc, pr, rc, rr)
    assert_close(chosen, 0.1 * (pc - rc), name=("chosen rewards with the default beta", "默认 beta 下 chosen 的奖励"),
                 mistakes=default_beta_mistakes(lambda b: b * (pc - rc)))
    assert_close(margins, 0.1 * ((pc - rc) - (pr - rr)), name=("reward margins with the default beta",
                                                               "默认 beta 下的奖励差值"),
                 mistakes=default_beta_mistakes(lambda b: b * ((pc - rc) - (pr - rr))))
    assert_close(m.dpo_loss(pc, pr, rc, rr), reference_loss(pc, pr, rc, rr, 0.1), name=("DPO loss with the default beta",
                                                                                        "默认 beta 下的 DPO 损失"),
                 mistakes=default_beta_mistakes(lambda b: reference_loss(pc, pr, rc, rr, b)))
    assert_close(m.dpo_loss(pc, pr, rc, rr, loss_type="ipo"), reference_loss(pc, pr, rc, rr, 0.1, "ipo"),
                 name=("IPO loss with the default beta", "默认 beta 下的 IPO 损失"),
                 mistakes=default_beta_mistakes(lambda b: reference_loss(pc, pr, rc, rr, b, "ipo")))
