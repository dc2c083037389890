"""Visible tests for part04_serving.paged_kv: `pytest exercises/part04_serving -m paged_kv`."""
import pytest
import torch

from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, assert_equal, expect, randn

MODULE = "part04_serving.paged_kv"


def kv(t, gen, heads=2, dim=4):
    return randn(t, heads, dim, generator=gen), randn(t, heads, dim, generator=gen)


def forked_cache(impl, gen, tokens):
    """A cache of 4 blocks of 4 slots: sequence 0 holds ``tokens`` tokens and sequence 1 is its fork.
    Returns the cache and sequence 0's K."""
    cache = impl(MODULE).PagedKVCache(4, 4, 2, 4)
    cache.add_sequence(0)
    k0, v0 = kv(tokens, gen)
    cache.append(0, k0, v0)
    cache.fork(0, 1)
    return cache, k0


def test_append_fills_blocks_in_order_and_maps_slots(impl, gen):
    cache = impl(MODULE).PagedKVCache(8, 4, 2, 4)
    cache.add_sequence(0)
    k, v = kv(6, gen)
    cache.append(0, k, v)
    table = cache.block_table(0)
    expect(len(table) == 2, "part04.kv.six_tokens_two_blocks", got=len(table))
    expected = torch.tensor([table[i // 4] * 4 + i % 4 for i in range(6)])
    assert_equal(cache.slot_mapping(0), expected, name="slot_mapping")
    got_k, got_v = cache.gather(0)
    assert_close(got_k, k, name="gathered K")
    assert_close(got_v, v, name="gathered V")
    free = cache.num_free_blocks()
    expect(free == 6, "check.value", what="num_free_blocks()", expected=6, got=free)


def test_fork_shares_blocks_without_copying(impl, gen):
    cache = impl(MODULE).PagedKVCache(8, 4, 2, 4)
    cache.add_sequence(0)
    cache.append(0, *kv(5, gen))
    cache.fork(0, 1)
    child, parent = cache.block_table(1), cache.block_table(0)
    expect(child == parent, "check.value_note", what="block_table(1)", expected=parent, got=child,
           note=tr("part04.kv.fork_shares"))
    refs = [cache.ref_count(b) for b in cache.block_table(0)]
    expect(all(r == 2 for r in refs), "check.value", what="[ref_count(b) for b in block_table(0)]",
           expected=[2] * len(refs), got=refs)
    free = cache.num_free_blocks()
    expect(free == 6, "check.value", what="num_free_blocks()", expected=6, got=free)


def test_out_of_blocks_raises_memory_error(impl, gen):
    cache = impl(MODULE).PagedKVCache(2, 4, 2, 4)
    cache.add_sequence(0)
    with pytest.raises(MemoryError):
        cache.append(0, *kv(9, gen))


def test_append_after_forking_a_sequence_shorter_than_one_block_leaves_the_other_intact(impl, gen):
    """A fork of 2 tokens shares one partly filled block: whoever appends first must copy it."""
    cache, k0 = forked_cache(impl, gen, 2)
    needed = cache.blocks_needed(0, 1)
    expect(needed == 1, "check.value_note", what="blocks_needed(0, 1)", expected=1, got=needed,
           note=tr("part04.kv.cow_short_fork_needs_copy"))
    cache.append(0, *kv(1, gen))
    parent = cache.block_table(0)
    expect(parent != cache.block_table(1), "part04.kv.cow_short_fork_skipped", table=parent)
    assert_close(cache.gather(1)[0], k0, name=("the child's K after its parent appended", "父序列追加之后子序列的 K"))


def test_a_full_last_block_stays_shared_and_a_fitting_append_needs_no_free_block(impl, gen):
    cache = impl(MODULE).PagedKVCache(3, 4, 2, 4)
    cache.add_sequence(0)
    cache.append(0, *kv(4, gen))
    cache.fork(0, 1)
    shared = cache.block_table(0)
    cache.append(1, *kv(2, gen))  # a new block; the full shared block is not copied
    table = cache.block_table(1)
    expect(table[0] == shared[0] and cache.ref_count(shared[0]) == 2, "part04.kv.full_block_stays_shared",
           table=table, shared=shared[0], refs=cache.ref_count(shared[0]))
    append_that_fits(cache, 0, 1, gen)  # takes the last free block
    free = cache.num_free_blocks()
    expect(free == 0, "check.value", what="num_free_blocks()", expected=0, got=free)
    needed = cache.blocks_needed(1, 2)
    expect(needed == 0, "part04.kv.fits_last_block", got=needed)
    append_that_fits(cache, 1, 2, gen)


def append_that_fits(cache, seq, t, gen):
    needed, free = cache.blocks_needed(seq, t), cache.num_free_blocks()
    try:
        cache.append(seq, *kv(t, gen))
    except MemoryError:
        raise Mismatch(tr("part04.kv.refused_with_room", tokens=t, needed=needed, free=free)) from None


def test_freeing_a_fork_keeps_the_blocks_its_parent_still_reads(impl, gen):
    """Parent and child share 2 blocks (ref count 2): freeing the child only drops the counts to 1."""
    cache, k0 = forked_cache(impl, gen, 8)
    cache.free(1)
    shared = cache.block_table(0)
    assert_equal(cache.num_free_blocks(), 2, name=("free blocks after freeing the fork (4 blocks, 2 still the parent's)",
                                                   "释放分叉后的空闲块（4 个块，其中 2 个仍属于父序列）"),
                 mistakes={("free() returned shared blocks to the free list without looking at their ref counts",
                            "free() 不看引用计数就把共享的块放回了空闲列表"): 4})
    assert_equal([cache.ref_count(b) for b in shared], [1, 1], name=("ref counts of the parent's blocks", "父序列各块的引用计数"))
    cache.add_sequence(2)
    cache.append(2, *kv(8, gen))  # takes the 2 free blocks; must not overwrite the parent's
    assert_close(cache.gather(0)[0], k0, name=("the parent's K after the fork was freed and another sequence appended",
                                               "分叉被释放且另一序列追加之后父序列的 K"))
