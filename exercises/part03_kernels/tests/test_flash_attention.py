"""Visible tests for part03_kernels.flash_attention: run `pytest exercises/part03_kernels -m flash_attention`."""
import pytest
import torch
import torch.nn.functional as F

from infralab.testing import assert_close, expect, randn

MODULE = "part03_kernels.flash_attention"


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_matches_sdpa(impl, gen, causal):
    q, k, v = (randn(1, 2, 40, 32, generator=gen) for _ in range(3))
    o, lse = impl(MODULE).flash_attention(q, k, v, causal=causal)
    assert_close(o, F.scaled_dot_product_attention(q, k, v, is_causal=causal), name="o")
    expect(lse.shape == (1, 2, 40) and lse.dtype == torch.float32, "part03.lse_shape", shape=tuple(lse.shape),
           dtype=lse.dtype)


def test_flash_attention_lse_is_the_log_sum_exp_of_the_scores(impl, gen):
    q, k, v = (randn(1, 1, 24, 16, generator=gen) for _ in range(3))
    _, lse = impl(MODULE).flash_attention(q, k, v)
    scores = q @ k.transpose(-1, -2) / 16 ** 0.5
    assert_close(lse, torch.logsumexp(scores, dim=-1), name="lse")


def test_flash_attention_with_k_and_v_in_different_layouts(impl, gen):
    """K as a (B, H, S, D) view of a (B, S, H, D) buffer, V contiguous: each has its own strides."""
    q, v = randn(1, 2, 24, 16, generator=gen), randn(1, 2, 40, 16, generator=gen)
    k = randn(1, 40, 2, 16, generator=gen).transpose(1, 2)
    o, _ = impl(MODULE).flash_attention(q, k, v)
    v_as_k = torch.as_strided(v, v.shape, k.stride())
    assert_close(o, F.scaled_dot_product_attention(q, k, v), name="o",
                 mistakes={("V addressed with K's strides (use stride_vb/vh/vn for V)",
                            "用 K 的步长寻址 V（V 应使用 stride_vb/vh/vn）"):
                           lambda: F.scaled_dot_product_attention(q, k, v_as_k)})


def test_causal_mask_is_aligned_bottom_right_when_keys_outnumber_queries(impl, gen):
    """8 new queries after 16 cached keys: query i sits at position 16 + i and sees keys j <= 16 + i."""
    q, k, v = randn(1, 2, 8, 16, generator=gen), randn(1, 2, 24, 16, generator=gen), randn(1, 2, 24, 16, generator=gen)
    o, _ = impl(MODULE).flash_attention(q, k, v, causal=True)
    bottom_right = torch.ones(8, 24, dtype=torch.bool).tril(diagonal=24 - 8)
    assert_close(o, F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right), name="o",
                 mistakes={("causal mask aligned top-left (j <= i) instead of bottom-right (j <= i + S_k - S_q)",
                            "因果掩码按左上角对齐（j <= i），应按右下角对齐（j <= i + S_k - S_q）"):
                           lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)})
