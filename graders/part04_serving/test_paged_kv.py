"""Hidden tests for part04_serving.paged_kv: exact checks, then a hypothesis state machine over
random add/append/fork/free sequences against a plain model (a list of tokens per sequence)."""
import pytest
import torch
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test

from infralab.testing import Mismatch, assert_close, assert_equal, randn

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
            raise Mismatch(f"{what} changed the cache's {key}: {before[key]} -> {after[key]}",
                           "an append that failed midway and kept what it had allocated (not all-or-nothing)")
    for s, (k, v) in before["data"].items():
        assert_close(after["data"][s][0], k, name=f"K of sequence {s} after {what}")
        assert_close(after["data"][s][1], v, name=f"V of sequence {s} after {what}")


def test_slot_mapping_follows_the_block_table(impl, gen):
    cache = impl(MODULE).PagedKVCache(16, 4, HEADS, DIM)
    for s in range(3):
        cache.add_sequence(s)
    for s, t in [(0, 3), (1, 6), (0, 4), (2, 9), (1, 1)]:
        slots = cache.append(s, *tokens(t, gen))
        length = cache.seq_len(s)
        assert_equal(slots, expected_slots(cache.block_table(s), length, 4)[length - t:],
                     name=f"slots returned by append to sequence {s}",
                     mistakes={"slot = block * block_size + position (position not taken modulo block_size)":
                               torch.tensor(cache.block_table(s))[torch.arange(length - t, length) // 4] * 4
                               + torch.arange(length - t, length)})
    for s in range(3):
        assert_equal(cache.slot_mapping(s), expected_slots(cache.block_table(s), cache.seq_len(s), 4),
                     name=f"slot_mapping of sequence {s}")


@pytest.mark.weight(2)
def test_append_to_a_forked_partial_block_copies_it_first(impl, gen):
    cache = impl(MODULE).PagedKVCache(8, 4, HEADS, DIM)
    cache.add_sequence(0)
    k0, v0 = tokens(6, gen)
    cache.append(0, k0, v0)
    cache.fork(0, 1)
    shared_full, shared_partial = cache.block_table(0)
    assert cache.blocks_needed(1, 1) == 1, "appending 1 token into a shared half-full block needs 1 block (the copy)"
    k1, v1 = tokens(1, gen)
    cache.append(1, k1, v1)
    table1 = cache.block_table(1)
    if table1[1] == shared_partial:
        raise Mismatch("the child wrote into the block it shares with its parent",
                       "fork without copy-on-write: the shared, partly filled last block must be copied first")
    assert table1[0] == shared_full, "the full shared block must stay shared (no copy)"
    assert cache.ref_count(shared_full) == 2 and cache.ref_count(shared_partial) == 1
    assert_close(cache.gather(0)[0], k0, name="parent's K after the child's append")
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
    assert_unchanged(before, snapshot(cache, [0, 1], 3), "a failed append")


def test_free_returns_only_unshared_blocks(impl, gen):
    cache = impl(MODULE).PagedKVCache(6, 2, HEADS, DIM)
    cache.add_sequence(0)
    k, v = tokens(4, gen)
    cache.append(0, k, v)
    cache.fork(0, 1)
    cache.free(0)
    if cache.num_free_blocks() != 4:
        raise Mismatch(f"after freeing the parent of a fork, {cache.num_free_blocks()} blocks are free, expected 4",
                       "free() returned shared blocks to the free list without looking at reference counts")
    assert_close(cache.gather(1)[0], k, name="the child's K after its parent was freed")
    cache.free(1)
    assert cache.num_free_blocks() == 6


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
    """Random operations; the model is the list of tokens each live sequence holds."""

    make_cache = None  # set by the test: a function building the implementation's PagedKVCache
    NUM_BLOCKS, BLOCK_SIZE = 7, 3

    @initialize()
    def start(self):
        self.cache = type(self).make_cache(self.NUM_BLOCKS, self.BLOCK_SIZE, HEADS, DIM)
        self.model: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.next_id = 0
        self.gen = torch.Generator().manual_seed(0)

    @rule()
    def add(self):
        self.cache.add_sequence(self.next_id)
        self.model[self.next_id] = (torch.zeros(0, HEADS, DIM), torch.zeros(0, HEADS, DIM))
        self.next_id += 1

    @precondition(lambda self: self.model)
    @rule(pick=st.integers(0, 99), t=st.integers(1, 5))
    def append(self, pick, t):
        seq = sorted(self.model)[pick % len(self.model)]
        k, v = tokens(t, self.gen)
        table, length = self.cache.block_table(seq), self.cache.seq_len(seq)
        shared_partial = length % self.BLOCK_SIZE and self.cache.ref_count(table[-1]) > 1
        need = int(bool(shared_partial)) + -(-(length + t) // self.BLOCK_SIZE) - len(table)
        if need > self.cache.num_free_blocks():
            before = snapshot(self.cache, sorted(self.model), self.NUM_BLOCKS)
            try:
                self.cache.append(seq, k, v)
            except MemoryError:
                assert_unchanged(before, snapshot(self.cache, sorted(self.model), self.NUM_BLOCKS), "a failed append")
                return
            raise Mismatch(f"append of {t} tokens needed {need} blocks with {before['free']} free, yet did not raise MemoryError")
        self.cache.append(seq, k, v)
        mk, mv = self.model[seq]
        self.model[seq] = (torch.cat([mk, k]), torch.cat([mv, v]))

    @precondition(lambda self: self.model)
    @rule(pick=st.integers(0, 99))
    def fork(self, pick):
        parent = sorted(self.model)[pick % len(self.model)]
        self.cache.fork(parent, self.next_id)
        self.model[self.next_id] = self.model[parent]
        self.next_id += 1

    @precondition(lambda self: self.model)
    @rule(pick=st.integers(0, 99))
    def free(self, pick):
        seq = sorted(self.model)[pick % len(self.model)]
        self.cache.free(seq)
        del self.model[seq]

    @invariant()
    def reference_counts_match_the_tables(self):
        if not hasattr(self, "cache"):
            return
        tables = [self.cache.block_table(s) for s in self.model]
        for b in range(self.NUM_BLOCKS):
            holders = sum(t.count(b) for t in tables)
            if self.cache.ref_count(b) != holders:
                raise Mismatch(f"block {b} has ref_count {self.cache.ref_count(b)} but {holders} tables hold it")
        used = {b for t in tables for b in t}
        assert self.cache.num_free_blocks() == self.NUM_BLOCKS - len(used), \
            f"{self.cache.num_free_blocks()} free blocks, but {len(used)} of {self.NUM_BLOCKS} are in use"

    @invariant()
    def every_sequence_reads_back_what_it_appended(self):
        if not hasattr(self, "cache"):
            return
        for s, (k, v) in self.model.items():
            assert self.cache.seq_len(s) == k.shape[0]
            table = self.cache.block_table(s)
            assert len(table) == -(-k.shape[0] // self.BLOCK_SIZE), f"sequence {s}: table of {len(table)} blocks"
            assert_equal(self.cache.slot_mapping(s), expected_slots(table, k.shape[0], self.BLOCK_SIZE),
                         name=f"slot_mapping of sequence {s}")
            got_k, got_v = self.cache.gather(s)
            assert_close(got_k, k, name=f"K of sequence {s} (did another sequence write into a block it shares?)")
            assert_close(got_v, v, name=f"V of sequence {s}")


@pytest.mark.weight(3)
def test_random_operation_sequences_keep_the_cache_consistent(impl):
    CacheMachine.make_cache = staticmethod(impl(MODULE).PagedKVCache)
    # No shrinking: a failure is reported as found, at once (shrinking a stateful run takes minutes).
    run_state_machine_as_test(CacheMachine, settings=settings(
        max_examples=25, stateful_step_count=25, deadline=None, report_multiple_bugs=False,
        phases=[Phase.explicit, Phase.reuse, Phase.generate]))
