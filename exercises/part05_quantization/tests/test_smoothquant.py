"""Visible tests for part05_quantization.smoothquant: run `pytest exercises/part05_quantization -m smoothquant`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import torch

from infralab.testing import assert_close, assert_equal, expect, randn

MODULE = "part05_quantization.smoothquant"


def test_channel_absmax_is_the_max_over_tokens_per_input_channel(impl):
    x = torch.tensor([[[1.0, -5.0], [-3.0, 4.0]], [[2.0, 0.5], [0.0, -1.0]]])  # (batch 2, seq 2, in 2)
    assert_close(impl(MODULE).channel_absmax(x), torch.tensor([3.0, 5.0]), name="max|X_j|")


def test_smooth_scales_hand_example(impl, golden):
    # max|X| = [16, 1]; max|W_j| over the output rows = [1, 16]; alpha = 0.75:
    # s = [16^0.75 / 1^0.25, 1^0.75 / 16^0.25] = [8, 0.5]
    act = torch.tensor([16.0, 1.0])
    weight = torch.tensor([[0.5, 16.0], [1.0, 0.0]])
    assert_close(impl(MODULE).smooth_scales(act, weight, 0.75), torch.tensor([8.0, 0.5]), name="s",
                 mistakes=golden.ref.smooth_scale_mistakes(act, weight, 0.75))


def test_migration_by_powers_of_two_leaves_the_product_bit_identical(impl, golden):
    x, w = randn(4, 8, generator=golden.gen), randn(3, 8, generator=golden.gen)
    s = torch.tensor([1.0, 2.0, 0.5, 8.0, 0.25, 4.0, 1.0, 16.0])  # powers of two: every scaling is exact
    x_s, w_s = impl(MODULE).migrate(x, w, s)
    assert_equal(x_s, x / s, name="x / s",
                 mistakes={golden.ref.MIGRATION_INVERTED: x * s})
    assert_equal(x_s @ w_s.T, x @ w.T, name="x_s W_s^T (exactly x W^T)")


def test_fake_quant_int8_per_token_has_one_scale_per_row(impl, golden):
    t = randn(3, 8, generator=golden.gen) * torch.tensor([[0.01], [1.0], [100.0]])
    assert_close(impl(MODULE).fake_quant_int8(t, per_row=True), golden.ref.reference_fake_quant(t, True),
                 name=("per-token int8 fake quant", "逐 token 的 int8 伪量化"),
                 mistakes={golden.ref.PER_TOKEN_WRONG_AXIS: golden.ref.reference_fake_quant(t, False, per_column=True)})
    assert_close(impl(MODULE).fake_quant_int8(t, per_row=False), golden.ref.reference_fake_quant(t, False),
                 name=("per-tensor int8 fake quant", "逐张量的 int8 伪量化"))


def test_smoothing_lowers_the_w8a8_error_on_outlier_activations(impl, gen):
    m = impl(MODULE)
    smooth = plain = 0.0
    for _ in range(4):  # squared errors summed over four draws: one draw's ratio has a long tail
        x = randn(16, 32, generator=gen)
        x[:, [5, 20]] *= 50.0  # two outlier channels, in every token
        w = randn(12, 32, generator=gen, scale=0.05)
        exact = x.double() @ w.double().T
        plain += float(((m.w8a8_linear(x, w, per_token=True).double() - exact) ** 2).sum())
        smooth += float(((m.smoothquant_linear(x, w, m.channel_absmax(x), 0.5, per_token=True).double() - exact) ** 2)
                        .sum())
    expect(smooth < 0.7 * plain, "part05.smoothquant.not_below_plain", smooth=f"{smooth:.4g}", plain=f"{plain:.4g}")
