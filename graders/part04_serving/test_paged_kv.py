"""Hidden tests for part04_serving.paged_kv: exact checks, then a hypothesis state machine over
random add/append/fork/free sequences against a plain model (a list of tokens per sequence)."""
import pytest
import torch
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from infralab.i18n import tr
from infralab.mistakes.part04_serving import run_machine
from infralab.testing import Mismatch, assert_close, assert_equal, check_tensor, expect, randn

MODULE = "part04_serving.paged_kv"
HEADS, DIM = 2, 3


def tokens(t, gen):
    return randn(t, HEADS, DIM, generator=gen), randn(t, HEADS, DIM, generator=gen)


def expected_slots(table, length, block_size):
    return torch.tensor([table[i // block_size] * block_size + i % block_size for i in range(length)],
                        dtype=torch.int64)


def snapshot(cache, seq_ids, num_blocks):
    """Everything observable about the cache, as plain data."""
    return {
        "free": cache.num_free_blocks(),
        "refs": [cache.ref_count(b) for b in range(num_blocks)],
        "tables": {s: cache.block_table(s) for s in seq_ids},
        "lens": {s: cache.seq_len(s) for s in seq_ids},
        "data": {s: cache.gather(s) for s in seq_ids},
    }


def assert_unchanged(before, after, what):
    for key in ("free", "refs", "tables", "lens"):
        if before[key] != after[key]:
            raise Mismatch(tr("part04.kv.failed_append_changed", what=what, key=key, before=before[key],
                              after=after[key]),
                           ("an append that failed midway and kept what it had allocated (not all-or-nothing)",
                            "append 中途失败却保留了已分配的块（不是全有或全无）"))
    for s, (k, v) in before["data"].items():
        assert_close(after["data"][s][0], k, name=(f"K of sequence {s} after {what}", f"{what}之后序列 {s} 的 K"))
        assert_close(after["data"][s][1], v, name=(f"V of sequence {s} after {what}", f"{what}之后序列 {s} 的 V"))


def test_slot_mapping_follows_the_block_table(impl, gen):
    cache = impl(MODULE).PagedKVCache(16, 4, HEADS, DIM)
    for s in range(3):
        cache.add_sequence(s)
    for s, t in [(0, 3), (1, 6), (0, 4), (2, 9), (1, 1)]:
        slots = cache.append(s, *tokens(t, gen))
        length = cache.seq_len(s)
        assert_equal(slots, expected_slots(cache.block_table(s), length, 4)[length - t:],
                     name=(f"slots returned by append to sequence {s}", f"向序列 {s} 追加时返回的槽位"),
                     mistakes={("slot = block * block_size + position (position not taken modulo block_size)",
                                "slot = block * block_size + position（position 没有对 block_size 取模）"):
                               torch.tensor(cache.block_table(s))[torch.arange(length - t, length) // 4] * 4
                               + torch.arange(length - t, length)})
    for s in range(3):
        assert_equal(cache.slot_mapping(s), expected_slots(cache.block_table(s), cache.seq_len(s), 4),
                     name=(f"slot_mapping of sequence {s}", f"序列 {s} 的 slot_mapping"))


@pytest.mark.weight(2)
def test_append_to_a_forked_partial_block_copies_it_first(impl, gen):
    cache = impl(MODULE).PagedKVCache(8, 4, HEADS, DIM)
    cache.add_sequence(0)
    k0, v0 = tokens(6, gen)
    cache.append(0, k0, v0)
    cache.fork(0, 1)
    shared_full, shared_partial = cache.block_table(0)
    needed = cache.blocks_needed(1, 1)
    expect(needed == 1, "part04.kv.half_block_copy", got=needed)
    k1, v1 = tokens(1, gen)
    cache.append(1, k1, v1)
    table1 = cache.block_table(1)
    if table1[1] == shared_partial:
        raise Mismatch(tr("part04.kv.child_wrote_shared"),
                       ("fork without copy-on-write: the shared, partly filled last block must be copied first",
                        "fork 后没有写时复制：共享且未写满的最后一块必须先复制"))
    expect(table1[0] == shared_full, "part04.kv.full_shared_no_copy", got=table1[0], expected=shared_full)
    refs = (cache.ref_count(shared_full), cache.ref_count(shared_partial))
    expect(refs == (2, 1), "part04.kv.ref_counts_after_copy", expected=(2, 1), got=refs)
    assert_close(cache.gather(0)[0], k0, name=("parent's K after the child's append", "子序列追加之后父序列的 K"))
    assert_close(cache.gather(1)[0], torch.cat([k0, k1]), name="child's K")


@pytest.mark.weight(2)
def test_failed_append_leaves_the_cache_unchanged(impl, gen):
    cache = impl(MODULE).PagedKVCache(3, 2, HEADS, DIM)
    cache.add_sequence(0)
    cache.add_sequence(1)
    cache.append(0, *tokens(3, gen))  # 2 blocks
    before = snapshot(cache, [0, 1], 3)
    with pytest.raises(MemoryError):
        cache.append(1, *tokens(3, gen))  # needs 2 blocks, 1 free
    assert_unchanged(before, snapshot(cache, [0, 1], 3), tr("part04.kv.a_failed_append"))


SHORT_FORK = ("copy-on-write skipped for a fork shorter than one block: the shared, partly filled last block "
              "(here the sequence's only block) must be copied before either sequence appends into it",
              "短于一个块的 fork 跳过了写时复制：共享且未填满的最后一个块（这里是该序列唯一的块）"
              "必须在任一序列向其追加之前复制")
FULL_BLOCK_COPY = ("copy-on-write of a full last block: the append starts a new block anyway, so nothing is copied "
                   "and the full blocks stay shared",
                   "对已满的最后一个块做了写时复制：追加本来就会开新块，所以不用复制，满块保持共享")
IGNORES_ROOM = ("blocks_needed ignores the room left in the last block (counts ceil(num_tokens / block_size))",
                "blocks_needed 忽略了最后一个块中剩余的空间（按 ceil(num_tokens / block_size) 计算）")
REFUSES_FITTING = ("append refuses when blocks_needed >= free blocks (it must refuse only when blocks_needed > free)",
                   "blocks_needed >= 空闲块数时 append 就拒绝了（只应在 blocks_needed > 空闲块数时拒绝）")
UNCOUNTED_COPY = ("blocks_needed does not count the copy of a shared, partly filled last block",
                  "blocks_needed 没有算上共享且未填满的最后一个块的复制")


def needed_blocks(length, t, block_size, last_block_shared):
    """Blocks an append of ``t`` tokens takes from the free list: new blocks, plus one copy when
    the last block is shared and partly filled."""
    cow = int(bool(length % block_size) and last_block_shared)
    return cow + -(-(length + t) // block_size) - -(-length // block_size)


def check_blocks_needed(cache, seq, t, block_size):
    table, length = cache.block_table(seq), cache.seq_len(seq)
    shared = bool(table) and cache.ref_count(table[-1]) > 1
    want, got = needed_blocks(length, t, block_size, shared), cache.blocks_needed(seq, t)
    if got == want:
        return want
    cow = int(bool(length % block_size) and shared)
    no_copy = needed_blocks(length, t, block_size, False)
    known = [(cow + -(-t // block_size), IGNORES_ROOM),
             (no_copy, SHORT_FORK if length < block_size else UNCOUNTED_COPY),
             (int(shared) + -(-(length + t) // block_size) - len(table), FULL_BLOCK_COPY)]
    raise Mismatch(tr("part04.kv.blocks_needed", seq=seq, tokens=t, length=length, block_size=block_size,
                      shared=tr("part04.kv.shared" if shared else "part04.kv.not_shared"), expected=want, got=got),
                   next((why for value, why in known if value == got), None))


def append_that_fits(cache, seq, k, v, what):
    """``append`` that must succeed (the free list holds what it needs)."""
    free = cache.num_free_blocks()
    try:
        return cache.append(seq, k, v)
    except MemoryError as e:
        at_the_boundary = cache.num_free_blocks() == free == cache.blocks_needed(seq, k.shape[0])
        raise Mismatch(tr("part04.kv.refused_fitting", what=what, tokens=k.shape[0], error=e, free=free),
                       REFUSES_FITTING if at_the_boundary else None) from None


@pytest.mark.weight(2)
@pytest.mark.parametrize("writer", ["parent", "child"])
@pytest.mark.parametrize("length", [1, 3])
def test_append_after_forking_a_sequence_shorter_than_one_block_copies_it(impl, gen, writer, length):
    cache = impl(MODULE).PagedKVCache(4, 4, HEADS, DIM)
    cache.add_sequence(0)
    k0, v0 = tokens(length, gen)
    cache.append(0, k0, v0)
    cache.fork(0, 1)
    (shared,) = cache.block_table(0)
    who, other = (0, 1) if writer == "parent" else (1, 0)
    check_blocks_needed(cache, who, 1, 4)
    k1, v1 = tokens(1, gen)
    append_that_fits(cache, who, k1, v1, tr("part04.kv.what_fork_append", writer=tr(f"part04.kv.{writer}"),
                                              length=length))
    got_k, got_v = cache.gather(other)
    if cache.block_table(who) == [shared] or not torch.equal(got_k[:length], k0):
        raise Mismatch(tr("part04.kv.short_fork_wrote_shared", length=length, writer=tr(f"part04.kv.{writer}"),
                          table=cache.block_table(who), shared=shared, read=got_k.shape[0]), SHORT_FORK)
    assert_close(got_k, k0, name=("K of the sequence that did not append", "未追加的序列的 K"))
    assert_close(got_v, v0, name=("V of the sequence that did not append", "未追加的序列的 V"))
    assert_close(cache.gather(who)[0], torch.cat([k0, k1]), name=(f"K of the {writer}",
                                                                  f"{tr(f'part04.kv.{writer}')}的 K"))
    refs = [cache.ref_count(b) for b in (shared, cache.block_table(who)[0])]
    expect(refs == [1, 1], "part04.kv.copy_owned_once", got=refs)
    free = cache.num_free_blocks()
    expect(free == 2, "part04.kv.free_after_copy", got=free)


@pytest.mark.weight(2)
def test_append_after_a_fork_at_a_block_boundary_copies_nothing(impl, gen):
    cache = impl(MODULE).PagedKVCache(5, 4, HEADS, DIM)
    cache.add_sequence(0)
    k0, v0 = tokens(8, gen)
    cache.append(0, k0, v0)
    cache.fork(0, 1)
    full = cache.block_table(0)
    assert check_blocks_needed(cache, 1, 1, 4) == 1  # setup check: the helper checks the answer; 1 is the model's
    k1, v1 = tokens(1, gen)
    append_that_fits(cache, 1, k1, v1, tr("part04.kv.what_boundary_append"))
    table = cache.block_table(1)
    if table[:2] != full or cache.num_free_blocks() != 2:
        raise Mismatch(tr("part04.kv.boundary_fork_append", full=full, table=table, free=cache.num_free_blocks()),
                       FULL_BLOCK_COPY if table[:2] != full else None)
    refs = [cache.ref_count(b) for b in full]
    expect(refs == [2, 2], "part04.kv.full_blocks_shared", got=refs)
    assert_close(cache.gather(1)[0], torch.cat([k0, k1]), name="child's K")
    assert_close(cache.gather(0)[0], k0, name="parent's K")


@pytest.mark.weight(2)
def test_append_that_fits_the_last_block_needs_no_free_block(impl, gen):
    cache = impl(MODULE).PagedKVCache(2, 4, HEADS, DIM)
    cache.add_sequence(0)
    k, v = tokens(5, gen)
    cache.append(0, k, v)  # 2 blocks, none free; 3 slots left in the last one
    assert check_blocks_needed(cache, 0, 3, 4) == 0  # setup check: the helper checks the answer; 0 is the model's
    k1, v1 = tokens(3, gen)
    append_that_fits(cache, 0, k1, v1, tr("part04.kv.what_last_slots"))
    assert_close(cache.gather(0)[0], torch.cat([k, k1]), name=("K after filling the last block", "填满最后一个块之后的 K"))
    with pytest.raises(MemoryError):
        cache.append(0, *tokens(1, gen))  # the pool is full now


def test_append_may_take_the_last_free_block(impl, gen):
    cache = impl(MODULE).PagedKVCache(3, 2, HEADS, DIM)
    cache.add_sequence(0)
    cache.append(0, *tokens(3, gen))  # 2 blocks, 1 free
    assert check_blocks_needed(cache, 0, 3, 2) == 1  # setup check: the helper checks the answer; 1 is the model's
    append_that_fits(cache, 0, *tokens(3, gen), tr("part04.kv.what_one_free_block"))
    free = cache.num_free_blocks()
    expect(free == 0, "check.value", what="num_free_blocks()", expected=0, got=free)


def test_free_returns_only_unshared_blocks(impl, gen):
    cache = impl(MODULE).PagedKVCache(6, 2, HEADS, DIM)
    cache.add_sequence(0)
    k, v = tokens(4, gen)
    cache.append(0, k, v)
    cache.fork(0, 1)
    cache.free(0)
    if cache.num_free_blocks() != 4:
        raise Mismatch(tr("part04.kv.free_after_parent_freed", got=cache.num_free_blocks()),
                       ("free() returned shared blocks to the free list without looking at reference counts",
                        "free() 不看引用计数就把共享的块放回了空闲列表"))
    assert_close(cache.gather(1)[0], k, name=("the child's K after its parent was freed", "父序列被释放之后子序列的 K"))
    cache.free(1)
    free = cache.num_free_blocks()
    expect(free == 6, "check.value", what="num_free_blocks()", expected=6, got=free)


def test_pools_of_another_dtype_store_the_cast_tokens(impl, gen):
    cache = impl(MODULE).PagedKVCache(4, 2, HEADS, DIM, dtype=torch.bfloat16)
    cache.add_sequence(0)
    k, v = tokens(3, gen)  # float32, cast to the pools' bfloat16 when stored
    cache.append(0, k, v)
    got_k, got_v = cache.gather(0)
    assert_close(got_k, k.to(torch.bfloat16), name=("K of a bfloat16 cache", "bfloat16 缓存中的 K"))
    assert_close(got_v, v.to(torch.bfloat16), name=("V of a bfloat16 cache", "bfloat16 缓存中的 V"))
    pool_k, pool_v = cache.kv_pools()
    check_tensor(pool_k, shape=(4, 2, HEADS, DIM), dtype=torch.bfloat16, name=("K pool", "K 池"))
    check_tensor(pool_v, shape=(4, 2, HEADS, DIM), dtype=torch.bfloat16, name=("V pool", "V 池"))


def test_errors_are_built_in_types(impl, gen):
    cache = impl(MODULE).PagedKVCache(4, 2, HEADS, DIM)
    cache.add_sequence(0)
    with pytest.raises(ValueError):
        cache.add_sequence(0)
    with pytest.raises(KeyError):
        cache.append(7, *tokens(1, gen))
    with pytest.raises(KeyError):
        cache.free(7)


class CacheMachine(RuleBasedStateMachine):
    """Random operations; the model is the list of tokens each live sequence holds.

    Hypothesis runs derandomised under ``--seed``, so the states that matter are reached on
    purpose, not by luck: every run starts from a fork of a sequence shorter than one block (or
    of a full block), block sizes include 1 (never a partial block) and the pool is small
    enough to run dry; rules fill a last block exactly and append single tokens (decoding)."""

    make_cache = None  # set by the test: a function building the implementation's PagedKVCache

    @initialize(block_size=st.sampled_from([2, 3, 4, 1]), num_blocks=st.integers(3, 7),
                first=st.integers(1, 4))
    def start(self, block_size, num_blocks, first):
        self.block_size, self.num_blocks = block_size, num_blocks
        self.cache = type(self).make_cache(num_blocks, block_size, HEADS, DIM)
        self.model: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.next_id = 0
        self.gen = torch.Generator().manual_seed(0)
        self.add()
        self.append_tokens(0, min(first, block_size))  # one block at most: shorter than a block, or full
        self.fork(0)

    @rule()
    def add(self):
        self.cache.add_sequence(self.next_id)
        self.model[self.next_id] = (torch.zeros(0, HEADS, DIM), torch.zeros(0, HEADS, DIM))
        self.next_id += 1

    def pick(self, pick):
        return sorted(self.model)[pick % len(self.model)]

    def append_tokens(self, seq, t):
        k, v = tokens(t, self.gen)
        table, length = self.cache.block_table(seq), self.cache.seq_len(seq)
        need = check_blocks_needed(self.cache, seq, t, self.block_size)
        before = snapshot(self.cache, sorted(self.model), self.num_blocks)
        if need > before["free"]:
            try:
                self.cache.append(seq, k, v)
            except MemoryError:
                assert_unchanged(before, snapshot(self.cache, sorted(self.model), self.num_blocks),
                                 tr("part04.kv.a_failed_append"))
                return
            raise Mismatch(tr("part04.kv.no_memory_error", tokens=t, need=need, free=before["free"]))
        append_that_fits(self.cache, seq, k, v, tr("part04.kv.what_sequence", seq=seq, length=length))
        kept = length // self.block_size  # full blocks before the append: never copied, never moved
        after = self.cache.block_table(seq)
        if after[:kept] != table[:kept]:
            raise Mismatch(tr("part04.kv.full_blocks_moved", seq=seq, before=table, after=after), FULL_BLOCK_COPY)
        if self.cache.num_free_blocks() != before["free"] - need:
            raise Mismatch(tr("part04.kv.blocks_taken", tokens=t, seq=seq, length=length, table=table,
                              taken=before["free"] - self.cache.num_free_blocks(), need=need))
        mk, mv = self.model[seq]
        self.model[seq] = (torch.cat([mk, k]), torch.cat([mv, v]))

    @precondition(lambda self: self.model)
    @rule(pick=st.integers(0, 99), t=st.integers(1, 5))
    def append(self, pick, t):
        self.append_tokens(self.pick(pick), t)

    @precondition(lambda self: self.model)
    @rule(pick=st.integers(0, 99))
    def decode_one_token(self, pick):
        self.append_tokens(self.pick(pick), 1)

    @precondition(lambda self: self.model)
    @rule(pick=st.integers(0, 99))
    def fill_the_last_block(self, pick):
        seq = self.pick(pick)
        self.append_tokens(seq, self.block_size - self.cache.seq_len(seq) % self.block_size)

    @precondition(lambda self: self.model)
    @rule(pick=st.integers(0, 99))
    def fork(self, pick):
        parent = self.pick(pick)
        self.cache.fork(parent, self.next_id)
        self.model[self.next_id] = self.model[parent]
        self.next_id += 1

    @precondition(lambda self: self.model)
    @rule(pick=st.integers(0, 99))
    def free(self, pick):
        seq = self.pick(pick)
        self.cache.free(seq)
        del self.model[seq]

    @invariant()
    def reference_counts_match_the_tables(self):
        if not hasattr(self, "cache"):
            return
        tables = [self.cache.block_table(s) for s in self.model]
        for b in range(self.num_blocks):
            holders = sum(t.count(b) for t in tables)
            if self.cache.ref_count(b) != holders:
                raise Mismatch(tr("part04.kv.ref_count_vs_tables", block=b, got=self.cache.ref_count(b),
                                  holders=holders))
        used = {b for t in tables for b in t}
        free = self.cache.num_free_blocks()
        expect(free == self.num_blocks - len(used), "part04.kv.free_count", got=free, used=len(used),
               total=self.num_blocks)

    @invariant()
    def every_sequence_reads_back_what_it_appended(self):
        if not hasattr(self, "cache"):
            return
        for s, (k, v) in self.model.items():
            length = self.cache.seq_len(s)
            expect(length == k.shape[0], "part04.kv.seq_len", seq=s, got=length, expected=k.shape[0])
            table = self.cache.block_table(s)
            expected = -(-k.shape[0] // self.block_size)
            expect(len(table) == expected, "part04.kv.table_len", seq=s, got=len(table), expected=expected)
            assert_equal(self.cache.slot_mapping(s), expected_slots(table, k.shape[0], self.block_size),
                         name=(f"slot_mapping of sequence {s}", f"序列 {s} 的 slot_mapping"))
            got_k, got_v = self.cache.gather(s)
            assert_close(got_k, k, name=(f"K of sequence {s} (did another sequence write into a block it shares?)",
                                         f"序列 {s} 的 K（是否有别的序列写进了它共享的块？）"))
            assert_close(got_v, v, name=(f"V of sequence {s}", f"序列 {s} 的 V"))


@pytest.mark.weight(3)
def test_random_operation_sequences_keep_the_cache_consistent(impl):
    CacheMachine.make_cache = staticmethod(impl(MODULE).PagedKVCache)
    run_machine(CacheMachine, max_examples=25, steps=25)
