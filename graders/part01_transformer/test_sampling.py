"""Hidden tests for part01_transformer.sampling.

Filters are checked exactly against float64 references (infralab.mistakes.part01_transformer.sampling:
top-p by its definition, the mass of strictly more likely tokens, in O(V^2)); thresholds are drawn away from the
boundaries so fp32 rounding never decides a test. The sampler is checked statistically with
infralab.stats (a bound a correct sampler exceeds with probability < 1e-9).
"""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.i18n import tr
from infralab.mistakes.part01_transformer.sampling import (GLOBAL_RNG, draw_mistakes, mass_strictly_above,
                                                           min_p_mistakes, min_p_ratio, penalty_mistakes, ref_min_p,
                                                           ref_repetition_penalty, ref_top_k, ref_top_p,
                                                           top_k_mistakes, top_p_mistakes)
from infralab.stats import assert_draws_follow, threshold_clear_of, tv_bound, tv_distance
from infralab.testing import Mismatch, assert_close, assert_equal, expect, randn

MODULE = "part01_transformer.sampling"
NEG_INF = float("-inf")
MARGIN = 1e-5  # thresholds stay this far from every boundary value (fp32 error is ~1e-7)


def clear_threshold(boundaries, lo, hi, gen):
    return threshold_clear_of(boundaries, lo, hi, gen, margin=MARGIN)


# ---------------------------------------------------------------- temperature

def test_temperature_divides_the_logits(impl, gen):
    z = randn(4, 33, generator=gen, scale=3.0)
    for t in (0.3, 1.0, 2.5):
        assert_close(impl(MODULE).apply_temperature(z, t), z / t, name=(f"logits at T={t}", f"T={t} 时的 logits"),
                     mistakes={("multiplied by T instead of dividing", "乘以了 T，而不是除以 T"): z * t,
                               ("temperature applied to the probabilities (softmax(z) / T)",
                                "温度作用在了概率上（softmax(z) / T）"):
                                   torch.softmax(z, -1) / t})


def test_temperature_zero_or_negative_raises_value_error(impl):
    z = torch.zeros(1, 4)
    for t in (0.0, -1.0):
        with pytest.raises(ValueError):
            impl(MODULE).apply_temperature(z, t)


# ---------------------------------------------------------------- top-k

