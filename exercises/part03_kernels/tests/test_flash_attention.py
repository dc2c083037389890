"""Visible tests for part03_kernels.flash_attention: run `pytest exercises/part03_kernels -m flash_attention`."""
import pytest
import torch
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part03_kernels.flash_attention"


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_matches_sdpa(impl, gen, causal):
    q, k, v = (randn(1, 2, 40, 32, generator=gen) for _ in range(3))
    o, lse = impl(MODULE).flash_attention(q, k, v, causal=causal)
    assert_close(o, F.scaled_dot_product_attention(q, k, v, is_causal=causal), name="o")
    assert lse.shape == (1, 2, 40) and lse.dtype == torch.float32, f"lse: got {tuple(lse.shape)} {lse.dtype}"


def test_flash_attention_lse_is_the_log_sum_exp_of_the_scores(impl, gen):
    q, k, v = (randn(1, 1, 24, 16, generator=gen) for _ in range(3))
    _, lse = impl(MODULE).flash_attention(q, k, v)
    scores = q @ k.transpose(-1, -2) / 16 ** 0.5
    assert_close(lse, torch.logsumexp(scores, dim=-1), name="lse")
