"""Hidden tests for part05_quantization.smoothquant."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.i18n import tr
from infralab.mistakes.part05_quantization.smoothquant import (MIGRATION_INVERTED, NO_CLAMP, PER_TOKEN_WRONG_AXIS,
                                                               outlier_activations, reference_absmax,
                                                               reference_fake_quant, reference_smooth_scales, reference_w8a8,
                                                               smooth_scale_mistakes, smoothquant_mistakes)
from infralab.testing import Mismatch, assert_close, assert_equal, randn

MODULE = "part05_quantization.smoothquant"


@given(shape=st.sampled_from([(6, 8), (2, 3, 16), (1, 5)]), dtype=st.sampled_from([torch.float32, torch.bfloat16]),
       seed=st.integers(0, 2**31 - 1))
def test_channel_absmax_is_the_max_over_all_tokens(impl, shape, dtype, seed):
    x = randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed), scale=4.0)
    assert_close(impl(MODULE).channel_absmax(x), reference_absmax(x), name="max|X_j| (in,)",
                 mistakes={("mean |x| instead of the max", "用了 mean|x| 而不是最大值"):
                           lambda: x.reshape(-1, x.shape[-1]).float().abs().mean(0)})


@pytest.mark.weight(3)
@given(square=st.booleans(), alpha=st.sampled_from([0.0, 0.25, 0.5, 0.8, 1.0]), seed=st.integers(0, 2**31 - 1))
def test_smooth_scales_follow_the_formula(impl, square, alpha, seed):
    g = torch.Generator().manual_seed(seed)
    cin = 16
    weight = randn(cin if square else 6, cin, generator=g, scale=0.1)
    act = torch.rand(cin, generator=g) * 30 + 0.01
    assert_close(impl(MODULE).smooth_scales(act, weight, alpha), reference_smooth_scales(act, weight, alpha),
                 name=(f"s at alpha = {alpha}",
                       f"alpha = {alpha} 时的 s"), rtol=1e-4,  # pow of fp32 values: a few ulps more than one op
                 mistakes=smooth_scale_mistakes(act, weight, alpha))


def test_smooth_scales_clamp_zero_weight_columns_and_dead_channels(impl, gen):
    act = torch.rand(8, generator=gen) + 0.5
    act[2] = 0.0                               # a dead channel: s = 0 -> clamped to 1e-5
    weight = randn(4, 8, generator=gen)
    weight[:, 5] = 0.0                         # a zero column: max|W_j| clamped to 1e-5
    got = impl(MODULE).smooth_scales(act, weight, 0.5)
    assert_close(got, reference_smooth_scales(act, weight, 0.5), name=("s with a zero column and a dead channel",
                                                                       "含全零列和死通道时的 s"),
                 rtol=1e-4, atol=0.0,  # every s is >= 1e-5: relative only, so the dead channel's 1e-5 counts
                 mistakes={NO_CLAMP: lambda: reference_smooth_scales(act, weight, 0.5, clamp=False)})


def test_defaults_are_alpha_one_half_per_token_activations_per_tensor_weights(impl, gen):
    x, w = outlier_activations(gen, n=8, cin=16, out=6)
    act = reference_absmax(x)
    m = impl(MODULE)
    assert_close(m.smooth_scales(act, w), reference_smooth_scales(act, w, 0.5), name=("smooth_scales default alpha 0.5",
                                                                                      "smooth_scales 默认 alpha 0.5"),
                 rtol=1e-4)
    assert_close(m.w8a8_linear(x, w), reference_w8a8(x, w, True, False), reduction=16,
                 name=("w8a8_linear defaults (per token, per-tensor weight)", "w8a8_linear 默认参数（逐 token，权重逐张量）"))
    s = m.smooth_scales(act, w, 0.5)
    assert_close(m.smoothquant_linear(x, w, act), reference_w8a8(x / s, w * s, True, False), reduction=16,
                 name=("smoothquant_linear defaults (alpha 0.5, per token, per-tensor weight)",
                       "smoothquant_linear 默认参数（alpha 0.5，逐 token，权重逐张量）"))


@pytest.mark.weight(2)
@given(seed=st.integers(0, 2**31 - 1), batched=st.booleans())
def test_migration_by_powers_of_two_leaves_the_product_bit_identical(impl, seed, batched):
    """Scaling by 2^k is exact in floating point: x / s and W * s multiply to exactly x W^T."""
    g = torch.Generator().manual_seed(seed)
    x = randn(2, 5, 16, generator=g) if batched else randn(7, 16, generator=g)
    w = randn(9, 16, generator=g)
    s = 2.0 ** torch.randint(-6, 7, (16,), generator=g).float()
    x_s, w_s = impl(MODULE).migrate(x, w, s)
    assert_equal(x_s, x / s, name="x / s", mistakes={MIGRATION_INVERTED: x * s})
    assert_equal(w_s, w * s, name="W * s", mistakes={MIGRATION_INVERTED: w / s})
    assert_equal(x_s @ w_s.T, x @ w.T, name="x_s W_s^T (exactly x W^T)")


@pytest.mark.weight(2)
@given(rows=st.integers(1, 6), cols=st.sampled_from([1, 7, 32]), per_row=st.booleans(),
       magnitude=st.sampled_from([1e-3, 1.0, 100.0]), seed=st.integers(0, 2**31 - 1))
def test_fake_quant_int8_is_symmetric_127_per_row_or_per_tensor(impl, rows, cols, per_row, magnitude, seed):
    t = randn(rows, cols, generator=torch.Generator().manual_seed(seed), scale=magnitude)
    t[0, 0] = 0.0
    wrong = {PER_TOKEN_WRONG_AXIS: lambda: reference_fake_quant(t, False, per_column=True)} if per_row else {}
    wrong[("per row and per tensor confused", "按行与整张量混淆了")] = lambda: reference_fake_quant(t, not per_row)
    assert_close(impl(MODULE).fake_quant_int8(t, per_row), reference_fake_quant(t, per_row),
                 name=(f"int8 fake quant ({'per row' if per_row else 'per tensor'})",
                       f"int8 伪量化（{'逐行' if per_row else '逐张量'}）"), mistakes=wrong)


def test_fake_quant_int8_of_a_zero_row_is_zero(impl):
    t = torch.zeros(3, 4)
    t[1] = torch.tensor([1.0, -2.0, 0.5, 3.0])
    assert_close(impl(MODULE).fake_quant_int8(t, True), reference_fake_quant(t, True), name=("rows with a zero row",
                                                                                             "含全零行时的各行"))


@pytest.mark.weight(2)
@pytest.mark.parametrize("per_token", [True, False])
@pytest.mark.parametrize("per_channel", [True, False])
def test_w8a8_linear_quantises_both_operands(impl, gen, per_token, per_channel):
    x, w = outlier_activations(gen, n=12, cin=32, out=10)
    assert_close(impl(MODULE).w8a8_linear(x, w, per_token, per_channel), reference_w8a8(x, w, per_token, per_channel),
                 name="W8A8 output", reduction=32,
                 mistakes={PER_TOKEN_WRONG_AXIS: lambda: reference_w8a8(x, w, per_token, per_channel,
                                                                          act_per_column=True)})


@pytest.mark.weight(3)
@given(alpha=st.sampled_from([0.5, 0.75, 0.85]), per_token=st.booleans(), per_channel=st.booleans(),
       square=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_smoothquant_linear_matches_reference(impl, alpha, per_token, per_channel, square, seed):
    x, w = outlier_activations(torch.Generator().manual_seed(seed), n=16, cin=32, out=32 if square else 12)
    act = reference_absmax(x)
    m = impl(MODULE)
    s = m.smooth_scales(act, w, alpha)
    assert_close(s, reference_smooth_scales(act, w, alpha), name="s", rtol=1e-4)
    # the expected output replays the answer's own s (checked just above): an fp32 pow an ulp away
    # from the float64 reference's could flip an int8 code at a rounding tie
    assert_close(m.smoothquant_linear(x, w, act, alpha, per_token, per_channel),
                 reference_w8a8(x.float() / s, w.float() * s, per_token, per_channel), name="SmoothQuant W8A8 output",
                 reduction=32, mistakes=smoothquant_mistakes(x, w, act, alpha, per_token, per_channel))


@pytest.mark.weight(3)
@pytest.mark.parametrize("per_token", [True, False], ids=["per-token", "per-tensor"])
@pytest.mark.parametrize("n_outliers,factor", [(1, 80.0), (3, 50.0), (8, 20.0)])
def test_smoothing_lowers_the_w8a8_error_on_outlier_activations(impl, gen, per_token, n_outliers, factor):
    """Squared errors summed over four draws: one draw's ratio has a long tail (8 outliers x20, per token: 0.70 at one
    seed in 20,000, so a single-draw 0.6 bar failed the solution in CI). Four draws, measured over 5,000 seeds: at
    most 0.52 (8 x20 per token), 0.30 (3 x50), 0.24 (1 x80) against the bar 0.7; inverted migration reads 7-64."""
    m = impl(MODULE)
    smooth = plain = 0.0
    for _ in range(4):
        x, w = outlier_activations(gen, n_outliers=n_outliers, factor=factor)
        exact = x.double() @ w.double().T
        plain += float(((m.w8a8_linear(x, w, per_token, False).double() - exact) ** 2).sum())
        smooth += float(((m.smoothquant_linear(x, w, m.channel_absmax(x), 0.5, per_token, False).double() - exact) ** 2)
                        .sum())
    if not smooth < 0.7 * plain:
        raise Mismatch(tr("part05.smoothquant.not_below_plain", smooth=f"{smooth:.4g}", plain=f"{plain:.4g}"))
