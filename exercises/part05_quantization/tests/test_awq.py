"""Visible tests for part05_quantization.awq: run `pytest exercises/part05_quantization -m awq`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import pytest
import torch

from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, expect, randn

MODULE = "part05_quantization.awq"


def _outlier_layer(gen, n=32, cin=32, out=8):
    """Inputs with 2 channels 20x larger than the rest, as LLM activations have."""
    x = randn(n, cin, generator=gen)
    x[:, [3, 17]] *= 20.0
    return randn(out, cin, generator=gen, scale=0.05), x


def test_activation_stats_are_the_mean_absolute_value_per_input_channel(impl, golden):
    x = torch.tensor([[1.0, -2.0], [-3.0, 4.0], [2.0, 0.0]])
    assert_close(impl(MODULE).activation_stats(x), torch.tensor([2.0, 2.0]), name="x_mean",
                 mistakes={golden.ref.MAX_INSTEAD_OF_MEAN: torch.tensor([3.0, 4.0])})


def test_awq_scales_hand_example(impl):
    # x_mean^0.5 = [1, 2, 4]; normalised by sqrt(max * min) = sqrt(4 * 1) = 2
    s = impl(MODULE).awq_scales(torch.tensor([1.0, 4.0, 16.0]), 0.5)
    assert_close(s, torch.tensor([0.5, 1.0, 2.0]), name=("s at alpha = 0.5", "alpha = 0.5 时的 s"))


def test_fake_quantize_is_group_wise_zero_point_quantisation(impl):
    # group [-1, 0, 0.625, 2.75]: scale 3.75 / 15 = 0.25, zero 4; 0.625 / 0.25 = 2.5 rounds to 2 (half to even)
    # group [0, 1, 2, 3]: scale 0.2, zero 0: all exact
    w = torch.tensor([[-1.0, 0.0, 0.625, 2.75, 0.0, 1.0, 2.0, 3.0]])
    got = impl(MODULE).fake_quantize(w, bits=4, group_size=4)
    assert_close(got, torch.tensor([[-1.0, 0.0, 0.5, 2.75, 0.0, 1.0, 2.0, 3.0]]), name="Q(w)")


def test_search_scales_picks_the_smallest_output_error(impl, golden):
    w, x = _outlier_layer(golden.gen)
    s, alpha, errors = impl(MODULE).search_scales(w, x, bits=4, group_size=16, n_grid=10)
    _, _, ref_errors = golden.ref.reference_search(w, x, 4, 16, 10)
    # 1%: an s one ulp away may flip a code at a rounding tie, which moves the mean error a little
    assert_close(errors, ref_errors, rtol=1e-2, atol=0.0, name=("output error at each alpha = i / 10",
                                                                "每个 alpha = i / 10 处的输出误差"),
                 mistakes=golden.ref.search_mistakes(w, x, 4, 16, 10, "errors"))
    best = int(torch.argmin(errors)) / 10  # argmin: the first minimum
    expect(alpha == best, "part05.awq.alpha_differs", expected=best, got=repr(alpha))
    assert_close(s, golden.ref.reference_scales(golden.ref.reference_stats(x), alpha), name="s",
                 mistakes=golden.ref.search_mistakes(w, x, 4, 16, 10, "s"))


@pytest.mark.parametrize("prev", ["norm", "linear"])
def test_fold_scales_divides_the_previous_op_and_leaves_the_output_unchanged(impl, gen, prev):
    s = torch.tensor([0.5, 2.0, 4.0, 1.0])
    w = randn(3, 4, generator=gen)
    prev_w = randn(4, generator=gen) if prev == "norm" else randn(4, 6, generator=gen)
    new_prev, _, new_w = impl(MODULE).fold_scales(prev_w, w, s)
    shape = (4,) if prev == "norm" else (4, 1)
    assert_close(new_prev, prev_w / s.reshape(shape), name=("previous op's weight / s", "前一个算子的权重 / s"),
                 mistakes={("1/s must go into the previous op: it was multiplied by s instead",
                            "前一算子应当除以 s（折叠 1/s），这里却乘了 s"): prev_w * s.reshape(shape)})
    assert_close(new_w, w * s, name=("layer weight * s", "该层权重 * s"))


def test_awq_beats_round_to_nearest_on_a_layer_with_outlier_channels(impl, golden):
    w, x = _outlier_layer(golden.gen)
    m = impl(MODULE)
    q, scale, zero, s = m.awq_quantize(w, x, bits=4, group_size=16, n_grid=10)
    w_awq = (q.float() - zero.float().repeat_interleave(16, 1)) * scale.repeat_interleave(16, 1) / s
    e_awq = float(((x @ w.T - x @ w_awq.T) ** 2).mean())
    e_rtn = float(((x @ w.T - x @ golden.ref.reference_fake_quantize(w, 4, 16).T) ** 2).mean())
    expect(e_awq < 0.8 * e_rtn, "part05.awq.not_below_rtn", inputs=tr("part05.awq.calibration_inputs"),
           awq=f"{e_awq:.4g}", rtn=f"{e_rtn:.4g}")


def test_equal_errors_keep_the_first_grid_point(impl, gen):
    """Every channel has the same mean |x|: every alpha gives s = 1 and the same error, so alpha stays 0."""
    x = torch.sign(randn(16, 16, generator=gen))  # |x| = 1 everywhere
    s, alpha, _ = impl(MODULE).search_scales(randn(4, 16, generator=gen, scale=0.05), x, 4, 8, 5)
    if alpha != 0.0:
        raise Mismatch(tr("part05.awq.tie_not_first", got=repr(alpha)),
                       ("the last minimum was kept (<= instead of <)", "保留了最后一个最小值（用了 <= 而不是 <）"))
