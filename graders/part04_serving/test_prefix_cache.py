"""Hidden tests for part04_serving.prefix_cache: hand-made cases for each rule, then a hypothesis
state machine of allocations (prompts drawn to share prefixes), appends, frees and queries against
a brute-force model (infralab.mistakes.part04_serving.prefix_cache). Block ids are the answer's
own; what must agree is which positions share a block, which prefixes are cached, the counts, and
that every block read through a hit holds exactly the tokens of the query's prefix."""
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from infralab.i18n import localized, tr
from infralab.mistakes.part04_serving import run_machine
from infralab.mistakes.part04_serving.prefix_cache import (EVICTED_REFERENCED, EVICTS_WHILE_UNUSED, FORGETS_ON_FREE,
                                                           KEY_IGNORES_PREFIX, PARENT_FIRST, Model)
from infralab.testing import Mismatch

MODULE = "part04_serving.prefix_cache"


# Where a check is made and what it reads, in both languages (code stays as written)
TWO_PROMPTS_SHARING_4_TOKENS = ('two prompts sharing 4 tokens', '两个共享 4 个 token 的提示')
THE_SHARED_BLOCKS = ('the shared blocks', '共享的块')
THE_THIRD_BLOCKS_DIFFER = ('the third blocks differ', '第三个块不同')
REF_COUNTS_OF_THE_SHARED_BLOCKS = ('ref counts of the shared blocks', '各共享块的引用计数')
AFTER_CACHING_1_2_3_4 = ('after caching [1, 2, 3, 4]', '缓存 [1, 2, 3, 4] 之后')
ALLOCATING_3_4_1_2 = ('allocating [3, 4, 1, 2]', '分配 [3, 4, 1, 2] 时')
REF_COUNTS = ('ref counts', '引用计数')
AFTER_FREE = ('after free', '释放之后')
ALLOCATING_AGAIN = ('allocating again', '再次分配时')
THE_FIRST_TWO_BLOCKS = ('the first two blocks', '前两个块')
A_AND_B_FREED = ('A and B freed', 'A 与 B 释放后')
NEEDS_ONE_A_FREED_FIRST = ('one block needed, A released before B', '需要一个块、A 先于 B 释放时')
THE_BLOCK_TAKEN = ('the block taken', '被取走的块')
AFTER_EVICTING_A_S_2ND_BLOCK = ("after evicting A's 2nd block", '淘汰 A 的第 2 个块之后')
A_FREED = ('A freed', 'A 释放后')
ONE_UNUSED_BLOCK_LEFT = ('one unused block left', '只剩一个未使用的块时')
ALLOCATING_1_2_5 = ('allocating [1, 2, 5]', '分配 [1, 2, 5] 时')
BLOCK_TABLE = ('block table', '块表')
B_HOLDS_2_BLOCKS = ('B holds 2 blocks', 'B 占用 2 个块时')
PARTIAL_BLOCK = ('partial block', '未填满的块')
AFTER_APPEND = ('after append', '追加之后')
A_POOL_OF_1_BLOCK_OF_1_TOKEN = ('a pool of 1 block of 1 token', '只有 1 个块、每块 1 个 token 的池')
A_NEW_CACHE = ('a new cache', '新建的缓存')
REFERENCE_COUNTS = ('reference counts', '引用计数')
AFTER_A_FAILED_ALLOCATION = ('after a failed allocation', '一次分配失败之后')
REF_COUNT_OF_THE_SHARED_BLOCK = ('ref count of the shared block', '共享块的引用计数')
AFTER_A_FAILED_APPEND = ('after a failed append', '一次追加失败之后')


def expect(where, what, got, expected, diagnosis=None):
    """``where`` and ``what``: code as written (language-neutral) or an (english, chinese) pair."""
    __tracebackhide__ = True  # the student sees the message, not this helper
    where, what = localized(where), localized(what)
    if got != expected:
        raise Mismatch(tr("part04.prefix_trace", where=where, what=what, got=got, expected=expected), diagnosis)


# ---------------------------------------------------------------- hand-made cases

def test_a_shared_prefix_is_shared_and_the_rest_is_private(impl):
    c = impl(MODULE).PrefixCache(8, 2)
    a = c.allocate(0, [1, 2, 3, 4, 5])
    b = c.allocate(1, [1, 2, 3, 4, 9, 9])
    expect(TWO_PROMPTS_SHARING_4_TOKENS, THE_SHARED_BLOCKS, b[:2], a[:2])
    expect(TWO_PROMPTS_SHARING_4_TOKENS, THE_THIRD_BLOCKS_DIFFER, b[2] != a[2], True)
    expect(TWO_PROMPTS_SHARING_4_TOKENS, REF_COUNTS_OF_THE_SHARED_BLOCKS, [c.ref_count(x) for x in a[:2]], [2, 2])
    expect(TWO_PROMPTS_SHARING_4_TOKENS, "num_cached_blocks()", c.num_cached_blocks(), 3)


