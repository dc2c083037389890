"""Visible tests for part04_serving.paged_attention: `pytest exercises/part04_serving -m paged_attention`."""
import torch
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part04_serving.paged_attention"


def test_one_sequence_in_one_block_equals_dense_attention(impl, gen):
    q = randn(1, 4, 8, generator=gen)
    k_pool, v_pool = randn(3, 4, 4, 8, generator=gen), randn(3, 4, 4, 8, generator=gen)
    block_tables = torch.tensor([[2, -1]], dtype=torch.int32)
    got = impl(MODULE).paged_decode_attention(q, k_pool, v_pool, block_tables, torch.tensor([4], dtype=torch.int32))
    k, v = k_pool[2].transpose(0, 1), v_pool[2].transpose(0, 1)  # (H, 4, D)
    expected = F.scaled_dot_product_attention(q[0][:, None], k, v)[:, 0]
    assert_close(got[0], expected)
