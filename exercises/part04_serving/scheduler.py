"""Continuous batching under a KV-block budget (textbook 05 §5.3 Continuous Batching, §5.4 Chunked
Prefill; Orca, vLLM's scheduler, SARATHI).

Static batching waits for the slowest sequence of a batch; continuous batching decides again at
*every* step which sequences run, so a finished sequence's place is taken at once. Two budgets
bound a step: the **token budget** ``max_num_batched_tokens`` (tokens the model processes in one
forward: one per decoding sequence, a chunk of a prompt) and the **KV blocks** of the paged cache
(``num_blocks`` blocks of ``block_size`` tokens, as in ``paged_kv``).

The scheduler does the bookkeeping only: it never sees token ids or tensors. A sequence has
``num_tokens`` (prompt + tokens generated so far) and ``num_computed_tokens`` (tokens whose K/V is
in the cache). A step gives it ``n`` tokens starting at ``start = num_computed_tokens``; when
``start + n == num_tokens`` the step's last position yields logits and one new token is sampled.

The rules of :meth:`Scheduler.schedule` (one step), exactly:

1. **Running sequences first**, in the order they were admitted (oldest first): each gets
   ``n = min(num_tokens - num_computed_tokens, budget_left)`` tokens (1 for a decoding sequence,
   the rest of its prompt, chunked, for one still in prefill). Stop when the budget is spent.
2. A sequence's K/V needs ``ceil((num_computed_tokens + n) / block_size)`` blocks; blocks it lacks
   come from the free pool. When the pool is short, **preempt the newest running sequence** (the
   last admitted; never one scheduled already in this step), by **recompute**: all its blocks go
   back to the pool, ``num_computed_tokens`` becomes 0 (its generated tokens are kept: they will be
   prefilled again with the prompt), and it goes to the **front** of the waiting queue. Repeat
   until the blocks suffice; if the sequence being scheduled is itself the newest, it is preempted
   and the running pass ends.
3. **Then admit waiting sequences in FCFS order**, only if nothing was preempted in this step:
   the head of the queue gets ``n = min(num_tokens, budget_left)`` tokens (a long prompt is
   **chunked** over steps) if the pool has the blocks for them, and joins the back of the running
   list; admission never preempts, and stops at the first head that does not fit (nobody
   overtakes it). Stop when the budget is spent or the queue is empty.

The batch lists the running sequences' entries first (in running order), then the admitted ones.
Why these rules: the oldest running sequence is never preempted, and one sequence alone fits the
pool (``add_request`` checks), so every step advances the oldest sequence: nobody starves.
vLLM v1's scheduler follows the same order (its ``running`` loop pops the newest to preempt; no
admission in a step that preempted); vLLM tracks tokens and blocks per request the same way.

中文说明：
连续批处理（continuous batching）每一步都重新决定哪些序列参与计算。每步有两个预算：token 预算
（一次前向处理的 token 数：解码序列各 1 个，长 prompt 按块切分 = chunked prefill）和 KV 块预算。
调度顺序：先按进入顺序处理正在运行的序列（解码优先），块不够时抢占**最新**进入的运行序列
（recompute：释放它的全部块、已算 token 数归零、已生成的 token 保留，放回等待队列**队首**）；
本步没有发生抢占时，再按先来先服务（FCFS）从等待队列队首接纳新序列，队首放不下就停止（不许插队）。
最老的序列永远不会被抢占，所以不会饿死。
"""
from __future__ import annotations


