"""Visible tests for part04_serving.paged_attention: `pytest exercises/part04_serving -m paged_attention`."""
import torch
import torch.nn.functional as F

from infralab.mistakes.part04_serving.paged_attention import make_batch, mistakes, reference
from infralab.testing import assert_close, randn

MODULE = "part04_serving.paged_attention"


def test_one_sequence_in_one_block_equals_dense_attention(impl, gen):
    q = randn(1, 4, 8, generator=gen)
    k_pool, v_pool = randn(3, 4, 4, 8, generator=gen), randn(3, 4, 4, 8, generator=gen)
    block_tables = torch.tensor([[2, -1]], dtype=torch.int32)
    lens = torch.tensor([4], dtype=torch.int32)
    got = impl(MODULE).paged_decode_attention(q, k_pool, v_pool, block_tables, lens)
    k, v = k_pool[2].transpose(0, 1), v_pool[2].transpose(0, 1)  # (H, 4, D)
    expected = F.scaled_dot_product_attention(q[0][:, None], k, v)[:, 0]
    assert_close(got[0], expected, mistakes={label: lambda wrong=wrong: wrong()[0] for label, wrong in
                                             mistakes(q, k_pool, v_pool, block_tables, lens).items()})


def test_only_the_first_context_lens_slots_of_the_last_block_are_read(impl, gen):
    """Lengths 5 and 3 in blocks of 4 end mid-block; the unused slots hold large garbage."""
    q, k_pool, v_pool, tables, lens = make_batch(gen, [5, 3], 4, 4, 4, 8)
    for i, n in enumerate([5, 3]):
        last = tables[i, (n - 1) // 4]
        k_pool[last, n % 4:] = 50.0
        v_pool[last, n % 4:] = 50.0
    got = impl(MODULE).paged_decode_attention(q, k_pool, v_pool, tables, lens)
    assert_close(got, reference(q, k_pool, v_pool, tables, lens), mistakes=mistakes(q, k_pool, v_pool, tables, lens))


def test_four_query_heads_share_two_kv_heads_in_consecutive_pairs(impl, gen):
    """GQA: query heads 0, 1 read KV head 0 and heads 2, 3 read KV head 1 (h // 2, not h % 2)."""
    batch = make_batch(gen, [6, 3], 4, 4, 2, 8)
    got = impl(MODULE).paged_decode_attention(*batch)
    assert_close(got, reference(*batch), mistakes=mistakes(*batch))