def test_the_key_is_the_whole_prefix_not_the_block_alone(impl):
    c = impl(MODULE).PrefixCache(8, 2)
    c.allocate(0, [1, 2, 3, 4])
    expect(AFTER_CACHING_1_2_3_4, "match([9, 9, 3, 4])", c.match([9, 9, 3, 4]), [], KEY_IGNORES_PREFIX)
    expect(AFTER_CACHING_1_2_3_4, "match([3, 4, 5])", c.match([3, 4, 5]), [], KEY_IGNORES_PREFIX)
    table = c.allocate(1, [3, 4, 1, 2])
    expect(ALLOCATING_3_4_1_2, REF_COUNTS, [c.ref_count(x) for x in table], [1, 1], KEY_IGNORES_PREFIX)


def test_a_freed_prefix_stays_cached_and_is_hit_again(impl):
    c = impl(MODULE).PrefixCache(4, 2)
    first = c.allocate(0, [1, 2, 3, 4, 5])
    c.free(0)
    expect(AFTER_FREE, "num_free_blocks()", c.num_free_blocks(), 4)
    expect(AFTER_FREE, "match([1, 2, 3, 4, 6])", c.match([1, 2, 3, 4, 6]), first[:2], FORGETS_ON_FREE)
    again = c.allocate(1, [1, 2, 3, 4, 6])
    expect(ALLOCATING_AGAIN, THE_FIRST_TWO_BLOCKS, again[:2], first[:2], FORGETS_ON_FREE)


def test_eviction_takes_unused_blocks_first_then_the_least_recently_used(impl):
    """4 blocks of 2. A = [1,2,3,4] then B = [5,6,7,8] are cached and freed (A's release is older); they
    hold all 4 blocks, so C = [9,9] must evict: A's last block ([1,2,3,4]) goes first (least recently
    released, and free releases last to first), and A's first block stays cached."""
    c = impl(MODULE).PrefixCache(4, 2)
    a = c.allocate(0, [1, 2, 3, 4])
    c.free(0)
    b = c.allocate(1, [5, 6, 7, 8])
    c.free(1)
    expect(A_AND_B_FREED, "num_cached_blocks()", c.num_cached_blocks(), 4, FORGETS_ON_FREE)
    evicted = c.allocate(2, [9, 9])
    expect(NEEDS_ONE_A_FREED_FIRST, THE_BLOCK_TAKEN, evicted, [a[1]],
           PARENT_FIRST if evicted == [a[0]] else None)
    expect(AFTER_EVICTING_A_S_2ND_BLOCK, "match(A)", c.match([1, 2, 3, 4]), [a[0]])
    expect(AFTER_EVICTING_A_S_2ND_BLOCK, "match(B)", c.match([5, 6, 7, 8]), b)


def test_an_unused_block_is_taken_before_a_cached_one_is_evicted(impl):
    c = impl(MODULE).PrefixCache(3, 2)
    a = c.allocate(0, [1, 2, 3, 4])
    c.free(0)
    expect(A_FREED, "num_cached_blocks()", c.num_cached_blocks(), 2, FORGETS_ON_FREE)
    c.allocate(1, [7])
    expect(ONE_UNUSED_BLOCK_LEFT, "match([1, 2, 3, 4])", c.match([1, 2, 3, 4]), a, EVICTS_WHILE_UNUSED)


def test_a_hit_is_never_evicted_for_the_same_allocation(impl):
    """2 blocks of 2: [1,2] is cached and unreferenced, [3,4] too. Allocating [1,2,5] hits [1,2] and
    needs 1 more block: it must evict [3,4], not its own hit."""
    c = impl(MODULE).PrefixCache(2, 2)
    a = c.allocate(0, [1, 2])
    c.free(0)
    c.allocate(1, [3, 4])
    c.free(1)
    table = c.allocate(2, [1, 2, 5])
    expect(ALLOCATING_1_2_5, BLOCK_TABLE, [table[0], len(set(table))], [a[0], 2], EVICTED_REFERENCED)
    expect(ALLOCATING_1_2_5, REF_COUNTS, [c.ref_count(x) for x in table], [1, 1], EVICTED_REFERENCED)


