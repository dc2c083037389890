"""Visible tests for part01_transformer.ffn: run `pytest exercises/part01_transformer -m ffn`."""
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part01_transformer.ffn"


def weights(gen, d=16, i=40):
    return randn(i, d, generator=gen), randn(i, d, generator=gen), randn(d, i, generator=gen)


def test_swiglu_matches_the_formula_with_torch_linear(impl, golden):
    x = randn(3, 16, generator=golden.gen)
    ws = weights(golden.gen)
    expected = F.linear(F.silu(F.linear(x, ws[0])) * F.linear(x, ws[1]), ws[2])
    assert_close(impl(MODULE).swiglu(x, *ws), expected, mistakes=golden.ref.ffn_mistakes(x, *ws, golden.ref.silu))


def test_swiglu_with_square_weights_uses_the_linear_layout(impl, golden):
    """d_model == I: x @ W instead of x @ W.T no longer fails on shapes, only on values."""
    x = randn(3, 16, generator=golden.gen)
    ws = weights(golden.gen, 16, 16)
    expected = F.linear(F.silu(F.linear(x, ws[0])) * F.linear(x, ws[1]), ws[2])
    assert_close(impl(MODULE).swiglu(x, *ws), expected, mistakes=golden.ref.ffn_mistakes(x, *ws, golden.ref.silu))


def test_geglu_uses_the_exact_gelu_by_default(impl, golden):
    x = randn(2, 3, 16, generator=golden.gen)
    ws = weights(golden.gen)
    expected = F.linear(F.gelu(F.linear(x, ws[0])) * F.linear(x, ws[1]), ws[2])
    assert_close(impl(MODULE).geglu(x, *ws), expected, mistakes=golden.ref.ffn_mistakes(x, *ws, golden.ref.gelu_erf))


def test_geglu_with_approximate_tanh_uses_the_tanh_gelu(impl, golden):
    x = randn(2, 3, 16, generator=golden.gen)
    ws = weights(golden.gen)
    expected = F.linear(F.gelu(F.linear(x, ws[0]), approximate="tanh") * F.linear(x, ws[1]), ws[2])
    assert_close(impl(MODULE).geglu(x, *ws, approximate="tanh"), expected,
                 mistakes=golden.ref.ffn_mistakes(x, *ws, golden.ref.gelu_tanh))
