"""Visible tests for part01_transformer.rope: run `pytest exercises/part01_transformer -m rope`."""
import math

import pytest
import torch

from infralab.testing import assert_close, assert_equal, expect, randn

MODULE = "part01_transformer.rope"


def test_default_inverse_frequencies_are_base_to_the_minus_2i_over_d(impl):
    inv_freq, scaling = impl(MODULE).rope_inv_freq(8, base=10000.0)
    expected = torch.tensor([1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75])
    assert_close(inv_freq, expected, name="inv_freq")
    expect(scaling == 1.0, "part01.attention_scaling_one", got=repr(scaling))


def test_defaults_are_base_10000_and_no_attention_scaling(impl):
    rope = impl(MODULE)
    inv_freq, _ = rope.rope_inv_freq(8)
    expected = torch.tensor([1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75])
    assert_close(inv_freq, expected, name=("inv_freq with the default base", "默认 base 下的 inv_freq"),
                 mistakes={("the default base is not 10000",
                            "默认 base 不是 10000"): lambda: rope.rope_inv_freq(8, base=500000.0)[0]})
    cos, sin = rope.rope_cos_sin(expected, 3)
    assert_close(cos[0], torch.ones(4), name=("cos at position 0 with the default attention_scaling",
                                              "默认 attention_scaling 下位置 0 处的 cos"),
                 mistakes={(f"the default attention_scaling is {cos[0, 0].item():.4g}, not 1.0",
                            f"默认 attention_scaling 是 {cos[0, 0].item():.4g}，而不是 1.0"): cos[0]})


@pytest.mark.parametrize("d,base,context,beta_fast,beta_slow,ramp,mistake", [
    (8, 10000.0, 128, 32, 1, [0.0, 0.5, 1.0, 1.0],  # low = floor(-0.2) = -1: clamped to 0
     (("YaRN's low bound not clamped at 0 (max(low, 0))", "YaRN 的下界没有截断到 0（max(low, 0)）"),
      [1 / 3, 2 / 3, 1.0, 1.0])),
    (16, 10.0, 768, 32, 1, [0, 0, 0, 0, 0, 1 / 11, 2 / 11, 3 / 11],  # high = ceil(16.7) = 17: clamped to D - 1 = 15
     (("YaRN's high bound not clamped at D - 1 (min(high, D - 1))", "YaRN 的上界没有截断到 D - 1（min(high, D - 1)）"),
      [0, 0, 0, 0, 0, 1 / 13, 2 / 13, 3 / 13])),
    (8, 10000.0, 256, 128, 64, [0.0, 1.0, 1.0, 1.0], None),  # low == high == 0: high + 0.001 guards 0 / 0
], ids=["low-clamped-to-0", "high-clamped-to-D-1", "low-equals-high"])
def test_yarn_ramp_bounds_are_clamped_and_guarded(impl, d, base, context, beta_fast, beta_slow, ramp, mistake):
    """inv_freq_i = theta_i * (1 - ramp_i) + theta_i / factor * ramp_i, with the ramp given here."""
    scaling = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": context,
               "beta_fast": beta_fast, "beta_slow": beta_slow}
    got, _ = impl(MODULE).rope_inv_freq(d, base=base, scaling=scaling)
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)

    def with_ramp(r):
        r = torch.tensor(r, dtype=torch.float64)
        return (theta * (1 - r) + theta / 4.0 * r).float()

    expect(not (isinstance(got, torch.Tensor) and got.isnan().any()), "part01.yarn_nan", scaling=scaling)
    assert_close(got, with_ramp(ramp), name=(f"YaRN inv_freq for {scaling}", f"{scaling} 的 YaRN inv_freq"),
                 mistakes={mistake[0]: with_ramp(mistake[1])} if mistake else None)


def test_linear_scaling_divides_the_frequencies(impl):
    rope = impl(MODULE)
    plain, _ = rope.rope_inv_freq(16, base=500000.0)
    scaled, _ = rope.rope_inv_freq(16, base=500000.0, scaling={"type": "linear", "factor": 4.0})
    assert_close(scaled, plain / 4.0, name="linear-scaled inv_freq")


def test_cos_sin_with_an_offset_continue_the_sequence(impl):
    rope = impl(MODULE)
    inv_freq, _ = rope.rope_inv_freq(8)
    cos_all, sin_all = rope.rope_cos_sin(inv_freq, 7)
    cos, sin = rope.rope_cos_sin(inv_freq, 2, offset=5)
    assert_close(cos, cos_all[5:], name=("cos at positions 5, 6", "位置 5、6 处的 cos"))
    assert_close(sin, sin_all[5:], name=("sin at positions 5, 6", "位置 5、6 处的 sin"))


