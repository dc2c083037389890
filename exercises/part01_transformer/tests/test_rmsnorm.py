"""Visible tests for part01_transformer.rmsnorm: run `pytest exercises/part01_transformer -m rmsnorm`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import torch
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part01_transformer.rmsnorm"


def test_rms_norm_matches_torch_in_fp32(impl, golden):
    x, w = randn(2, 3, 16, generator=golden.gen), randn(16, generator=golden.gen)
    got = impl(MODULE).rms_norm(x, w, eps=1e-6)
    assert_close(got, F.rms_norm(x, (16,), w, eps=1e-6), mistakes=golden.ref.rms_mistakes(x, w, 1e-6))


def test_rms_norm_with_unit_weight_has_unit_rms(impl, gen):
    x = randn(3, 128, generator=gen, scale=5.0)
    y = impl(MODULE).rms_norm(x, torch.ones(128), eps=1e-6)
    assert_close(y.pow(2).mean(-1), torch.ones(3), name=("mean square of the output", "输出的均方值"), rtol=1e-4, atol=1e-4)


def test_rms_norm_eps_goes_inside_the_square_root(impl, golden):
    """Tiny activations make eps matter: x / sqrt(mean(x^2) + eps), not x / (rms + eps)."""
    x, w = randn(2, 16, generator=golden.gen, scale=3e-3), randn(16, generator=golden.gen)
    got = impl(MODULE).rms_norm(x, w, eps=1e-5)
    assert_close(got, golden.ref.reference_rms_norm(x, w, 1e-5), mistakes=golden.ref.rms_mistakes(x, w, 1e-5))


def test_rms_norm_of_large_fp16_activations_is_computed_in_fp32(impl, golden):
    """|x| ~ 1000 in fp16: x**2 overflows fp16 (max 65504) unless squared in fp32."""
    x = randn(2, 16, dtype=torch.float16, generator=golden.gen, scale=1000.0)
    w = randn(16, dtype=torch.float16, generator=golden.gen)
    got = impl(MODULE).rms_norm(x, w, eps=1e-6)
    assert_close(got, golden.ref.reference_rms_norm(x, w, 1e-6), mistakes=golden.ref.rms_mistakes(x, w, 1e-6))


def test_layer_norm_matches_torch_in_fp32(impl, golden):
    x, w, b = randn(2, 3, 16, generator=golden.gen), randn(16, generator=golden.gen), randn(16, generator=golden.gen)
    got = impl(MODULE).layer_norm(x, w, b, eps=1e-5)
    assert_close(got, F.layer_norm(x, (16,), w, b, eps=1e-5), mistakes=golden.ref.ln_mistakes(x, w, b, 1e-5))
