"""Continuous batching under a KV-block budget: FCFS admission within a token budget, chunked
prefill, running sequences first, preemption of the newest by recompute (textbook 05 §5.3–5.4).
Reference solution; the stub is the specification."""
from __future__ import annotations

from collections import deque


class Scheduler:
    """Decides, step by step, which sequences run and how many of their tokens."""

    def __init__(self, num_blocks: int, block_size: int, max_num_batched_tokens: int):
        """An empty scheduler over ``num_blocks`` KV blocks of ``block_size`` tokens."""
        if min(num_blocks, block_size, max_num_batched_tokens) < 1:
            raise ValueError("num_blocks, block_size and max_num_batched_tokens must be >= 1")
        self.num_blocks, self.block_size, self.token_budget = num_blocks, block_size, max_num_batched_tokens
        self.free_blocks = list(range(num_blocks))
        self.waiting: deque[int] = deque()
        self.run_queue: list[int] = []  # oldest admission first
        self.prompt_len: dict[int, int] = {}
        self.max_new: dict[int, int] = {}
        self.total: dict[int, int] = {}  # prompt + tokens generated so far
        self.computed: dict[int, int] = {}  # tokens whose K/V is in the cache
        self.tables: dict[int, list[int]] = {}
        self.pending: list[list[int]] | None = None  # the step scheduled and not yet updated

    def add_request(self, seq_id: int, prompt_len: int, max_new_tokens: int) -> None:
        """Queue a request at the back of the waiting queue."""
        if seq_id in self.total:
            raise ValueError(f"sequence {seq_id} already exists")
        if prompt_len < 1 or max_new_tokens < 1:
            raise ValueError("prompt_len and max_new_tokens must be >= 1")
        if -(-(prompt_len + max_new_tokens - 1) // self.block_size) > self.num_blocks:
            raise ValueError(f"sequence {seq_id} needs more than the {self.num_blocks} blocks of the pool")
        self.prompt_len[seq_id], self.max_new[seq_id] = prompt_len, max_new_tokens
        self.total[seq_id], self.computed[seq_id], self.tables[seq_id] = prompt_len, 0, []
        self.waiting.append(seq_id)

    def _blocks_needed(self, seq_id: int, n: int) -> int:
        return -(-(self.computed[seq_id] + n) // self.block_size) - len(self.tables[seq_id])

    def _reserve(self, seq_id: int, n: int, out: list[list[int]]) -> None:
        for _ in range(self._blocks_needed(seq_id, n)):
            self.tables[seq_id].append(self.free_blocks.pop())
        out.append([seq_id, self.computed[seq_id], n])

    def _preempt(self, seq_id: int) -> int:
        """Recompute: drop the K/V, keep the tokens, go back to the front of the queue."""
        self.run_queue.remove(seq_id)
        self.free_blocks.extend(self.tables[seq_id])
        self.tables[seq_id], self.computed[seq_id] = [], 0
        self.waiting.appendleft(seq_id)
        return seq_id

    def _victim(self) -> int:
        return self.run_queue[-1]  # the newest running sequence

    def _schedule_running(self, budget: int, scheduled: list, preempted: list) -> int:
        """Running sequences, oldest first, preempting the newest while blocks run short."""
        i = 0
        while i < len(self.run_queue) and budget > 0:
            seq = self.run_queue[i]
            n = min(self.total[seq] - self.computed[seq], budget)
            while self._blocks_needed(seq, n) > len(self.free_blocks) and seq in self.run_queue:
                preempted.append(self._preempt(self._victim()))
            if seq not in self.run_queue:
                break  # it was the newest and preempted itself
            self._reserve(seq, n, scheduled)
            budget -= n
            i += 1
        return budget

    def _admit_waiting(self, budget: int, scheduled: list) -> None:
        """FCFS admission of the waiting queue's head while its (chunked) prompt fits."""
        while self.waiting and budget > 0:
            seq = self.waiting[0]
            n = min(self.total[seq], budget)  # a long prompt is chunked
            if self._blocks_needed(seq, n) > len(self.free_blocks):
                break  # nobody overtakes the head of the queue
            self.run_queue.append(self.waiting.popleft())
            self._reserve(seq, n, scheduled)
            budget -= n

    def schedule(self) -> dict[str, list]:
        """The next step: ``{"scheduled": [[seq_id, start, num_tokens], ...], "preempted": [...]}``."""
        if self.pending is not None:
            raise RuntimeError("schedule() called twice without update()")
        scheduled, preempted = [], []
        budget = self._schedule_running(self.token_budget, scheduled, preempted)
        if not preempted:  # no admission in a step that had to preempt
            self._admit_waiting(budget, scheduled)
        self.pending = scheduled
        return {"scheduled": [list(entry) for entry in scheduled], "preempted": preempted}

    def update(self, eos: list[int] | tuple[int, ...] = ()) -> list[int]:
        """After the model ran the scheduled step: advance, sample, finish; returns the finished ids."""
        if self.pending is None:
            raise RuntimeError("update() called without a scheduled step")
        samplers = [seq for seq, start, n in self.pending if start + n == self.total[seq]]
        if any(seq not in samplers for seq in eos):
            raise ValueError(f"eos names sequences that sampled no token this step: {list(eos)}")
        finished = []
        for seq, start, n in self.pending:
            self.computed[seq] = start + n
            if seq in samplers:
                self.total[seq] += 1
                if self.total[seq] - self.prompt_len[seq] == self.max_new[seq] or seq in eos:
                    finished.append(seq)
        for seq in finished:
            self.free_blocks.extend(self.tables.pop(seq))
            self.run_queue.remove(seq)
            for table in (self.prompt_len, self.max_new, self.total, self.computed):
                del table[seq]
        self.pending = None
        return finished

    def waiting_ids(self) -> list[int]:
        """The waiting queue, front first."""
        return list(self.waiting)

    def running_ids(self) -> list[int]:
        """The running sequences, oldest admission first."""
        return list(self.run_queue)

    def block_table(self, seq_id: int) -> list[int]:
        """The blocks reserved for the sequence's K/V."""
        return list(self.tables[seq_id])

    def num_free_blocks(self) -> int:
        """Blocks held by no sequence."""
        return len(self.free_blocks)

    def num_computed_tokens(self, seq_id: int) -> int:
        """Tokens of the sequence whose K/V is in the cache."""
        return self.computed[seq_id]

    def num_tokens(self, seq_id: int) -> int:
        """Prompt plus generated tokens of the sequence."""
        return self.total[seq_id]
