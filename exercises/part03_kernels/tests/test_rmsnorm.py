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
    assert_close(out.pow(2).mean(-1), torch.ones(3), name=("mean square of out with unit weight",
                                                           "单位权重时 out 的均方值"), rtol=1e-4, atol=1e-4)


def rmsnorm_in_fp32(s, w, eps):
    """s / sqrt(mean(s^2) + eps) * w in fp32, cast to s's dtype at the end."""
    sf = s.float()
    return (sf * torch.rsqrt(sf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(s.dtype)


def test_fused_add_rmsnorm_eps_goes_inside_the_square_root(impl, gen):
    """Tiny activations make eps matter: s / sqrt(mean(s^2) + eps), not s / (rms + eps)."""
    x, r = randn(2, 32, generator=gen, scale=3e-3), randn(2, 32, generator=gen, scale=3e-3)
    w = randn(32, generator=gen)
    out, _ = impl(MODULE).fused_add_rmsnorm(x, r, w, eps=1e-5)
    s = x + r
    assert_close(out, rmsnorm_in_fp32(s, w, 1e-5), name="out",
                 mistakes={("eps added outside the square root (s / (rms + eps))",
                            "eps 加在了平方根外面（s / (rms + eps)）"):
                           s / (s.pow(2).mean(-1, keepdim=True).sqrt() + 1e-5) * w})


def test_fused_add_rmsnorm_of_large_fp16_activations_squares_in_fp32(impl, gen):
    """|s| ~ 1000 in fp16: s**2 overflows fp16 (max 65504) unless squared and summed in fp32."""
    x = randn(2, 32, dtype=torch.float16, generator=gen, scale=1000.0)
    r = randn(2, 32, dtype=torch.float16, generator=gen, scale=1000.0)
    w = randn(32, dtype=torch.float16, generator=gen)
    out, residual = impl(MODULE).fused_add_rmsnorm(x, r, w, eps=1e-6)
    s = x + r
    assert_close(residual, s, name="residual_out")
    in_fp16 = (s.float() * torch.rsqrt((s * s).float().sum(-1, keepdim=True) / 32 + 1e-6) * w.float()).half()
    assert_close(out, rmsnorm_in_fp32(s, w, 1e-6), name="out",
                 mistakes={("the squares were summed in fp16, so s**2 overflowed (cast to fp32 first)",
                            "平方在 fp16 中求和，s**2 溢出了（应先转为 fp32）"): in_fp16})
