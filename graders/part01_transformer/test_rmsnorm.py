"""Hidden tests for part01_transformer.rmsnorm."""
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from infralab.mistakes.part01_transformer.rmsnorm import ln_mistakes, reference_rms_norm, rms_mistakes
from infralab.testing import assert_close, expect, randn

MODULE = "part01_transformer.rmsnorm"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@given(shape=st.lists(st.integers(1, 9), min_size=0, max_size=2), d=st.sampled_from([8, 33, 128]),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**31 - 1))
def test_rms_norm_matches_reference_on_random_shapes(impl, shape, d, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x, w = randn(*shape, d, dtype=dtype, generator=g), randn(d, dtype=dtype, generator=g)
    expected = reference_rms_norm(x, w, 1e-6)  # from the inputs as they were before the call
    got = impl(MODULE).rms_norm(x, w, eps=1e-6)
    assert_close(got, expected, mistakes=rms_mistakes(x, w, 1e-6))


@pytest.mark.weight(2)
def test_rms_norm_eps_is_inside_the_square_root(impl, gen):
    """Small activations make eps matter: sqrt(ms + eps) and sqrt(ms) + eps differ a lot."""
    eps = 1e-5
    x, w = randn(6, 64, generator=gen, scale=3e-3), randn(64, generator=gen)
    expected = reference_rms_norm(x, w, eps)  # from the inputs as they were before the call
    got = impl(MODULE).rms_norm(x, w, eps=eps)
    assert_close(got, expected, mistakes=rms_mistakes(x, w, eps))


@pytest.mark.weight(2)
def test_rms_norm_fp16_large_activations_do_not_overflow(impl, gen):
    """|x| ~ 1000 in fp16: x**2 overflows unless computed in fp32."""
    x = randn(4, 256, dtype=torch.float16, generator=gen, scale=1000.0)
    w = randn(256, dtype=torch.float16, generator=gen)
    expected = reference_rms_norm(x, w, 1e-6)  # from the inputs as they were before the call
    got = impl(MODULE).rms_norm(x, w, eps=1e-6)
    assert_close(got, expected, mistakes=rms_mistakes(x, w, 1e-6))


def test_rms_norm_reduces_over_the_last_dimension_only(impl, gen):
    """Each row is normalised on its own: scaling one row leaves the others unchanged."""
    x, w = randn(5, 16, generator=gen), randn(16, generator=gen)
    y = impl(MODULE).rms_norm(x, w, eps=1e-6)
    assert_close(y, reference_rms_norm(x, w, 1e-6), mistakes=rms_mistakes(x, w, 1e-6))
    x2 = x.clone()
    x2[0] *= 100.0
    y2 = impl(MODULE).rms_norm(x2, w, eps=1e-6)
    assert_close(y2[1:], y[1:], name=("rows 1.. after scaling row 0",
                                      "缩放第 0 行后的第 1.. 行"), mistakes=rms_mistakes(x, w, 1e-6))


def test_rms_norm_keeps_dtype_and_leaves_input_untouched(impl, gen):
    x = randn(3, 40, dtype=torch.bfloat16, generator=gen)
    w = torch.ones(40, dtype=torch.bfloat16)
    before = x.clone()
    y = impl(MODULE).rms_norm(x, w, eps=1e-6)
    expect(y.dtype == torch.bfloat16, "part01.keeps_dtype", name="rms_norm", expected=torch.bfloat16, got=y.dtype)
    expect(torch.equal(x, before), "check.modified_input", name="rms_norm")
    assert_close(y, reference_rms_norm(before, w, 1e-6))


@given(rows=st.integers(1, 8), d=st.sampled_from([4, 31, 96]), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**31 - 1))
def test_layer_norm_matches_torch(impl, rows, d, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = randn(rows, d, dtype=dtype, generator=g, scale=2.0) + 0.5
    w, b = randn(d, dtype=dtype, generator=g), randn(d, dtype=dtype, generator=g)
    expected = F.layer_norm(x.float(), (d,), w.float(), b.float(), 1e-5).to(dtype)
    assert_close(impl(MODULE).layer_norm(x, w, b, eps=1e-5), expected, mistakes=ln_mistakes(x, w, b, 1e-5))


@pytest.mark.weight(2)
def test_layer_norm_uses_the_biased_variance(impl, gen):
    """With D = 4 the D vs D - 1 difference is 15% of the scale."""
    x, w, b = randn(16, 4, generator=gen), randn(4, generator=gen), randn(4, generator=gen)
    expected = F.layer_norm(x, (4,), w, b, 1e-5)
    assert_close(impl(MODULE).layer_norm(x, w, b, eps=1e-5), expected, mistakes=ln_mistakes(x, w, b, 1e-5))


# ---------------------------------------------------------------- defaults and batch dimensions (found by validate --mutate)

def test_default_eps_values(impl, gen):
    """Rows of small magnitude (rms ~ 1e-3), where eps = 1e-6 vs 1e-5 or 1 changes the result."""
    m = impl(MODULE)
    x, w, b = randn(4, 16, generator=gen, scale=1e-3), randn(16, generator=gen), randn(16, generator=gen)
    assert_close(m.rms_norm(x, w), reference_rms_norm(x, w, 1e-6), name=("rms_norm(x, w) without eps (default 1e-6)",
                                                                         "不传 eps 的 rms_norm(x, w)（默认 1e-6）"),
                 mistakes={("a default eps other than 1e-6 (here 1e-5)",
                            "默认 eps 不是 1e-6（这里是 1e-5）"): lambda: reference_rms_norm(x, w, 1e-5)})
    assert_close(m.layer_norm(x, w, b), F.layer_norm(x, (16,), w, b, 1e-5),
                 name=("layer_norm(x, w, b) without eps (default 1e-5)", "不传 eps 的 layer_norm(x, w, b)（默认 1e-5）"),
                 mistakes={("a default eps other than 1e-5 (here 1e-6)",
                            "默认 eps 不是 1e-5（这里是 1e-6）"): lambda: F.layer_norm(x, (16,), w, b, 1e-6)})


def test_layer_norm_reduces_over_the_last_dimension_of_a_3d_input(impl, gen):
    x, w, b = randn(3, 5, 8, generator=gen, scale=2.0) + 0.5, randn(8, generator=gen), randn(8, generator=gen)
    assert_close(impl(MODULE).layer_norm(x, w, b, eps=1e-5), F.layer_norm(x, (8,), w, b, 1e-5),
                 name=("layer_norm of a (3, 5, 8) input", "(3, 5, 8) 输入的 layer_norm"),
                 mistakes={("mean or variance taken over dimension 1 instead of the last",
                            "均值或方差在第 1 维上计算，而不是在最后一维"):
                           lambda: ((x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True)
                                                                                + 1e-5)) * w + b})