def test_a_hit_leaves_the_lru_order(impl):
    """3 blocks of 2. [1,2] is cached and freed; B = [1,2,3] hits it (holds it again) and takes an unused
    block. One block is free now: C = [5,6,7] needs 2 and must be refused; evicting B's hit block,
    still in the LRU order, would hand out a block B holds."""
    c = impl(MODULE).PrefixCache(3, 2)
    c.allocate(0, [1, 2])
    c.free(0)
    c.allocate(1, [1, 2, 3])
    expect(B_HOLDS_2_BLOCKS, "num_free_blocks()", c.num_free_blocks(), 1, EVICTED_REFERENCED)
    try:
        table = c.allocate(2, [5, 6, 7])
    except MemoryError:
        return
    raise Mismatch(tr("part04.prefix_trace", where=localized(("C needs 2 blocks, 1 is free", "C 需要 2 个块，空闲的只有 1 个")),
                      what="allocate(2, [5, 6, 7])",
                      got=table, expected="MemoryError"), EVICTED_REFERENCED)


def test_append_caches_a_block_once_it_is_full(impl):
    c = impl(MODULE).PrefixCache(4, 2)
    c.allocate(0, [1, 2, 3])
    expect(PARTIAL_BLOCK, "match([1, 2, 3, 9])", len(c.match([1, 2, 3, 9])), 1)
    table = c.append(0, [9])
    expect(AFTER_APPEND, "match([1, 2, 3, 9])", c.match([1, 2, 3, 9]), table)
    expect(AFTER_APPEND, "num_cached_blocks()", c.num_cached_blocks(), 2)


def test_errors_are_built_in_and_a_failed_allocation_changes_nothing(impl):
    for sizes in ((0, 2), (2, 0)):
        with pytest.raises(ValueError):
            impl(MODULE).PrefixCache(*sizes)
    expect(A_POOL_OF_1_BLOCK_OF_1_TOKEN, "allocate(0, [5])", impl(MODULE).PrefixCache(1, 1).allocate(0, [5]), [0])
    c = impl(MODULE).PrefixCache(2, 2)
    expect(A_NEW_CACHE, REFERENCE_COUNTS, [c.ref_count(0), c.ref_count(1)], [0, 0])
    c.allocate(0, [1, 2, 3])
    with pytest.raises(ValueError):
        c.allocate(0, [4])
    with pytest.raises(MemoryError):
        c.allocate(1, [1, 2, 5, 6, 7])  # hit [1,2], needs 2 more, 0 free
    expect(AFTER_A_FAILED_ALLOCATION, REF_COUNT_OF_THE_SHARED_BLOCK, c.ref_count(c.block_table(0)[0]), 1)
    expect(AFTER_A_FAILED_ALLOCATION, "num_free_blocks()", c.num_free_blocks(), 0)
    with pytest.raises(MemoryError):
        c.append(0, [4, 5])
    expect(AFTER_A_FAILED_APPEND, "block_table(0)", len(c.block_table(0)), 2)
    with pytest.raises(KeyError):
        c.free(7)


# ---------------------------------------------------------------- the state machine

