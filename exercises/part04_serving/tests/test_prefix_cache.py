"""Visible tests for part04_serving.prefix_cache: `pytest exercises/part04_serving -m prefix_cache`.

Small hand-made cases, one rule each; blocks hold 2 tokens."""
import pytest

from infralab.i18n import tr

MODULE = "part04_serving.prefix_cache"


def test_two_prompts_share_the_blocks_of_their_common_prefix(impl):
    c = impl(MODULE).PrefixCache(num_blocks=8, block_size=2)
    a = c.allocate(0, [1, 2, 3, 4, 5])
    b = c.allocate(1, [1, 2, 3, 4, 9, 9])
    assert b[:2] == a[:2], tr("part04.prefix_shared", a=a, b=b)
    assert b[2] != a[2], tr("part04.prefix_third_differs")
    assert [c.ref_count(x) for x in a[:2]] == [2, 2]
    assert c.num_cached_blocks() == 3, tr("part04.prefix_full_only")


def test_a_block_is_keyed_by_the_whole_prefix_it_ends(impl):
    c = impl(MODULE).PrefixCache(num_blocks=8, block_size=2)
    c.allocate(0, [1, 2, 3, 4])
    assert c.match([3, 4]) == [] and c.match([9, 9, 3, 4]) == [], \
        tr("part04.prefix_whole_key")


def test_a_freed_prefix_stays_cached_until_it_is_evicted(impl):
    c = impl(MODULE).PrefixCache(num_blocks=4, block_size=2)
    first = c.allocate(0, [1, 2, 3, 4, 5])
    c.free(0)
    assert c.num_free_blocks() == 4, tr("part04.prefix_all_free")
    assert c.match([1, 2, 3, 4, 6]) == first[:2], tr("part04.prefix_freed_cached")


def test_eviction_takes_the_least_recently_released_block_deepest_first(impl):
    c = impl(MODULE).PrefixCache(num_blocks=4, block_size=2)
    a = c.allocate(0, [1, 2, 3, 4])
    c.free(0)  # releases [1,2,3,4]'s block, then [1,2]'s
    b = c.allocate(1, [5, 6, 7, 8])
    c.free(1)
    assert c.allocate(2, [9, 9]) == [a[1]], tr("part04.prefix_evict_lru")
    assert c.match([1, 2, 3, 4]) == [a[0]] and c.match([5, 6, 7, 8]) == b


def test_unused_blocks_go_before_any_cached_block_is_evicted(impl):
    c = impl(MODULE).PrefixCache(num_blocks=3, block_size=2)
    a = c.allocate(0, [1, 2, 3, 4])
    c.free(0)
    c.allocate(1, [7])
    assert c.match([1, 2, 3, 4]) == a, tr("part04.prefix_unused_first")


def test_a_block_held_by_a_sequence_is_never_evicted(impl):
    c = impl(MODULE).PrefixCache(num_blocks=3, block_size=2)
    c.allocate(0, [1, 2])
    c.free(0)
    c.allocate(1, [1, 2, 3])  # hits [1, 2]: it is held again, no longer evictable
    assert c.num_free_blocks() == 1
    with pytest.raises(MemoryError):
        c.allocate(2, [5, 6, 7])  # 2 blocks needed, 1 free


def test_an_allocation_never_evicts_its_own_hit(impl):
    c = impl(MODULE).PrefixCache(num_blocks=2, block_size=2)
    a = c.allocate(0, [1, 2])
    c.free(0)
    c.allocate(1, [3, 4])
    c.free(1)
    table = c.allocate(2, [1, 2, 5])  # hit [1, 2]; the other block ([3, 4]) is evicted for token 5
    assert table[0] == a[0] and len(set(table)) == 2, tr("part04.prefix_hit_evicted", table=table)


def test_append_caches_a_block_once_it_is_full(impl):
    c = impl(MODULE).PrefixCache(num_blocks=4, block_size=2)
    c.allocate(0, [1, 2, 3])
    table = c.append(0, [9])
    assert c.match([1, 2, 3, 9]) == table and c.num_cached_blocks() == 2
