"""Visible tests for part03_kernels.rmsnorm: run `pytest exercises/part03_kernels -m rmsnorm`."""
import torch
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part03_kernels.rmsnorm"


def test_fused_add_rmsnorm_matches_torch(impl, gen):
    x, r, w = randn(4, 96, generator=gen), randn(4, 96, generator=gen), randn(96, generator=gen)
    out, residual = impl(MODULE).fused_add_rmsnorm(x, r, w, eps=1e-6)
    assert_close(residual, x + r, name="residual_out")
    assert_close(out, F.rms_norm(x + r, (96,), w, eps=1e-6), name="out")


def test_fused_add_rmsnorm_width_not_a_power_of_two(impl, gen):
    x, r, w = randn(3, 50, generator=gen), randn(3, 50, generator=gen), torch.ones(50)
    out, _ = impl(MODULE).fused_add_rmsnorm(x, r, w, eps=1e-6)
    assert_close(out.pow(2).mean(-1), torch.ones(3), name="mean square of out with unit weight", rtol=1e-4, atol=1e-4)