class PrefixMachine(RuleBasedStateMachine):
    """Prompts over a 3-token alphabet built from earlier prompts (so prefixes repeat), small pools
    (3-7 blocks of 1-3 tokens) that fill up and evict."""

    make = None

    @initialize(num_blocks=st.integers(3, 7), block_size=st.integers(1, 3))
    def start(self, num_blocks, block_size):
        self.c, self.m = type(self).make(num_blocks, block_size), Model(num_blocks, block_size)
        self.bs, self.num_blocks, self.next_id, self.seen = block_size, num_blocks, 0, [[]]
        self.content: dict[int, tuple] = {}  # answer block -> the tokens it holds (the prefix it ends)
        self.ops = []

    def snapshot(self):
        return {"tables": {s: self.c.block_table(s) for s in self.m.tables}, "free": self.c.num_free_blocks(),
                "cached": self.c.num_cached_blocks()}

    def fail(self, what, got, expected, diagnosis=None):
        raise Mismatch(tr("part04.prefix_differs", what=what, got=got, expected=expected, ops=self.ops), diagnosis)

    @rule(base=st.integers(0, 99), keep=st.integers(0, 9), extra=st.lists(st.integers(0, 2), max_size=5))
    def allocate(self, base, keep, extra):
        prefix = self.seen[base % len(self.seen)]
        tokens = prefix[:keep] + extra
        sid, self.next_id = self.next_id, self.next_id + 1
        self.ops.append(("allocate", sid, tokens))
        before_cached = dict(self.m.cached())
        self.act(lambda: self.c.allocate(sid, tokens), lambda: self.m.allocate(sid, tokens), before_cached)
        self.seen.append(tokens)

    @precondition(lambda self: self.m.tables)
    @rule(pick=st.integers(0, 99), extra=st.lists(st.integers(0, 2), min_size=1, max_size=3))
    def append(self, pick, extra):
        sid = sorted(self.m.tables)[pick % len(self.m.tables)]
        self.ops.append(("append", sid, extra))
        self.act(lambda: self.c.append(sid, extra), lambda: self.m.append(sid, extra), dict(self.m.cached()))
        self.seen.append(self.m.tokens.get(sid, []))

    @precondition(lambda self: self.m.tables)
    @rule(pick=st.integers(0, 99))
    def free(self, pick):
        sid = sorted(self.m.tables)[pick % len(self.m.tables)]
        self.ops.append(("free", sid))
        self.c.free(sid)
        self.m.free(sid)
        if self.c.num_cached_blocks() < len(self.m.cached()):
            self.fail("num_cached_blocks() after free", self.c.num_cached_blocks(), len(self.m.cached()),
                      FORGETS_ON_FREE)

    def act(self, answer, model, before_cached):
        before = self.snapshot()
        fits = model()
        try:
            answer()
        except MemoryError:
            if fits:
                self.fail("MemoryError", "raised", f"no error ({self.m.free_count()} free blocks suffice)",
                          EVICTED_REFERENCED)
            if self.snapshot() != before:
                self.fail("the state after a refused request", self.snapshot(), before)
            return
        if not fits:
            self.fail("MemoryError", "not raised", "raised (not enough free blocks)")
        self.check_eviction(before_cached)

    def check_eviction(self, before_cached):
        """Every prefix the model keeps cached is still matched by the answer."""
        after = self.m.cached()
        for key in after:
            got, want = len(self.c.match(list(key))), len(self.m.match(list(key)))
            if got < want:
                evicted = [k for k in before_cached if k not in after]
                parent = any(len(k) > len(key) and k[:len(key)] == key for k in evicted)
                self.fail(f"len(match({list(key)}))", got, want,
                          PARENT_FIRST if parent else EVICTS_WHILE_UNUSED if not evicted else None)

    @invariant()
    def shared_positions_and_contents_agree(self):
        if not hasattr(self, "c"):
            return
        by_answer, by_model = {}, {}
        for sid, table in self.m.tables.items():
            got = self.c.block_table(sid)
            tokens = self.m.tokens[sid]
            if len(got) != len(table):
                self.fail(f"len(block_table({sid})) for {len(tokens)} tokens", len(got), len(table))
            for j, (aid, mid) in enumerate(zip(got, table)):
                holds = tuple(tokens[: (j + 1) * self.bs])
                if by_answer.setdefault(aid, (sid, j, holds))[2] != holds:
                    other = by_answer[aid]
                    self.fail(f"block {aid} at position {j} of sequence {sid} (also position {other[1]} of "
                              f"sequence {other[0]}) holds", holds, other[2],
                              KEY_IGNORES_PREFIX if holds[-self.bs:] == other[2][-self.bs:] else EVICTED_REFERENCED)
                by_model.setdefault(mid, aid)
                if by_model[mid] != aid:
                    self.fail(f"block of position {j} of sequence {sid} (the cached block of its prefix)", aid,
                              by_model[mid], FORGETS_ON_FREE)
                self.content[aid] = holds
                if self.c.ref_count(aid) != self.m.refs[mid]:
                    self.fail(f"ref_count({aid})", self.c.ref_count(aid), self.m.refs[mid])
        for block in set(range(self.num_blocks)) - set(by_answer):
            if self.c.ref_count(block) != 0:
                self.fail(f"ref_count({block}) of a block in no table", self.c.ref_count(block), 0)
        if len(set(by_model.values())) != len(by_model):
            self.fail("blocks shared between sequences", sorted(by_answer), "one block per model block",
                      EVICTED_REFERENCED)
        for what, got, want in (("num_free_blocks()", self.c.num_free_blocks(), self.m.free_count()),
                                ("num_cached_blocks()", self.c.num_cached_blocks(), len(self.m.cached()))):
            if got != want:
                self.fail(what, got, want)

    @invariant()
    def a_hit_never_returns_a_block_whose_tokens_differ(self):
        if not hasattr(self, "c"):
            return
        self.shared_positions_and_contents_agree()  # brings self.content up to date first
        for tokens in self.seen[-6:]:
            for query in (tokens, tokens[:-1] + [2]):
                got = self.c.match(query)
                want = len(self.m.match(query))
                for j, aid in enumerate(got):
                    if self.content.get(aid, tuple(query[: (j + 1) * self.bs])) != tuple(query[: (j + 1) * self.bs]):
                        self.fail(f"match({query})[{j}] = block {aid}, which holds", self.content[aid],
                                  tuple(query[: (j + 1) * self.bs]), KEY_IGNORES_PREFIX)
                if len(got) != want:
                    self.fail(f"len(match({query}))", len(got), want)


@pytest.mark.weight(4)
def test_random_operations_agree_with_a_brute_force_model(impl):
    PrefixMachine.make = staticmethod(impl(MODULE).PrefixCache)
    run_machine(PrefixMachine, max_examples=30, steps=20)