def test_a_two_dimensional_head_turns_counter_clockwise(impl):
    """D = 2, theta_0 = 1: at position 1 the vector (1, 0) turns by 1 radian to (cos 1, sin 1)."""
    rope = impl(MODULE)
    inv_freq, _ = rope.rope_inv_freq(2)
    cos, sin = rope.rope_cos_sin(inv_freq, 2)
    x = torch.tensor([1.0, 0.0]).expand(1, 1, 2, 2)
    for pairing in ("rotate_half", "interleaved"):
        got = rope.apply_rope(x, cos, sin, pairing=pairing)
        expected = torch.tensor([[1.0, 0.0], [math.cos(1.0), math.sin(1.0)]]).view(1, 1, 2, 2)
        assert_close(got, expected, name=f"{pairing} rotation")


def test_scores_depend_only_on_the_distance(impl, gen):
    """q at position m and k at position n: q.k is the same for (m, n) = (3, 1) and (10, 8)."""
    rope = impl(MODULE)
    inv_freq, _ = rope.rope_inv_freq(16)
    q, k = randn(1, 1, 1, 16, generator=gen), randn(1, 1, 1, 16, generator=gen)

    def score(m, n):
        cq, sq = rope.rope_cos_sin(inv_freq, 1, offset=m)
        ck, sk = rope.rope_cos_sin(inv_freq, 1, offset=n)
        return (rope.apply_rope(q, cq, sq) * rope.apply_rope(k, ck, sk)).sum().reshape(1)

    assert_close(score(10, 8), score(3, 1), name=("q.k at distance 2",
                                                  "距离为 2 时的 q.k"), rtol=1e-4, atol=1e-4)  # fp32 angle rounding


def test_rotate_half_pairs_dimension_i_with_i_plus_half(impl):
    """D = 4, pair 0 turned by 1 radian, pair 1 not at all: rotate-half pairs (x0, x2), interleaved (x0, x1)."""
    c, s = math.cos(1.0), math.sin(1.0)
    cos, sin = torch.tensor([[c, 1.0]]), torch.tensor([[s, 0.0]])
    x = torch.tensor([1.0, 2.0, 3.0, 4.0]).view(1, 1, 1, 4)
    got = impl(MODULE).apply_rope(x, cos, sin)  # the default pairing is rotate_half
    rotate_half = torch.tensor([1 * c - 3 * s, 2.0, 1 * s + 3 * c, 4.0]).view(1, 1, 1, 4)
    interleaved = torch.tensor([1 * c - 2 * s, 1 * s + 2 * c, 3.0, 4.0]).view(1, 1, 1, 4)
    assert_close(got, rotate_half, name=("apply_rope with the default pairing (rotate_half)",
                                         "默认配对方式（rotate_half）下的 apply_rope"),
                 mistakes={("interleaved pairs (2i, 2i + 1) used instead of rotate-half pairs (i, i + D/2)",
                            "用了交错配对 (2i, 2i + 1)，而不是 rotate-half 配对 (i, i + D/2)"): interleaved})


def test_llama3_scaling_interpolates_long_waves_and_smooths_the_middle(impl):
    """D = 8, base 10000: theta = 1, 0.1, 0.01, 0.001, wavelengths 2 pi / theta = 6.3, 63, 628, 6283.
    Context 1000 with low_freq_factor 1 and high_freq_factor 4: waves longer than 1000 / 1 are divided
    by the factor, waves shorter than 1000 / 4 = 250 are kept, the 628 one is smoothed in between."""
    factor, context = 8.0, 1000
    scaling = {"type": "llama3", "factor": factor, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": context}
    got, attention_scaling = impl(MODULE).rope_inv_freq(8, base=10000.0, scaling=scaling)
    smooth = (context / (2 * math.pi / 0.01) - 1.0) / (4.0 - 1.0)  # 0 at wavelength 1000, 1 at 250
    expected = torch.tensor([1.0, 0.1, 0.01 * ((1 - smooth) / factor + smooth), 0.001 / factor])
    swapped = torch.tensor([1.0, 0.1, 0.01 / factor, 0.001 / factor])
    assert_close(got, expected, name=(f"inv_freq for {scaling}", f"{scaling} 的 inv_freq"),
                 mistakes={("low_freq_factor and high_freq_factor swapped",
                            "low_freq_factor 与 high_freq_factor 用反了"): swapped})
    assert_equal(float(attention_scaling), 1.0, name=("attention_scaling of Llama 3 scaling (it has none: 1.0)",
                                                      "Llama 3 scaling 的 attention_scaling（它没有缩放：1.0）"))


def test_yarn_returns_its_attention_scaling(impl):
    """Without mscale or attention_factor, YaRN scales cos/sin by 0.1 ln(factor) + 1 (1.1386 for factor 4)."""
    scaling = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128}
    _, attention_scaling = impl(MODULE).rope_inv_freq(8, scaling=scaling)
    assert_close(torch.tensor([float(attention_scaling)]), torch.tensor([0.1 * math.log(4.0) + 1.0]),
                 name=(f"YaRN attention_scaling for {scaling}", f"{scaling} 的 YaRN attention_scaling"),
                 mistakes={("YaRN's attention scaling was not returned (1.0 instead of 0.1 ln(factor) + 1)",
                            "没有返回 YaRN 的注意力缩放（返回了 1.0，而不是 0.1 ln(factor) + 1）"): torch.tensor([1.0])})
