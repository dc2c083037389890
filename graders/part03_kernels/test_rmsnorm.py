"""Hidden tests for part03_kernels.rmsnorm (fused residual add + RMSNorm forward)."""
import pytest
import torch
import torch.nn.functional as F

from infralab.testing import assert_all_written, assert_close, expect, randn

MODULE = "part03_kernels.rmsnorm"


def reference(x, r, w, eps):
    """fp32 sum, fp32 normalisation and weight, one rounding at the end."""
    s = x.float() + r.float()
    return (F.rms_norm(s, (s.shape[-1],), eps=eps) * w.float()).to(x.dtype), s.to(x.dtype)


def out_mistakes(x, r, w, eps):
    s, wf, d = x.float() + r.float(), w.float(), x.shape[-1]
    block = 1 << (d - 1).bit_length()
    half = (x + r) if x.dtype == torch.float16 else None
    return {
        ("mean of squares divided by the padded BLOCK_SIZE instead of the row width D",
         "平方均值除以了填充后的 BLOCK_SIZE，而不是行宽 D"):
            lambda: (s * torch.rsqrt(s.pow(2).sum(-1, keepdim=True) / block + eps) * wf).to(x.dtype),
        ("eps added outside the square root (s / (rms + eps))", "eps 加在了平方根外面（s / (rms + eps)）"):
            lambda: (s / (s.pow(2).mean(-1, keepdim=True).sqrt() + eps) * wf).to(x.dtype),
        ("normalised x alone: the residual was not added before the norm", "只对 x 做了归一化：归一化之前没有加上残差"):
            lambda: (F.rms_norm(x.float(), (d,), eps=eps) * wf).to(x.dtype),
        ("squares summed in fp16, which overflows (compute in fp32)", "平方在 fp16 中求和，发生溢出（应在 fp32 中计算）"):
            lambda: (half.float() * torch.rsqrt((half * half).sum(-1, keepdim=True).float() / d + eps)
                     * wf).to(x.dtype),
    }


def check(impl, x, r, w, eps):
    out, residual = impl(MODULE).fused_add_rmsnorm(x, r, w, eps=eps)
    want_out, want_res = reference(x, r, w, eps)
    assert_all_written(residual, name="residual_out")
    assert_close(residual, want_res, name="residual_out (x + residual)")
    assert_all_written(out, name="out")
    assert_close(out, want_out, name="out", mistakes=out_mistakes(x, r, w, eps))


@pytest.mark.weight(3)
@pytest.mark.parametrize("shape", [(2, 3, 100), (5, 257), (1, 64)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_fused_add_rmsnorm_matches_reference(impl, gen, shape, dtype):
    x, r = randn(*shape, dtype=dtype, generator=gen), randn(*shape, dtype=dtype, generator=gen)
    w = randn(shape[-1], dtype=dtype, generator=gen)
    check(impl, x, r, w, 1e-6)


@pytest.mark.weight(2)
def test_fused_add_rmsnorm_eps_is_inside_the_square_root(impl, gen):
    """Tiny activations make eps matter: sqrt(ms + eps) and sqrt(ms) + eps differ a lot."""
    x, r = randn(4, 80, generator=gen, scale=2e-3), randn(4, 80, generator=gen, scale=2e-3)
    check(impl, x, r, randn(80, generator=gen), 1e-5)


@pytest.mark.weight(2)
def test_fused_add_rmsnorm_fp16_large_activations_do_not_overflow(impl, gen):
    """|s| ~ 300 in fp16: s * s reaches 9e4 > 65504 unless squared in fp32."""
    x = randn(3, 128, dtype=torch.float16, generator=gen, scale=300.0)
    r = randn(3, 128, dtype=torch.float16, generator=gen, scale=100.0)
    check(impl, x, r, randn(128, dtype=torch.float16, generator=gen), 1e-6)


def test_fused_add_rmsnorm_leaves_its_inputs_unchanged(impl, gen):
    x, r, w = randn(3, 40, generator=gen), randn(3, 40, generator=gen), randn(40, generator=gen)
    before = [t.clone() for t in (x, r, w)]
    impl(MODULE).fused_add_rmsnorm(x, r, w, eps=1e-6)
    expect(all(torch.equal(a, b) for a, b in zip((x, r, w), before)), "check.modified_input", name="fused_add_rmsnorm")


def test_fused_add_rmsnorm_rejects_a_weight_of_the_wrong_width(impl, gen):
    with pytest.raises(ValueError):
        impl(MODULE).fused_add_rmsnorm(randn(2, 8, generator=gen), randn(2, 8, generator=gen), randn(9, generator=gen))


@pytest.mark.parametrize("differs", ["dtype", "shape"])
def test_fused_add_rmsnorm_rejects_a_residual_unlike_x(impl, gen, differs):
    """The docstring's ValueError, each way alone: a residual of another dtype (same shape), or of another shape
    (same dtype). A check that needs both to differ passed every other hidden test (mutation run of 2026-12-07)."""
    x = randn(2, 8, generator=gen)
    r = randn(2, 8, dtype=torch.float16, generator=gen) if differs == "dtype" else randn(3, 8, generator=gen)
    with pytest.raises(ValueError):
        impl(MODULE).fused_add_rmsnorm(x, r, randn(8, generator=gen))


@pytest.mark.gpu
def test_fused_add_rmsnorm_bf16_large_on_gpu(impl, gen):
    shape = (4096, 4096 + 64)
    x, r = randn(*shape, dtype=torch.bfloat16, generator=gen, device="cuda"), \
        randn(*shape, dtype=torch.bfloat16, generator=gen, device="cuda")
    check(impl, x, r, randn(shape[-1], dtype=torch.bfloat16, generator=gen, device="cuda"), 1e-6)
