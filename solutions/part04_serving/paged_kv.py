"""A paged KV cache: block allocator with reference counts, block tables, slot mapping,
copy-on-write fork (textbook 05 §5.2, 04 §4.3). Reference solution; the stub is the specification."""
from __future__ import annotations

import torch


class PagedKVCache:
    """K/V of many sequences stored in fixed-size blocks of one physical pool."""

    def __init__(self, num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
                 dtype: torch.dtype = torch.float32):
        """Allocate the pool; every block starts free."""
        shape = (num_blocks, block_size, num_kv_heads, head_dim)
        self.k = torch.zeros(shape, dtype=dtype)
        self.v = torch.zeros(shape, dtype=dtype)
        self.block_size = block_size
        self.free_list = list(range(num_blocks))
        self.refs = [0] * num_blocks
        self.tables: dict[int, list[int]] = {}
        self.lens: dict[int, int] = {}

    def add_sequence(self, seq_id: int) -> None:
        """Register an empty sequence."""
        if seq_id in self.tables:
            raise ValueError(f"sequence {seq_id} already exists")
        self.tables[seq_id], self.lens[seq_id] = [], 0

    def _take(self) -> int:
        block = self.free_list.pop()
        self.refs[block] = 1
        return block

    def _release(self, block: int) -> None:
        self.refs[block] -= 1
        if self.refs[block] == 0:
            self.free_list.append(block)

    def blocks_needed(self, seq_id: int, num_tokens: int) -> int:
        """Blocks an append of ``num_tokens`` would take from the free list (copy-on-write included)."""
        table, length, bs = self.tables[seq_id], self.lens[seq_id], self.block_size
        cow = 1 if length % bs and self.refs[table[-1]] > 1 else 0
        return cow + -(-(length + num_tokens) // bs) - -(-length // bs)

    def append(self, seq_id: int, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Write ``T`` new tokens; returns their slots (T,) int64. All or nothing."""
        table, length, bs = self.tables[seq_id], self.lens[seq_id], self.block_size
        t = k.shape[0]
        if self.blocks_needed(seq_id, t) > len(self.free_list):
            raise MemoryError(f"out of KV blocks: need {self.blocks_needed(seq_id, t)}, {len(self.free_list)} free")
        if length % bs and self.refs[table[-1]] > 1:  # copy-on-write of the shared, partly filled block
            old, new = table[-1], self._take()
            self.k[new], self.v[new] = self.k[old], self.v[old]
            self._release(old)
            table[-1] = new
        while len(table) * bs < length + t:
            table.append(self._take())
        positions = torch.arange(length, length + t)
        slots = torch.tensor(table)[positions // bs] * bs + positions % bs  # (T,)
        self.k.view(-1, *self.k.shape[2:])[slots] = k.to(self.k.dtype)
        self.v.view(-1, *self.v.shape[2:])[slots] = v.to(self.v.dtype)
        self.lens[seq_id] = length + t
        return slots

    def fork(self, parent_id: int, child_id: int) -> None:
        """The child shares every block of the parent (reference counts go up; nothing is copied)."""
        if child_id in self.tables:
            raise ValueError(f"sequence {child_id} already exists")
        self.tables[child_id] = list(self.tables[parent_id])
        self.lens[child_id] = self.lens[parent_id]
        for block in self.tables[child_id]:
            self.refs[block] += 1

    def free(self, seq_id: int) -> None:
        """Drop the sequence; blocks no other sequence holds return to the free list."""
        for block in self.tables.pop(seq_id):
            self._release(block)
        del self.lens[seq_id]

    def block_table(self, seq_id: int) -> list[int]:
        """Physical block of each logical block of the sequence."""
        return list(self.tables[seq_id])

    def seq_len(self, seq_id: int) -> int:
        """Tokens stored for the sequence."""
        return self.lens[seq_id]

    def slot_mapping(self, seq_id: int) -> torch.Tensor:
        """Slot of each token (L,) int64: block_table[i // block_size] * block_size + i % block_size."""
        positions = torch.arange(self.lens[seq_id])
        return torch.tensor(self.tables[seq_id], dtype=torch.int64)[positions // self.block_size] \
            * self.block_size + positions % self.block_size

    def gather(self, seq_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The sequence's K and V, (L, Hkv, D) each, read through its block table."""
        slots = self.slot_mapping(seq_id)
        return (self.k.view(-1, *self.k.shape[2:])[slots].clone(),
                self.v.view(-1, *self.v.shape[2:])[slots].clone())

    def num_free_blocks(self) -> int:
        """Blocks on the free list."""
        return len(self.free_list)

    def ref_count(self, block: int) -> int:
        """How many block tables hold this physical block."""
        return self.refs[block]

    def kv_pools(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The physical pools (num_blocks, block_size, Hkv, D), as copies."""
        return self.k.clone(), self.v.clone()
