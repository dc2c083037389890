"""Automatic prefix caching over KV blocks (textbook 05 §5.5 Prefix Cache / RadixAttention; vLLM's
automatic prefix caching).

Requests often start with the same tokens (a system prompt, few-shot examples, earlier turns of
a chat). Their K/V is the same, so a serving engine computes it once and shares the blocks. Two
designs are common:

- **SGLang's radix tree**: a tree whose edges are token runs; matching walks from the root, and
  eviction removes unreferenced *leaves*. It shares at token granularity.
- **vLLM's hash per full block** (what this exercise builds): the cache is a dictionary from the
  *whole prefix* a full block ends (``tokens[:(j + 1) * block_size]`` for block j) to the block
  that holds its K/V. The key must cover the whole prefix, not just the block's own tokens: K/V
  depends on every earlier token (vLLM chains the parent block's hash into each block's hash).

Why the hash per block here: the paged KV cache allocates whole blocks anyway, so a block is the
unit of sharing and of eviction; a flat dictionary needs no tree surgery (splitting edges), and
a lookup is one dictionary probe per block. Use the prefix tuple itself as the key: a Python
dict compares keys for equality after hashing, so a hit can never be a hash collision. (vLLM
hashes instead, to keep keys small; it needs a collision-resistant hash for the same reason.)

Rules:

- Only **full** blocks are cached; a partly filled last block is private to its sequence. When an
  ``append`` fills it, it is cached from then on (if its prefix is not cached already by another
  block, in which case it stays private).
- A block's **reference count** is the number of sequences whose table holds it. A block that
  drops to 0 stays cached (a later request may hit it) and joins the **LRU** order of evictable
  blocks; a hit takes it back out.
- Allocation takes an unused block (one that holds no cached prefix) first; only when there is
  none does it **evict** the least recently used unreferenced cached block (its prefix leaves the
  cache). A referenced block is never evicted.
- ``free`` releases a sequence's blocks **last to first**, so a prefix's deeper blocks become
  evictable before its earlier ones: a block whose parent prefix was evicted could never be hit
  again (matching walks from the first block).

中文说明：
前缀缓存：请求常常有相同的开头（系统提示、多轮对话的历史），它们的 K/V 相同，可以只算一次、共享块。
本练习采用 vLLM 的做法：每个**满**块以它结尾的**完整前缀**（tokens[:(j+1)*block_size]）为键登记在字典里
（键必须包含整个前缀，而不只是本块的 token，因为 K/V 依赖前面所有 token）。最长前缀匹配逐块查字典；
引用计数为 0 的块仍然留在缓存中，按 LRU 顺序排队，需要新块时先用未登记的空闲块，没有了才淘汰最久未用的
未被引用块；被引用的块永远不会被淘汰。释放序列时从最后一块往前释放，这样深层的块先被淘汰。
"""
from __future__ import annotations


class PrefixCache:
    """A pool of ``num_blocks`` KV blocks with automatic prefix caching (bookkeeping only: block ids,
    no tensors; an engine stores the K/V at those block ids).

    Errors (built-in types): ``MemoryError`` when an allocation or append needs more blocks than
    are free (unused plus evictable), and then nothing changes; ``ValueError`` for sizes < 1 or a
    sequence id that exists; ``KeyError`` for an unknown sequence id.
    """

    def __init__(self, num_blocks: int, block_size: int):
        """Every block unused (and free), nothing cached, reference counts 0.

        中文：所有块空闲，缓存为空。
        """
        raise NotImplementedError("PrefixCache.__init__")

    def match(self, tokens: list[int]) -> list[int]:
        """The blocks of the longest cached prefix of ``tokens``, in full blocks: block j is the
        cached block of ``tokens[:(j + 1) * block_size]``, for j = 0, 1, ... while that prefix is
        cached. A query only: nothing changes (no reference count, no LRU order).

        Returns:
            A list of block ids, possibly empty (at most ``len(tokens) // block_size``).

        中文：最长前缀匹配（只看满块），只查询，不改变任何状态。
        """
        raise NotImplementedError("PrefixCache.match")

    def allocate(self, seq_id: int, tokens: list[int]) -> list[int]:
        """Register a new sequence holding ``tokens`` and return its block table.

        The table has ``ceil(len(tokens) / block_size)`` blocks: first the blocks of
        ``match(tokens)`` (shared: their reference counts go up, and a hit block leaves the LRU
        order), then fresh blocks (unused first, else evicted LRU ones) for the rest. Every full
        block of ``tokens`` whose prefix is not cached yet is cached now (the caller writes its K/V
        before anyone else can read it). All or nothing: ``MemoryError`` if the fresh blocks needed
        exceed the free blocks that are not among the hits; the hits must never be evicted to make
        room for the same sequence.

        Returns:
            The block table (a new list).

        中文：为新序列分配块表：先共享最长匹配前缀的块（引用计数 +1），其余用新块（先用未登记的空闲块，
        没有再淘汰 LRU 块）；新的满块登记进缓存。块不够时抛 MemoryError，且不改变任何状态。
        """
        raise NotImplementedError("PrefixCache.allocate")

    def append(self, seq_id: int, tokens: list[int]) -> list[int]:
        """Grow the sequence by ``tokens`` (decoding): fresh blocks as needed (as in
        :meth:`allocate`); blocks that become full are cached if their prefix is not. All or
        nothing (``MemoryError``). Returns the block table.

        中文：序列追加 token；新写满的块登记进缓存。块不够时抛 MemoryError 且不改变状态。
        """
        raise NotImplementedError("PrefixCache.append")

    def free(self, seq_id: int) -> None:
        """Release the sequence's blocks, last to first: each reference count drops by one; a
        block reaching 0 becomes evictable (most recently used) if it is cached, or unused if not.

        中文：从最后一块往前释放；引用计数降到 0 的已登记块进入 LRU 队列（仍可命中），未登记的块直接空闲。
        """
        raise NotImplementedError("PrefixCache.free")

    def block_table(self, seq_id: int) -> list[int]:
        """The sequence's blocks in order (a new list).

        中文：该序列的块表。
        """
        raise NotImplementedError("PrefixCache.block_table")

    def ref_count(self, block: int) -> int:
        """How many sequences hold ``block``.

        中文：块的引用计数。
        """
        raise NotImplementedError("PrefixCache.ref_count")

    def num_free_blocks(self) -> int:
        """Blocks an allocation may take: unused ones plus cached unreferenced ones.

        中文：可分配的块数（未登记的空闲块 + 未被引用的已缓存块）。
        """
        raise NotImplementedError("PrefixCache.num_free_blocks")

    def num_cached_blocks(self) -> int:
        """Blocks that hold a cached prefix, referenced or not.

        中文：缓存中登记的块数（无论是否被引用）。
        """
        raise NotImplementedError("PrefixCache.num_cached_blocks")
