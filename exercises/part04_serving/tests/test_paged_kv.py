"""Visible tests for part04_serving.paged_kv: `pytest exercises/part04_serving -m paged_kv`."""
import pytest
import torch

from infralab.testing import assert_close, assert_equal, randn

MODULE = "part04_serving.paged_kv"


def kv(t, gen, heads=2, dim=4):
    return randn(t, heads, dim, generator=gen), randn(t, heads, dim, generator=gen)


def test_append_fills_blocks_in_order_and_maps_slots(impl, gen):
    cache = impl(MODULE).PagedKVCache(8, 4, 2, 4)
    cache.add_sequence(0)
    k, v = kv(6, gen)
    cache.append(0, k, v)
    table = cache.block_table(0)
    assert len(table) == 2, f"6 tokens in blocks of 4 need 2 blocks, the table has {len(table)}"
    expected = torch.tensor([table[i // 4] * 4 + i % 4 for i in range(6)])
    assert_equal(cache.slot_mapping(0), expected, name="slot_mapping")
    got_k, got_v = cache.gather(0)
    assert_close(got_k, k, name="gathered K")
    assert_close(got_v, v, name="gathered V")
    assert cache.num_free_blocks() == 6


def test_fork_shares_blocks_without_copying(impl, gen):
    cache = impl(MODULE).PagedKVCache(8, 4, 2, 4)
    cache.add_sequence(0)
    cache.append(0, *kv(5, gen))
    cache.fork(0, 1)
    assert cache.block_table(1) == cache.block_table(0)
    assert all(cache.ref_count(b) == 2 for b in cache.block_table(0))
    assert cache.num_free_blocks() == 6


def test_out_of_blocks_raises_memory_error(impl, gen):
    cache = impl(MODULE).PagedKVCache(2, 4, 2, 4)
    cache.add_sequence(0)
    with pytest.raises(MemoryError):
        cache.append(0, *kv(9, gen))
