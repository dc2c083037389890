"""Automatic prefix caching over KV blocks: one cache entry per full block, keyed by the full
prefix it ends, reference counts, LRU eviction of unreferenced blocks (textbook 05 §5.5).
Reference solution; the stub is the specification."""
from __future__ import annotations

from collections import OrderedDict


class PrefixCache:
    """Blocks of a KV pool shared between sequences that start with the same tokens."""

    def __init__(self, num_blocks: int, block_size: int):
        """Every block unused, nothing cached."""
        if num_blocks < 1 or block_size < 1:
            raise ValueError("num_blocks and block_size must be >= 1")
        self.block_size = block_size
        self.unused = list(range(num_blocks))  # free blocks that hold no cached prefix
        self.lru: OrderedDict[int, None] = OrderedDict()  # cached blocks nobody holds, least recent first
        self.cached: dict[tuple[int, ...], int] = {}  # full prefix -> the block that ends it
        self.key_of: dict[int, tuple[int, ...]] = {}
        self.refs = [0] * num_blocks
        self.tables: dict[int, list[int]] = {}
        self.tokens: dict[int, list[int]] = {}

    def _prefix(self, tokens, j: int) -> tuple[int, ...]:
        return tuple(tokens[: (j + 1) * self.block_size])

    def match(self, tokens: list[int]) -> list[int]:
        """Blocks of the longest cached prefix of full blocks."""
        hits = []
        for j in range(len(tokens) // self.block_size):
            block = self.cached.get(self._prefix(tokens, j))
            if block is None:
                break
            hits.append(block)
        return hits

    def _take(self) -> int:
        if self.unused:
            block = self.unused.pop()
        else:
            block, _ = self.lru.popitem(last=False)  # evict the least recently used
            del self.cached[self.key_of.pop(block)]
        self.refs[block] = 1
        return block

    def _register_full_blocks(self, seq_id: int) -> None:
        tokens, table = self.tokens[seq_id], self.tables[seq_id]
        for j in range(len(tokens) // self.block_size):
            key = self._prefix(tokens, j)
            if key not in self.cached and table[j] not in self.key_of:
                self.cached[key], self.key_of[table[j]] = table[j], key

    def _hold(self, block: int) -> None:
        """One more holder; a held block is not evictable."""
        self.refs[block] += 1
        self.lru.pop(block, None)

    def _release(self, block: int) -> None:
        """One holder less; at 0 a cached block becomes the most recently used evictable one."""
        self.refs[block] -= 1
        if self.refs[block] == 0:
            if block in self.key_of:
                self.lru[block] = None
            else:
                self.unused.append(block)

    def allocate(self, seq_id: int, tokens: list[int]) -> list[int]:
        """The new sequence's block table: the cached prefix shared, fresh blocks for the rest."""
        if seq_id in self.tables:
            raise ValueError(f"sequence {seq_id} already exists")
        hits = self.match(tokens)
        need = -(-len(tokens) // self.block_size) - len(hits)
        if need > len(self.unused) + sum(1 for b in self.lru if b not in hits):
            raise MemoryError(f"out of KV blocks: need {need}")
        for block in hits:  # hold the hits first, so that eviction cannot pick them
            self._hold(block)
        self.tables[seq_id] = hits + [self._take() for _ in range(need)]
        self.tokens[seq_id] = list(tokens)
        self._register_full_blocks(seq_id)
        return list(self.tables[seq_id])

    def append(self, seq_id: int, tokens: list[int]) -> list[int]:
        """Grow a sequence by ``tokens``; blocks that become full are cached."""
        old = self.tokens[seq_id]
        need = -(-(len(old) + len(tokens)) // self.block_size) - len(self.tables[seq_id])
        if need > self.num_free_blocks():
            raise MemoryError(f"out of KV blocks: need {need}")
        self.tables[seq_id] += [self._take() for _ in range(need)]
        old.extend(tokens)
        self._register_full_blocks(seq_id)
        return list(self.tables[seq_id])

    def free(self, seq_id: int) -> None:
        """Drop the sequence, releasing its blocks last to first (deeper blocks are evicted first)."""
        for block in reversed(self.tables.pop(seq_id)):
            self._release(block)
        del self.tokens[seq_id]

    def block_table(self, seq_id: int) -> list[int]:
        """The sequence's blocks in order."""
        return list(self.tables[seq_id])

    def ref_count(self, block: int) -> int:
        """How many sequences hold the block."""
        return self.refs[block]

    def num_free_blocks(self) -> int:
        """Blocks an allocation may take: unused, or cached and unreferenced."""
        return len(self.unused) + len(self.lru)

    def num_cached_blocks(self) -> int:
        """Blocks that hold a cached prefix, referenced or not."""
        return len(self.cached)