@given(b=st.integers(1, 4), v=st.integers(2, 60), dtype=st.sampled_from([torch.float32, torch.float16]),
       data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_top_k_matches_reference_on_random_logits(impl, b, v, dtype, data, seed):
    k = data.draw(st.integers(1, v + 2), label="k")
    g = torch.Generator().manual_seed(seed)
    z = randn(b, v, generator=g, scale=2.0, dtype=dtype)
    got = impl(MODULE).top_k_filter(z, k)
    assert_equal(got, ref_top_k(z, k), name=f"top-{k} logits", mistakes=top_k_mistakes(z, min(k, v)))


@pytest.mark.weight(2)
def test_top_k_keeps_every_token_tied_with_the_kth(impl, gen):
    """Integer logits in a small range: ties at the k-th value in almost every row."""
    z = torch.randint(-3, 4, (16, 24), generator=gen).float()
    for k in (1, 3, 7):
        got = impl(MODULE).top_k_filter(z, k)
        assert_equal(got, ref_top_k(z, k), name=(f"top-{k} logits with ties",
                                                 f"有并列时 top-{k} 之后的 logits"), mistakes=top_k_mistakes(z, k))


def test_top_k_handles_rows_with_minus_inf(impl, gen):
    z = randn(3, 20, generator=gen)
    z[:, ::3] = NEG_INF
    got = impl(MODULE).top_k_filter(z, 5)
    assert_equal(got, ref_top_k(z, 5), name=("top-5 of a row already holding -inf",
                                             "已含 -inf 的行的 top-5"), mistakes=top_k_mistakes(z, 5))


# ---------------------------------------------------------------- top-p

@given(b=st.integers(1, 4), v=st.integers(2, 80), scale=st.sampled_from([0.5, 2.0, 5.0]),
       seed=st.integers(0, 2**31 - 1))
def test_top_p_keeps_the_smallest_set_reaching_p(impl, b, v, scale, seed):
    g = torch.Generator().manual_seed(seed)
    z = randn(b, v, generator=g, scale=scale)
    p = clear_threshold(mass_strictly_above(z), 0.05, 0.99, g)
    got = impl(MODULE).top_p_filter(z, p)
    assert_equal(got, ref_top_p(z, p), name=(f"top-p logits (p={p:.4f})",
                                             f"top-p 之后的 logits（p={p:.4f}）"), mistakes=top_p_mistakes(z, p))


@pytest.mark.weight(2)
def test_top_p_keeps_the_token_that_crosses_p(impl, gen):
    """p just above one cumulative sum: the next token crosses p and must stay."""
    z = randn(8, 40, generator=gen, scale=2.0)
    q = torch.softmax(z.double(), -1).sort(-1, descending=True).values
    p = float(q[0, :3].sum()) + 2 * MARGIN  # row 0 needs 4 tokens
    p = clear_threshold(mass_strictly_above(z), p, p + 10 * MARGIN, gen)
    got = impl(MODULE).top_p_filter(z, p)
    assert_equal(got, ref_top_p(z, p), name=(f"top-p logits (p={p:.5f})",
                                             f"top-p 之后的 logits（p={p:.5f}）"), mistakes=top_p_mistakes(z, p))


def test_top_p_always_keeps_the_top_token(impl, gen):
    z = randn(6, 30, generator=gen, scale=4.0)
    got = impl(MODULE).top_p_filter(z, 1e-4)
    assert_equal(got, ref_top_p(z, 1e-4), name=("top-p logits with a tiny p",
                                                "p 极小时 top-p 之后的 logits"), mistakes=top_p_mistakes(z, 1e-4))


@pytest.mark.weight(2)
def test_top_p_keeps_or_removes_tied_tokens_together(impl, gen):
    z = torch.randint(-2, 3, (16, 12), generator=gen).float()
    p = clear_threshold(mass_strictly_above(z), 0.2, 0.9, gen)
    got = impl(MODULE).top_p_filter(z, p)
    assert_equal(got, ref_top_p(z, p), name=(f"top-p logits with ties (p={p:.4f})",
                                             f"有并列时 top-p 之后的 logits（p={p:.4f}）"), mistakes=top_p_mistakes(z, p))


def test_top_p_one_keeps_everything_and_handles_minus_inf(impl, gen):
    z = randn(3, 16, generator=gen)
    assert_equal(impl(MODULE).top_p_filter(z, 1.0), z, name=("top-p with p=1", "p=1 时的 top-p"))
    z[:, :5] = NEG_INF
    p = clear_threshold(mass_strictly_above(z), 0.3, 0.9, gen)
    assert_equal(impl(MODULE).top_p_filter(z, p), ref_top_p(z, p), name=("top-p of a row holding -inf",
                                                                         "含 -inf 的行的 top-p"),
                 mistakes=top_p_mistakes(z, p))


# ---------------------------------------------------------------- min-p

@given(b=st.integers(1, 4), v=st.integers(2, 80), scale=st.sampled_from([0.5, 2.0, 5.0]),
       seed=st.integers(0, 2**31 - 1))
def test_min_p_is_relative_to_the_top_probability(impl, b, v, scale, seed):
    g = torch.Generator().manual_seed(seed)
    z = randn(b, v, generator=g, scale=scale)
    m = clear_threshold(min_p_ratio(z), 0.01, 0.6, g)
    got = impl(MODULE).min_p_filter(z, m)
    assert_equal(got, ref_min_p(z, m), name=(f"min-p logits (min_p={m:.4f})",
                                             f"min-p 之后的 logits（min_p={m:.4f}）"), mistakes=min_p_mistakes(z, m))


@pytest.mark.weight(2)
def test_min_p_on_a_flat_distribution_keeps_tokens_below_min_p(impl, gen):
    """Top probability ~0.02: tokens far below min_p = 0.1 in absolute terms must stay."""
    z = randn(4, 100, generator=gen, scale=0.3)
    m = clear_threshold(min_p_ratio(z), 0.1, 0.3, gen)
    got = impl(MODULE).min_p_filter(z, m)
    assert_equal(got, ref_min_p(z, m), name=(f"min-p logits (min_p={m:.4f})",
                                             f"min-p 之后的 logits（min_p={m:.4f}）"), mistakes=min_p_mistakes(z, m))


# ---------------------------------------------------------------- repetition penalty

@given(b=st.integers(1, 4), v=st.integers(2, 50), t=st.integers(0, 30),
       penalty=st.sampled_from([0.7, 1.0, 1.3, 2.0]), seed=st.integers(0, 2**31 - 1))
def test_repetition_penalty_matches_reference(impl, b, v, t, penalty, seed):
    g = torch.Generator().manual_seed(seed)
    z = randn(b, v, generator=g, scale=3.0)
    context = torch.randint(0, v, (b, t), generator=g)
    expected = ref_repetition_penalty(z, context, penalty)  # from the inputs as they were before the call
    got = impl(MODULE).apply_repetition_penalty(z, context, penalty)
    assert_close(got, expected, name=(f"penalised logits (penalty {penalty})", f"施加惩罚后的 logits（penalty {penalty}）"),
                 mistakes=penalty_mistakes(z, context, penalty))


@pytest.mark.weight(2)
def test_repetition_penalty_makes_seen_negative_logits_less_likely(impl, gen):
    z = -randn(2, 20, generator=gen).abs() - 0.5  # all negative
    context = torch.randint(0, 20, (2, 12), generator=gen)
    expected = ref_repetition_penalty(z, context, 1.5)  # from the inputs as they were before the call
    got = impl(MODULE).apply_repetition_penalty(z, context, 1.5)
    assert_close(got, expected, name=("penalised negative logits", "施加惩罚后的负 logits"),
                 mistakes=penalty_mistakes(z, context, 1.5))


# ---------------------------------------------------------------- contract

FILTERS = {
    "apply_temperature": (0.7,), "top_k_filter": (4,), "top_p_filter": (0.6,), "min_p_filter": (0.1,),
}


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filters_keep_dtype_and_leave_input_untouched(impl, gen, name):
    z = randn(3, 17, generator=gen, dtype=torch.bfloat16)
    before = z.clone()
    out = getattr(impl(MODULE), name)(z, *FILTERS[name])
    expect(isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16 and out.shape == z.shape,
           "part01.filter_output", name=name, dtype=getattr(out, "dtype", type(out)),
           shape=tuple(getattr(out, "shape", ())))
    expect(torch.equal(z, before), "check.modified_input", name=name)


def test_invalid_parameters_raise_value_error(impl):
    m = impl(MODULE)
    z = torch.zeros(1, 4)
    for call in (lambda: m.top_k_filter(z, 0), lambda: m.top_p_filter(z, 0.0), lambda: m.top_p_filter(z, 1.5),
                 lambda: m.min_p_filter(z, -0.1), lambda: m.min_p_filter(z, 1.5),
                 lambda: m.apply_repetition_penalty(z, torch.zeros(1, 1, dtype=torch.long), 0.0)):
        with pytest.raises(ValueError):
            call()


# ---------------------------------------------------------------- the sampler

DRAWS = 40_000  # one batched call; TV bound for V = 8 is ~0.018


def spread_logits(v, gen, scale=1.5):
    """A row with clearly different probabilities (never near-uniform), randomly ordered."""
    z = torch.linspace(-scale, scale, v) + 0.1 * randn(v, generator=gen)
    return z[torch.randperm(v, generator=gen)]


@pytest.mark.weight(3)
@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_sample_follows_the_tempered_distribution(impl, seed, gen, temperature):
    z = spread_logits(8, gen)
    draws = impl(MODULE).sample(z.expand(DRAWS, 8).contiguous(), seed=seed, temperature=temperature)
    assert_equal(tuple(draws.shape), (DRAWS,), name=("shape of the draws", "采样结果的形状"))
    expected = torch.softmax(z.double() / temperature, -1)
    wrong = draw_mistakes(z, temperature)
    assert min(tv_distance(expected, w) for w in wrong.values()) > 2 * tv_bound(8, DRAWS)  # setup check: the test has teeth
    assert_draws_follow(draws, expected, name=(f"draws at T={temperature}", f"T={temperature} 时的采样"), mistakes=wrong)


@pytest.mark.weight(3)
def test_sample_applies_temperature_then_top_k_top_p_min_p(impl, seed, gen):
    v = 12
    z = spread_logits(v, gen, scale=2.5).unsqueeze(0)
    t = 0.8
    chain = ref_top_k(z / t, 8)
    p = clear_threshold(mass_strictly_above(chain), 0.7, 0.95, gen)
    chain = ref_top_p(chain, p)
    m = clear_threshold(min_p_ratio(chain), 0.05, 0.15, gen)
    chain = ref_min_p(chain, m)
    draws = impl(MODULE).sample(z.expand(DRAWS, v).contiguous(), seed=seed, temperature=t, top_k=8, top_p=p, min_p=m)
    wrong = {("filters applied before the temperature", "在应用温度之前就做了过滤"):
             torch.softmax(ref_min_p(ref_top_p(ref_top_k(z, 8), p), m).double() / t, -1)[0],
             ("temperature ignored",
              "忽略了温度"): torch.softmax(ref_min_p(ref_top_p(ref_top_k(z, 8), p), m).double(), -1)[0]}
    assert_draws_follow(draws, torch.softmax(chain.double(), -1)[0], name=("draws after temperature and filters",
                                                                           "经过温度和过滤之后的采样"),
                        mistakes=wrong)


def test_sample_with_temperature_zero_is_greedy(impl, seed, gen):
    z = randn(64, 50, generator=gen, scale=2.0)
    got = impl(MODULE).sample(z, seed=seed, temperature=0.0, top_k=5, top_p=0.5)
    assert_equal(got, z.argmax(-1), name=("greedy tokens", "贪心解码的 token"))


@pytest.mark.weight(2)
def test_sample_is_reproducible_for_a_seed_and_varies_with_it(impl, seed, gen):
    z = randn(1000, 16, generator=gen, scale=0.5)
    m = impl(MODULE)
    first = m.sample(z, seed=seed)
    torch.manual_seed(seed + 12345)  # the global RNG must play no part
    assert_equal(m.sample(z, seed=seed), first, name=("draws repeated with the same seed", "同一种子重复的采样"))
    other = m.sample(z, seed=seed + 1)
    expect(not torch.equal(other, first), "check.seed_unused", name="sample")


def test_sample_leaves_the_global_rng_alone(impl, seed, gen):
    z = randn(100, 10, generator=gen)
    state = torch.get_rng_state()
    impl(MODULE).sample(z, seed=seed, temperature=1.3, top_p=0.9)
    if not torch.equal(torch.get_rng_state(), state):
        raise Mismatch(tr("check.global_rng", name="sample"), GLOBAL_RNG)


def test_sample_never_draws_a_filtered_token(impl, seed, gen):
    z = randn(4000, 30, generator=gen, scale=1.0)
    draws = impl(MODULE).sample(z, seed=seed, top_k=3)
    allowed = ref_top_k(z, 3).gather(-1, draws.long().unsqueeze(-1)).squeeze(-1)
    n_bad = int(torch.isinf(allowed).sum())
    expect(n_bad == 0, "part01.outside_top_k", count=n_bad, total=4000)
    assert math.isfinite(float(allowed.sum()))  # setup check: holds whenever n_bad == 0


# ---------------------------------------------------------------- defaults and bounds (found by validate --mutate)

def test_sample_defaults_are_temperature_one_and_no_filter(impl, seed, gen):
    z = spread_logits(8, gen)
    draws = impl(MODULE).sample(z.expand(DRAWS, 8).contiguous(), seed=seed)
    wrong = {("a default temperature other than 1.0 (here 2.0)",
              "默认温度不是 1.0（这里是 2.0）"): torch.softmax(z.double() / 2, -1),
             ("a default temperature other than 1.0 (here 0.5)",
              "默认温度不是 1.0（这里是 0.5）"): torch.softmax(z.double() * 2, -1)}
    assert_draws_follow(draws, torch.softmax(z.double(), -1), name=("draws with the default arguments",
                                                                    "默认参数下的采样"), mistakes=wrong)


@pytest.mark.parametrize("name, value", [("top_k", 1), ("top_p", 0.001), ("min_p", 1.0)])
def test_sample_applies_each_filter_on_its_own(impl, seed, gen, name, value):
    """Each option alone keeps only the top token of every row (no ties: continuous logits)."""
    z = randn(500, 20, generator=gen, scale=1.0)
    got = impl(MODULE).sample(z, seed=seed, **{name: value})
    option = f"{name}={value}"
    n_bad = int((got != z.argmax(-1)).sum())
    expect(n_bad == 0, "part01.filter_alone", option=option, count=n_bad, name=name)


def test_min_p_zero_and_one_are_valid_bounds(impl, gen):
    m = impl(MODULE)
    z = randn(3, 16, generator=gen)
    assert_equal(m.min_p_filter(z, 0.0), z, name=("min_p_filter(logits, 0.0) (keeps every token)",
                                                  "min_p_filter(logits, 0.0)（保留所有 token）"))
    tied = torch.tensor([[1.0, 1.0, 0.0, -1.0]])
    assert_equal(m.min_p_filter(tied, 1.0), torch.tensor([[1.0, 1.0, NEG_INF, NEG_INF]]),
                 name=("min_p_filter(logits, 1.0) with two tied top tokens (a token whose probability equals "
                       "min_p * top is kept: the comparison is >=, not >)",
                       "有两个并列最高 token 时的 min_p_filter(logits, 1.0)（概率恰等于 min_p * top 的 token "
                       "要保留：比较用 >=，不是 >）"))
