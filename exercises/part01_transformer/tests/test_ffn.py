"""Visible tests for part01_transformer.ffn: run `pytest exercises/part01_transformer -m ffn`."""
import torch.nn.functional as F

from infralab.mistakes.part01_transformer.ffn import ffn_mistakes, gelu_erf, gelu_tanh, silu
from infralab.testing import assert_close, randn

MODULE = "part01_transformer.ffn"


def weights(gen, d=16, i=40):
    return randn(i, d, generator=gen), randn(i, d, generator=gen), randn(d, i, generator=gen)


def test_swiglu_matches_the_formula_with_torch_linear(impl, gen):
    x = randn(3, 16, generator=gen)
    ws = weights(gen)
    expected = F.linear(F.silu(F.linear(x, ws[0])) * F.linear(x, ws[1]), ws[2])
    assert_close(impl(MODULE).swiglu(x, *ws), expected, mistakes=ffn_mistakes(x, *ws, silu))


def test_swiglu_with_square_weights_uses_the_linear_layout(impl, gen):
    """d_model == I: x @ W instead of x @ W.T no longer fails on shapes, only on values."""
    x = randn(3, 16, generator=gen)
    ws = weights(gen, 16, 16)
    expected = F.linear(F.silu(F.linear(x, ws[0])) * F.linear(x, ws[1]), ws[2])
    assert_close(impl(MODULE).swiglu(x, *ws), expected, mistakes=ffn_mistakes(x, *ws, silu))


def test_geglu_uses_the_exact_gelu_by_default(impl, gen):
    x = randn(2, 5, 16, generator=gen)
    ws = weights(gen)
    expected = F.linear(F.gelu(F.linear(x, ws[0])) * F.linear(x, ws[1]), ws[2])
    assert_close(impl(MODULE).geglu(x, *ws), expected, mistakes=ffn_mistakes(x, *ws, gelu_erf))


def test_geglu_with_approximate_tanh_uses_the_tanh_gelu(impl, gen):
    x = randn(2, 5, 16, generator=gen)
    ws = weights(gen)
    expected = F.linear(F.gelu(F.linear(x, ws[0]), approximate="tanh") * F.linear(x, ws[1]), ws[2])
    assert_close(impl(MODULE).geglu(x, *ws, approximate="tanh"), expected, mistakes=ffn_mistakes(x, *ws, gelu_tanh))
