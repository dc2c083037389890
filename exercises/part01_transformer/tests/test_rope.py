"""Visible tests for part01_transformer.rope: run `pytest exercises/part01_transformer -m rope`."""
import math

import torch

from infralab.testing import assert_close, randn

MODULE = "part01_transformer.rope"


def test_default_inverse_frequencies_are_base_to_the_minus_2i_over_d(impl):
    inv_freq, scaling = impl(MODULE).rope_inv_freq(8, base=10000.0)
    expected = torch.tensor([1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75])
    assert_close(inv_freq, expected, name="inv_freq")
    assert scaling == 1.0, f"attention_scaling without scaling should be 1.0, got {scaling}"


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
    assert_close(cos, cos_all[5:], name="cos at positions 5, 6")
    assert_close(sin, sin_all[5:], name="sin at positions 5, 6")


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

    assert_close(score(10, 8), score(3, 1), name="q.k at distance 2", rtol=1e-4, atol=1e-4)  # fp32 angle rounding
