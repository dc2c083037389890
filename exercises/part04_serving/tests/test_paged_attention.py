"""Visible tests for part04_serving.paged_attention: `pytest exercises/part04_serving -m paged_attention`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import torch
import torch.nn.functional as F

from infralab.testing import assert_close, randn

MODULE = "part04_serving.paged_attention"
POOL_BLOCKS = 8


def scattered_batch(gen, lens, hq, hkv, d=8, block_size=4):
    """(q, k_pool, v_pool, block_tables, context_lens): each sequence's blocks are taken in a random
    order from a pool of POOL_BLOCKS; unused table entries are -1."""
    order = torch.randperm(POOL_BLOCKS, generator=gen).to(torch.int32)
    tables = torch.full((len(lens), POOL_BLOCKS // 2), -1, dtype=torch.int32)
    taken = 0
    for i, n in enumerate(lens):
        blocks = -(-n // block_size)
        tables[i, :blocks], taken = order[taken:taken + blocks], taken + blocks
    k_pool, v_pool = (randn(POOL_BLOCKS, block_size, hkv, d, generator=gen) for _ in range(2))
    return randn(len(lens), hq, d, generator=gen), k_pool, v_pool, tables, torch.tensor(lens, dtype=torch.int32)


def test_one_sequence_in_one_block_equals_dense_attention(impl, golden):
    q = randn(1, 4, 8, generator=golden.gen)
    k_pool, v_pool = randn(3, 4, 4, 8, generator=golden.gen), randn(3, 4, 4, 8, generator=golden.gen)
    block_tables = torch.tensor([[2, -1]], dtype=torch.int32)
    lens = torch.tensor([4], dtype=torch.int32)
    got = impl(MODULE).paged_decode_attention(q, k_pool, v_pool, block_tables, lens)
    k, v = k_pool[2].transpose(0, 1), v_pool[2].transpose(0, 1)  # (H, 4, D)
    expected = F.scaled_dot_product_attention(q[0][:, None], k, v)[:, 0]
    wrong = golden.ref.mistakes(q, k_pool, v_pool, block_tables, lens)
    assert_close(got[0], expected, mistakes={label: out[0] for label, out in wrong.items()})


def test_only_the_first_context_lens_slots_of_the_last_block_are_read(impl, golden):
    """Lengths 5 and 3 in blocks of 4 end mid-block; the unused slots hold large garbage."""
    q, k_pool, v_pool, tables, lens = scattered_batch(golden.gen, [5, 3], 4, 4)
    for i, n in enumerate([5, 3]):
        last = tables[i, (n - 1) // 4]
        k_pool[last, n % 4:] = 50.0
        v_pool[last, n % 4:] = 50.0
    got = impl(MODULE).paged_decode_attention(q, k_pool, v_pool, tables, lens)
    assert_close(got, golden.ref.reference(q, k_pool, v_pool, tables, lens),
                 mistakes=golden.ref.mistakes(q, k_pool, v_pool, tables, lens))


def test_four_query_heads_share_two_kv_heads_in_consecutive_pairs(impl, golden):
    """GQA: query heads 0, 1 read KV head 0 and heads 2, 3 read KV head 1 (h // 2, not h % 2)."""
    batch = scattered_batch(golden.gen, [6, 3], 4, 2)
    got = impl(MODULE).paged_decode_attention(*batch)
    assert_close(got, golden.ref.reference(*batch), mistakes=golden.ref.mistakes(*batch))
