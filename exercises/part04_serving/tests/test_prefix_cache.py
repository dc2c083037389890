"""Visible tests for part04_serving.prefix_cache: `pytest exercises/part04_serving -m prefix_cache`.

Small hand-made cases, one rule each; blocks hold 2 tokens."""
import pytest

from infralab.i18n import tr
from infralab.testing import expect

MODULE = "part04_serving.prefix_cache"


def test_two_prompts_share_the_blocks_of_their_common_prefix(impl):
    c = impl(MODULE).PrefixCache(num_blocks=8, block_size=2)
    a = c.allocate(0, [1, 2, 3, 4, 5])
    b = c.allocate(1, [1, 2, 3, 4, 9, 9])
    expect(b[:2] == a[:2], "part04.prefix_shared", a=a, b=b)
    expect(b[2] != a[2], "check.value_note", what="allocate(1, ...)[2]", expected=f"!= {a[2]}", got=b[2],
           note=tr("part04.prefix_third_differs"))
    refs = [c.ref_count(x) for x in a[:2]]
    expect(refs == [2, 2], "check.value", what="[ref_count(x) for x in a[:2]]", expected=[2, 2], got=refs)
    cached = c.num_cached_blocks()
    expect(cached == 3, "check.value_note", what="num_cached_blocks()", expected=3, got=cached,
           note=tr("part04.prefix_full_only"))


def test_a_block_is_keyed_by_the_whole_prefix_it_ends(impl):
    c = impl(MODULE).PrefixCache(num_blocks=8, block_size=2)
    c.allocate(0, [1, 2, 3, 4])
    got = (c.match([3, 4]), c.match([9, 9, 3, 4]))
    expect(got == ([], []), "check.value_note", what="(match([3, 4]), match([9, 9, 3, 4]))", expected=([], []),
           got=got, note=tr("part04.prefix_whole_key"))


def test_a_freed_prefix_stays_cached_until_it_is_evicted(impl):
    c = impl(MODULE).PrefixCache(num_blocks=4, block_size=2)
    first = c.allocate(0, [1, 2, 3, 4, 5])
    c.free(0)
    free = c.num_free_blocks()
    expect(free == 4, "check.value_note", what="num_free_blocks()", expected=4, got=free,
           note=tr("part04.prefix_all_free"))
    got = c.match([1, 2, 3, 4, 6])
    expect(got == first[:2], "check.value_note", what="match([1, 2, 3, 4, 6])", expected=first[:2], got=got,
           note=tr("part04.prefix_freed_cached"))


def test_eviction_takes_the_least_recently_released_block_deepest_first(impl):
    c = impl(MODULE).PrefixCache(num_blocks=4, block_size=2)
    a = c.allocate(0, [1, 2, 3, 4])
    c.free(0)  # releases [1,2,3,4]'s block, then [1,2]'s
    b = c.allocate(1, [5, 6, 7, 8])
    c.free(1)
    got = c.allocate(2, [9, 9])
    expect(got == [a[1]], "check.value_note", what="allocate(2, [9, 9])", expected=[a[1]], got=got,
           note=tr("part04.prefix_evict_lru"))
    got = (c.match([1, 2, 3, 4]), c.match([5, 6, 7, 8]))
    expect(got == ([a[0]], b), "check.value", what="(match([1, 2, 3, 4]), match([5, 6, 7, 8]))",
           expected=([a[0]], b), got=got)


def test_unused_blocks_go_before_any_cached_block_is_evicted(impl):
    c = impl(MODULE).PrefixCache(num_blocks=3, block_size=2)
    a = c.allocate(0, [1, 2, 3, 4])
    c.free(0)
    c.allocate(1, [7])
    got = c.match([1, 2, 3, 4])
    expect(got == a, "check.value_note", what="match([1, 2, 3, 4])", expected=a, got=got,
           note=tr("part04.prefix_unused_first"))


def test_a_block_held_by_a_sequence_is_never_evicted(impl):
    c = impl(MODULE).PrefixCache(num_blocks=3, block_size=2)
    c.allocate(0, [1, 2])
    c.free(0)
    c.allocate(1, [1, 2, 3])  # hits [1, 2]: it is held again, no longer evictable
    free = c.num_free_blocks()
    expect(free == 1, "check.value", what="num_free_blocks()", expected=1, got=free)
    with pytest.raises(MemoryError):
        c.allocate(2, [5, 6, 7])  # 2 blocks needed, 1 free


def test_an_allocation_never_evicts_its_own_hit(impl):
    c = impl(MODULE).PrefixCache(num_blocks=2, block_size=2)
    a = c.allocate(0, [1, 2])
    c.free(0)
    c.allocate(1, [3, 4])
    c.free(1)
    table = c.allocate(2, [1, 2, 5])  # hit [1, 2]; the other block ([3, 4]) is evicted for token 5
    expect(table[0] == a[0] and len(set(table)) == 2, "part04.prefix_hit_evicted", table=table)


def test_append_caches_a_block_once_it_is_full(impl):
    c = impl(MODULE).PrefixCache(num_blocks=4, block_size=2)
    c.allocate(0, [1, 2, 3])
    table = c.append(0, [9])
    got = (c.match([1, 2, 3, 9]), c.num_cached_blocks())
    expect(got == (table, 2), "check.value", what="(match([1, 2, 3, 9]), num_cached_blocks())", expected=(table, 2),
           got=got)
