"""Hidden tests for part01_transformer.ffn. The reference computes in float64 from the formulas."""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.mistakes.part01_transformer.ffn import ffn_mistakes, gated_ffn, gelu_erf, gelu_tanh, silu
from infralab.testing import assert_close, expect, randn

MODULE = "part01_transformer.ffn"


def weights(gen, d, i, dtype=torch.float32, scale=None):
    scale_in, scale_out = scale or 1 / math.sqrt(d), 1 / math.sqrt(i)
    return (randn(i, d, generator=gen, dtype=dtype, scale=scale_in), randn(i, d, generator=gen, dtype=dtype, scale=scale_in),
            randn(d, i, generator=gen, dtype=dtype, scale=scale_out))


def check(mod, fn, x, ws, act, **kwargs):
    got = getattr(mod, fn)(x, *ws, **kwargs)
    expected = gated_ffn(x, *ws, act)
    assert_close(got, expected, name=f"{fn} output", reduction=ws[0].shape[0], mistakes=ffn_mistakes(x, *ws, act))


@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=2), d=st.sampled_from([8, 24]),
       i=st.sampled_from([16, 40]), seed=st.integers(0, 2**31 - 1))
def test_swiglu_matches_the_reference(impl, shape, d, i, seed):
    g = torch.Generator().manual_seed(seed)
    check(impl(MODULE), "swiglu", randn(*shape, d, generator=g), weights(g, d, i), silu)


@pytest.mark.weight(2)
def test_swiglu_gates_with_silu_of_the_gate_projection(impl, gen):
    check(impl(MODULE), "swiglu", randn(6, 32, generator=gen), weights(gen, 32, 64), silu)


def test_square_weights_are_used_in_linear_layout(impl, gen):
    """d_model == I: (out, in) vs (in, out) no longer fails on shapes, only on values."""
    check(impl(MODULE), "swiglu", randn(5, 16, generator=gen), weights(gen, 16, 16), silu)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_swiglu_in_half_precision(impl, gen, dtype):
    x = randn(4, 16, generator=gen, dtype=dtype)
    got = impl(MODULE).swiglu(x, *weights(gen, 16, 32, dtype=dtype))
    expect(got.dtype == dtype, "part01.keeps_dtype", name="swiglu", expected=dtype, got=got.dtype)
    check(impl(MODULE), "swiglu", x, weights(gen, 16, 32, dtype=dtype), silu)


@pytest.mark.weight(2)
@pytest.mark.parametrize("approximate,act", [("none", gelu_erf), ("tanh", gelu_tanh)], ids=["erf", "tanh"])
def test_geglu_uses_the_requested_gelu(impl, gen, approximate, act):
    """Gate pre-activations of size ~2-3, where the two GELUs differ most (~5e-4)."""
    ws = weights(gen, 16, 48, scale=0.7)
    check(impl(MODULE), "geglu", randn(8, 16, generator=gen), ws, act, approximate=approximate)


def test_geglu_default_is_the_exact_gelu(impl, gen):
    ws = weights(gen, 16, 48, scale=0.7)
    check(impl(MODULE), "geglu", randn(8, 16, generator=gen), ws, gelu_erf)


def test_geglu_rejects_an_unknown_approximation(impl, gen):
    with pytest.raises(ValueError):
        impl(MODULE).geglu(randn(2, 8, generator=gen), *weights(gen, 8, 16), approximate="sigmoid")


def test_ffn_leaves_its_input_untouched(impl, gen):
    x = randn(3, 8, generator=gen)
    before = x.clone()
    impl(MODULE).swiglu(x, *weights(gen, 8, 16))
    expect(torch.equal(x, before), "check.modified_input", name="swiglu")
