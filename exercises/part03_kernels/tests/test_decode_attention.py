"""Visible tests for part03_kernels.decode_attention: run `pytest exercises/part03_kernels -m decode_attention`."""
import torch
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part03_kernels.decode_attention"


def test_decode_attention_one_full_sequence_matches_sdpa(impl, gen):
    """One sequence using its whole cache; GQA: 4 query heads share each of 2 kv heads."""
    q, k, v = randn(1, 8, 32, generator=gen), randn(1, 2, 40, 32, generator=gen), randn(1, 2, 40, 32, generator=gen)
    o, lse = impl(MODULE).decode_attention(q, k, v, torch.tensor([40]), num_splits=3)
    kk, vv = k.repeat_interleave(4, dim=1), v.repeat_interleave(4, dim=1)  # (1, 8, 40, 32)
    expected = F.scaled_dot_product_attention(q[:, :, None], kk, vv)[:, :, 0]
    assert_close(o, expected, name="o")
    assert_close(lse, torch.logsumexp(q[:, :, None] @ kk.transpose(-1, -2) / 32 ** 0.5, -1)[:, :, 0], name="lse")
