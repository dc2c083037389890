"""Visible tests for part01_transformer.ffn: run `pytest exercises/part01_transformer -m ffn`."""
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part01_transformer.ffn"


def weights(gen, d=16, i=40):
    return randn(i, d, generator=gen), randn(i, d, generator=gen), randn(d, i, generator=gen)


def test_swiglu_matches_the_formula_with_torch_linear(impl, gen):
    x = randn(3, 16, generator=gen)
    wg, wu, wd = weights(gen)
    expected = F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)
    assert_close(impl(MODULE).swiglu(x, wg, wu, wd), expected)


def test_geglu_uses_the_exact_gelu_by_default(impl, gen):
    x = randn(2, 5, 16, generator=gen)
    wg, wu, wd = weights(gen)
    expected = F.linear(F.gelu(F.linear(x, wg)) * F.linear(x, wu), wd)
    assert_close(impl(MODULE).geglu(x, wg, wu, wd), expected)
