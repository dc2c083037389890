"""A model of part04_serving.scheduler and its known mistakes, for the hidden tests' state machine.

The model counts blocks (it has no block ids) and replays a history of events: ``("add", seq_id,
prompt_len, max_new_tokens)``, ``("schedule",)`` and ``("update", eos)``. Each known mistake is
the same model with one rule changed; a wrong answer is diagnosed by replaying the history on each
mistake and finding the one whose outputs equal the answer's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

VICTIM_OLDEST = ("preempted the oldest running sequence instead of the newest (the oldest must always progress, "
                 "or sequences starve)",
                 "抢占了最老的运行序列而不是最新的（最老的序列必须一直推进，否则会饿死）")
REQUEUE_BACK = ("a preempted sequence was requeued at the back of the waiting queue instead of the front",
                "被抢占的序列放回了等待队列队尾，而不是队首")
PREFILL_FIRST = ("waiting prompts were admitted before the running sequences' decode tokens (decode goes first)",
                 "先接纳等待中的 prompt，再处理运行序列的解码 token（应当解码优先）")
NO_CHUNKING = ("a prompt longer than the budget left was not chunked: it waited for a step with room for all of it",
               "没有做 chunked prefill：超过剩余预算的 prompt 没有被切块，而是等到整段放得下")
ADMIT_AFTER_PREEMPT = ("waiting sequences were admitted in a step that preempted (the preempted one comes straight "
                       "back, or a newer one takes its blocks)",
                       "在发生抢占的同一步里又接纳了等待序列（被抢占的序列立刻回来，或新序列占走了它的块）")
LEAKED_BLOCKS = ("blocks left a sequence's table without going back to the free pool (a preempted or finished "
                 "sequence's blocks leaked)",
                 "块离开了序列的块表却没有回到空闲池（被抢占或已结束序列的块泄漏了）")
KNOWN = {"victim": (VICTIM_OLDEST, "oldest"), "requeue": (REQUEUE_BACK, "back"),
         "order": (PREFILL_FIRST, "waiting_first"), "chunk": (NO_CHUNKING, False),
         "admit_after_preempt": (ADMIT_AFTER_PREEMPT, True)}


@dataclass
class Rules:
    victim: str = "newest"
    requeue: str = "front"
    order: str = "running_first"
    chunk: bool = True
    admit_after_preempt: bool = False


@dataclass
class Model:
    num_blocks: int
    block_size: int
    budget: int
    rules: Rules = field(default_factory=Rules)
    seqs: dict = field(default_factory=dict)  # id -> {"prompt", "max_new", "total", "computed", "blocks"}
    waiting: list = field(default_factory=list)
    running: list = field(default_factory=list)
    last: list = field(default_factory=list)

    def free(self) -> int:
        return self.num_blocks - sum(s["blocks"] for s in self.seqs.values())

    def lacking(self, sid: int, n: int) -> int:
        s = self.seqs[sid]
        return max(0, -(-(s["computed"] + n) // self.block_size) - s["blocks"])

    def add(self, sid: int, prompt: int, max_new: int) -> None:
        self.seqs[sid] = {"prompt": prompt, "max_new": max_new, "total": prompt, "computed": 0, "blocks": 0}
        self.waiting.append(sid)

    def evict(self, sid: int) -> None:
        self.running.remove(sid)
        self.seqs[sid].update(computed=0, blocks=0)
        self.waiting.insert(0 if self.rules.requeue == "front" else len(self.waiting), sid)

    def take(self, sid: int, n: int, batch: list) -> None:
        s = self.seqs[sid]
        s["blocks"] += self.lacking(sid, n)
        batch.append([sid, s["computed"], n])

    def run_pass(self, left: int, batch: list, preempted: list) -> int:
        done: list = []
        for sid in list(self.running):
            if left == 0 or sid not in self.running:
                break
            n = min(self.seqs[sid]["total"] - self.seqs[sid]["computed"], left)
            while self.lacking(sid, n) > self.free():
                others = [r for r in self.running if r not in done]
                victim = others[-1] if self.rules.victim == "newest" else others[0]
                self.evict(victim)
                preempted.append(victim)
                if victim == sid:
                    return left
            self.take(sid, n, batch)
            done.append(sid)
            left -= n
        return left

    def admit_pass(self, left: int, batch: list) -> int:
        while self.waiting and left > 0:
            sid = self.waiting[0]
            n = min(self.seqs[sid]["total"], left)
            if not self.rules.chunk and n < self.seqs[sid]["total"]:
                break
            if self.lacking(sid, n) > self.free():
                break
            self.waiting.pop(0)
            self.running.append(sid)
            self.take(sid, n, batch)
            left -= n
        return left

    def schedule(self) -> dict:
        batch, preempted = [], []
        left = self.budget
        if self.rules.order == "waiting_first":
            left = self.admit_pass(left, batch)
            self.run_pass_only_old(left, batch, preempted)
        else:
            left = self.run_pass(left, batch, preempted)
            if not preempted or self.rules.admit_after_preempt:
                self.admit_pass(left, batch)
        self.last = batch
        return {"scheduled": [list(e) for e in batch], "preempted": preempted}

    def run_pass_only_old(self, left: int, batch: list, preempted: list) -> None:
        admitted = {e[0] for e in batch}
        keep, self.running = self.running, [r for r in self.running if r not in admitted]
        self.run_pass(left, batch, preempted)
        self.running = [r for r in keep if r in self.running or r in admitted]

    def update(self, eos) -> list:
        finished = []
        for sid, start, n in self.last:
            s = self.seqs[sid]
            s["computed"] = start + n
            if s["computed"] == s["total"]:
                s["total"] += 1
                if s["total"] - s["prompt"] == s["max_new"] or sid in eos:
                    finished.append(sid)
        for sid in finished:
            self.running.remove(sid)
            del self.seqs[sid]
        self.last = []
        return finished

    def view(self) -> dict:
        """Everything the answer's accessors show, as plain data."""
        return {"waiting": list(self.waiting), "running": list(self.running), "free": self.free(),
                "computed": {i: s["computed"] for i, s in self.seqs.items()},
                "tokens": {i: s["total"] for i, s in self.seqs.items()},
                "blocks": {i: s["blocks"] for i, s in self.seqs.items()}}


def replay(history: list, num_blocks: int, block_size: int, budget: int, rules: Rules | None = None) -> list:
    """The outputs of ``schedule``/``update`` for each event of ``history`` (None for an add), and
    the model's view after each event."""
    model = Model(num_blocks, block_size, budget, rules or Rules())
    out = []
    for event in history:
        if event[0] == "add":
            model.add(*event[1:])
            result = None
        elif event[0] == "schedule":
            result = model.schedule()
        else:
            result = model.update(event[1])
        out.append((result, model.view()))
    return out


def diagnose(history: list, answers: list, num_blocks: int, block_size: int, budget: int):
    """The known mistake whose outputs over ``history`` equal ``answers`` (the answer's outputs and
    views, as :func:`replay` returns them), or None."""
    for name, (label, value) in KNOWN.items():
        try:
            got = replay(history, num_blocks, block_size, budget, Rules(**{name: value}))
        except (IndexError, KeyError, ValueError):
            continue
        if got == answers:
            return label
    return None


def blocks_for(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)
