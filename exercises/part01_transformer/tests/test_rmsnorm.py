"""Visible tests for part01_transformer.rmsnorm: run `pytest exercises/part01_transformer -m rmsnorm`."""
import torch
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part01_transformer.rmsnorm"


def test_rms_norm_matches_torch_in_fp32(impl, gen):
    x, w = randn(4, 7, 64, generator=gen), randn(64, generator=gen)
    got = impl(MODULE).rms_norm(x, w, eps=1e-6)
    assert_close(got, F.rms_norm(x, (64,), w, eps=1e-6))


def test_rms_norm_with_unit_weight_has_unit_rms(impl, gen):
    x = randn(3, 128, generator=gen, scale=5.0)
    y = impl(MODULE).rms_norm(x, torch.ones(128), eps=1e-6)
    assert_close(y.pow(2).mean(-1), torch.ones(3), name="mean square of the output", rtol=1e-4, atol=1e-4)


def test_layer_norm_matches_torch_in_fp32(impl, gen):
    x, w, b = randn(2, 5, 32, generator=gen), randn(32, generator=gen), randn(32, generator=gen)
    got = impl(MODULE).layer_norm(x, w, b, eps=1e-5)
    assert_close(got, F.layer_norm(x, (32,), w, b, eps=1e-5))