class Scheduler:
    """Continuous-batching scheduler over a pool of KV blocks.

    Errors (built-in types): ``ValueError`` for a bad argument (sizes < 1, a sequence id that
    exists, a request that could never fit the pool, ``eos`` naming a sequence that sampled nothing
    this step); ``KeyError`` for an unknown (or finished) sequence id; ``RuntimeError`` for
    ``schedule()`` twice without ``update()``, or ``update()`` without ``schedule()``.

    An engine drives it like this (docs/serving.md)::

        sched.add_request(seq_id, prompt_len, max_new_tokens)
        while sched.waiting_ids() or sched.running_ids():
            step = sched.schedule()          # free the K/V of step["preempted"]; run step["scheduled"]
            finished = sched.update(eos=[...])   # the ids that sampled an end-of-sequence token
    """

    def __init__(self, num_blocks: int, block_size: int, max_num_batched_tokens: int):
        """An empty scheduler: every block free, both queues empty.

        Args:
            num_blocks: KV blocks in the pool (as ``PagedKVCache(num_blocks, ...)``).
            block_size: token slots per block.
            max_num_batched_tokens: tokens one step may schedule, all sequences together.

        中文：创建调度器，所有块空闲，等待队列与运行队列为空。
        """
        raise NotImplementedError("Scheduler.__init__")

    def add_request(self, seq_id: int, prompt_len: int, max_new_tokens: int) -> None:
        """Put a new request at the back of the waiting queue.

        The sequence finishes when it has generated ``max_new_tokens`` tokens (or earlier, at an
        end-of-sequence token, see :meth:`update`). Its K/V never holds the last generated token,
        so it needs at most ``ceil((prompt_len + max_new_tokens - 1) / block_size)`` blocks:
        ``ValueError`` if that exceeds ``num_blocks`` (it could never finish), if ``prompt_len`` or
        ``max_new_tokens`` is < 1, or if ``seq_id`` exists.

        中文：把请求放到等待队列队尾；单个序列所需块数超过总块数时抛 ValueError。
        """
        raise NotImplementedError("Scheduler.add_request")

    def schedule(self) -> dict[str, list]:
        """Plan one step by the rules of the module docstring; blocks are reserved now.

        Returns:
            ``{"scheduled": [[seq_id, start, num_tokens], ...], "preempted": [seq_id, ...]}``:
            the batch in order (running sequences first, then the admitted ones), where
            ``start`` is the sequence's ``num_computed_tokens`` before the step and
            ``num_tokens >= 1``; the sum of ``num_tokens`` is at most ``max_num_batched_tokens``.
            ``preempted`` lists the sequences preempted in this step, in the order they were
            preempted (an engine frees their K/V). A step may schedule nothing (an empty list).

        中文：规划一步：返回本步的批（先运行序列、后新接纳序列，每项为 [序列号, 起始位置, token 数]）
        以及本步被抢占的序列。
        """
        raise NotImplementedError("Scheduler.schedule")

    def update(self, eos: list[int] | tuple[int, ...] = ()) -> list[int]:
        """Record that the model ran the last scheduled step.

        Each scheduled sequence's ``num_computed_tokens`` becomes ``start + num_tokens``; if that
        equals its ``num_tokens``, it sampled one token (``num_tokens`` grows by 1). A sequence
        that sampled finishes when it has generated ``max_new_tokens`` tokens or when it is listed
        in ``eos`` (``ValueError`` if ``eos`` names one that sampled nothing this step). A finished
        sequence leaves the running list and gives all its blocks back; its id is forgotten.

        Returns:
            The ids that finished, in batch order.

        中文：模型执行完上一步后调用：推进已算 token 数；算到最后一个 token 的序列采样出一个新 token；
        生成够 max_new_tokens 个或在 eos 中的序列结束并释放全部块。返回结束的序列号。
        """
        raise NotImplementedError("Scheduler.update")

    def waiting_ids(self) -> list[int]:
        """The waiting queue, front first (preempted sequences come back at the front).

        中文：等待队列（队首在前）。
        """
        raise NotImplementedError("Scheduler.waiting_ids")

    def running_ids(self) -> list[int]:
        """The running sequences, oldest admission first.

        中文：运行中的序列（最早接纳的在前）。
        """
        raise NotImplementedError("Scheduler.running_ids")

    def block_table(self, seq_id: int) -> list[int]:
        """The block ids reserved for the sequence: ``ceil(reserved / block_size)`` of them, where
        ``reserved`` is ``num_computed_tokens`` plus what the pending step scheduled; empty while
        waiting. No block is in two tables, and no block in a table is free.

        中文：该序列占用的块号列表；等待中的序列为空。
        """
        raise NotImplementedError("Scheduler.block_table")

    def num_free_blocks(self) -> int:
        """Blocks in no sequence's table.

        中文：空闲块数。
        """
        raise NotImplementedError("Scheduler.num_free_blocks")

    def num_computed_tokens(self, seq_id: int) -> int:
        """Tokens of the sequence whose K/V is in the cache (0 while waiting).

        中文：该序列已算出 K/V 的 token 数。
        """
        raise NotImplementedError("Scheduler.num_computed_tokens")

    def num_tokens(self, seq_id: int) -> int:
        """Prompt length plus tokens generated so far.

        中文：prompt 长度加上已生成的 token 数。
        """
        raise NotImplementedError("Scheduler.num_tokens")
