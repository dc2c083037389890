"""Hidden tests for part04_serving.scheduler: hand-derived traces, then a hypothesis state machine
over random arrivals, prompt and output lengths, budgets and pool sizes. After every event the
answer is checked against the rules' invariants (budget, blocks, preemption, no lost tokens, no
starvation) and then, exactly, against a model (infralab.mistakes.part04_serving.scheduler) whose
known-mistake variants name what went wrong."""
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from infralab.i18n import localized, tr
from infralab.mistakes.part04_serving import run_machine
from infralab.mistakes.part04_serving.scheduler import (ADMIT_AFTER_PREEMPT, LEAKED_BLOCKS, NO_CHUNKING, PREFILL_FIRST,
                                                        REQUEUE_BACK, VICTIM_OLDEST, Model, blocks_for, diagnose)
from infralab.testing import Mismatch

MODULE = "part04_serving.scheduler"


# Where a check is made and what it reads, in both languages (code stays as written)
STEP_1 = ('step 1', '第 1 步')
STEP_2 = ('step 2', '第 2 步')
PREEMPTED = ('preempted', '被抢占的序列')
SCHEDULED = ('scheduled', '被调度的序列')
TOKENS_OF_C_KEPT = ('num_tokens(C) (its generated token is kept)', 'num_tokens(C)（已生成的 token 保留）')
STEP_3 = ('step 3', '第 3 步')
STEP_4 = ('step 4', '第 4 步')
STEP_5 = ('step 5', '第 5 步')
AFTER_EOS = ('after eos', '遇到 eos 之后')


def expect(where, what, got, expected, diagnosis=None):
    """``where`` and ``what``: code as written (language-neutral) or an (english, chinese) pair."""
    __tracebackhide__ = True  # the student sees the message, not this helper
    where, what = localized(where), localized(what)
    if got != expected:
        raise Mismatch(tr("part04.sched_trace", where=where, what=what, got=got, expected=expected), diagnosis)


# ---------------------------------------------------------------- hand-derived traces

@pytest.mark.weight(2)
def test_newest_is_preempted_and_requeued_at_the_front(impl):
    """4 blocks of 2, budget 16. Step 1 admits A (prompt 4: 2 blocks), B and C (prompt 1: 1 block each);
    all sample. D arrives. Step 2: A decodes token 5 and needs a third block, none is free: C (the newest)
    is preempted to the front of the queue, ahead of D; B decodes in A's wake (its 2 tokens fit its block);
    nothing is admitted in a step that preempted."""
    s = impl(MODULE).Scheduler(4, 2, 16)
    for seq, prompt in (("A", 4), ("B", 1), ("C", 1)):
        s.add_request(ord(seq), prompt, 4)
    expect(STEP_1, "schedule()", s.schedule(),
           {"scheduled": [[65, 0, 4], [66, 0, 1], [67, 0, 1]], "preempted": []})
    s.update()
    s.add_request(68, 1, 4)
    step = s.schedule()
    expect(STEP_2, PREEMPTED, step["preempted"], [67], VICTIM_OLDEST if step["preempted"] == [65] else None)
    expect(STEP_2, "waiting_ids()", s.waiting_ids(), [67, 68], REQUEUE_BACK)
    expect(STEP_2, SCHEDULED, step["scheduled"], [[65, 4, 1], [66, 1, 1]],
           ADMIT_AFTER_PREEMPT if len(step["scheduled"]) > 2 else None)
    expect(STEP_2, "num_computed_tokens(C)", s.num_computed_tokens(67), 0)
    expect(STEP_2, "block_table(C)", s.block_table(67), [])
    expect(STEP_2, TOKENS_OF_C_KEPT, s.num_tokens(67), 2)


@pytest.mark.weight(2)
def test_decode_goes_first_and_a_long_prompt_is_chunked(impl):
    """Budget 4, blocks plenty. A (prompt 3) is admitted whole and B (prompt 6) gets the 1 token left;
    then C (prompt 2) arrives. Step 2: A decodes 1 token first, then B's chunk of 3; no budget is left
    for C. Step 3: A decodes, B's last 2 prompt tokens (B samples), C's first token.
    Step 4: A and B decode, C's last prompt token."""
    s = impl(MODULE).Scheduler(16, 4, 4)
    s.add_request(0, 3, 5)
    s.add_request(1, 6, 5)
    first = s.schedule()
    expect(STEP_1, "schedule()", first, {"scheduled": [[0, 0, 3], [1, 0, 1]], "preempted": []},
           NO_CHUNKING if first["scheduled"] == [[0, 0, 3]] else None)
    s.update()
    s.add_request(2, 2, 5)
    second = s.schedule()
    expect(STEP_2, SCHEDULED, second["scheduled"], [[0, 3, 1], [1, 1, 3]],
           PREFILL_FIRST if second["scheduled"][:1] == [[2, 0, 2]] else None)
    s.update()
    expect(STEP_3, SCHEDULED, s.schedule()["scheduled"], [[0, 4, 1], [1, 4, 2], [2, 0, 1]])
    expect(STEP_3, "update()", s.update(), [])
    expect(STEP_3, "num_tokens(1)", s.num_tokens(1), 7)
    expect(STEP_4, SCHEDULED, s.schedule()["scheduled"], [[0, 5, 1], [1, 6, 1], [2, 1, 1]])


def test_preempted_sequence_recomputes_its_tokens_and_finishes(impl):
    """3 blocks of 2, budget 8; A and B: prompt 2, 3 new tokens. Step 1: both prefill (1 block each).
    Step 2: A's decode takes the last block; B needs one, B is the newest: B preempts itself.
    Step 3: A decodes; B (3 tokens to recompute, 2 blocks) does not fit the 1 free block; A finishes.
    Step 4: B recomputes prompt + its 1 generated token and samples its 2nd; step 5 its 3rd: done."""
    s = impl(MODULE).Scheduler(3, 2, 8)
    s.add_request(0, 2, 3)
    s.add_request(1, 2, 3)
    s.schedule()
    s.update()
    expect(STEP_2, "schedule()", s.schedule(), {"scheduled": [[0, 2, 1]], "preempted": [1]})
    s.update()
    expect(STEP_3, "schedule()", s.schedule(), {"scheduled": [[0, 3, 1]], "preempted": []})
    expect(STEP_3, "update()", s.update(), [0])
    expect(STEP_3, "num_free_blocks()", s.num_free_blocks(), 3)
    expect(STEP_4, "schedule()", s.schedule(), {"scheduled": [[1, 0, 3]], "preempted": []})
    s.update()
    expect(STEP_5, "schedule()", s.schedule(), {"scheduled": [[1, 3, 1]], "preempted": []})
    expect(STEP_5, "update()", s.update(), [1])


def test_fcfs_nobody_overtakes_a_head_that_does_not_fit(impl):
    """3 blocks of 2, budget 8. A (prompt 3) takes 2 blocks. B (prompt 4) needs 2 and 1 is free: B waits.
    C (prompt 1) would fit the free block, but must not overtake B."""
    s = impl(MODULE).Scheduler(3, 2, 8)
    s.add_request(0, 3, 2)
    s.add_request(1, 4, 2)
    s.add_request(2, 1, 2)
    expect(STEP_1, "schedule()", s.schedule(), {"scheduled": [[0, 0, 3]], "preempted": []})
    expect(STEP_1, "waiting_ids()", s.waiting_ids(), [1, 2])


def test_eos_finishes_early_and_frees_the_blocks(impl):
    s = impl(MODULE).Scheduler(6, 2, 8)
    s.add_request(5, 3, 10)
    s.schedule()
    expect(AFTER_EOS, "update(eos=[5])", s.update(eos=[5]), [5])
    expect(AFTER_EOS, "num_free_blocks()", s.num_free_blocks(), 6)
    expect(AFTER_EOS, "running_ids()", s.running_ids(), [])
    with pytest.raises(KeyError):
        s.num_tokens(5)


def test_errors_are_built_in_types(impl):
    m = impl(MODULE)
    with pytest.raises(ValueError):
        m.Scheduler(0, 2, 8)
    s = m.Scheduler(2, 2, 8)
    for prompt_len, max_new_tokens in ((0, 1), (1, 0)):
        with pytest.raises(ValueError):
            s.add_request(9, prompt_len, max_new_tokens)
    s.add_request(0, 2, 1)
    with pytest.raises(ValueError):
        s.add_request(0, 2, 1)
    with pytest.raises(ValueError):
        s.add_request(1, 4, 2)  # 5 tokens of K/V need 3 blocks of 2: it could never finish
    s.add_request(2, 3, 2)  # 4 tokens need exactly the 2 blocks: fits
    with pytest.raises(RuntimeError):
        s.update()
    s.schedule()
    with pytest.raises(RuntimeError):
        s.schedule()
    with pytest.raises(ValueError):
        s.update(eos=[2])  # sequence 2 sampled nothing this step (it was not even scheduled)


# ---------------------------------------------------------------- the state machine

def answer_view(s, ids):
    """What the answer's accessors show, in the model's terms (block counts, not ids)."""
    live = {}
    for sid in ids:
        try:
            live[sid] = (s.num_computed_tokens(sid), s.num_tokens(sid), len(s.block_table(sid)))
        except KeyError:
            continue
    return {"waiting": s.waiting_ids(), "running": s.running_ids(), "free": s.num_free_blocks(),
            "computed": {i: v[0] for i, v in live.items()}, "tokens": {i: v[1] for i, v in live.items()},
            "blocks": {i: v[2] for i, v in live.items()}}


class SchedulerMachine(RuleBasedStateMachine):
    """Random arrivals and steps (with random end-of-sequence tokens), then a drain.

    Pools are small (2-6 blocks of 1-3 tokens) and budgets from 1 token, so preemption,
    self-preemption, chunking and full pools happen in most runs."""

    make = None  # set by the test: the answer's Scheduler

    @initialize(num_blocks=st.integers(2, 6), block_size=st.integers(1, 3), budget=st.integers(1, 8))
    def start(self, num_blocks, block_size, budget):
        self.config = (num_blocks, block_size, budget)
        self.s = type(self).make(num_blocks, block_size, budget)
        self.model = Model(num_blocks, block_size, budget)
        self.history, self.answers, self.ids, self.limits = [], [], [], {}
        self.steps = 0

    def record(self, event, result):
        """Apply ``event`` to the model and compare the answer's ``result`` and accessors with it."""
        self.history.append(event)
        self.answers.append((result, answer_view(self.s, self.ids)))
        self.blocks_are_never_allocated_twice()  # its message is clearer than a differing free count
        act = {"add": lambda: self.model.add(*event[1:]), "schedule": self.model.schedule,
               "update": lambda: self.model.update(event[1])}[event[0]]
        want_result, want_view = act(), self.model.view()
        got_result, got_view = self.answers[-1]
        for what, got, want in [("return value", got_result, want_result),
                                *((key, got_view[key], want_view[key]) for key in want_view)]:
            if got != want:
                raise Mismatch(tr("part04.sched_differs", index=len(self.history), event=event, what=what, got=got,
                                  expected=want, history=self.history),
                               diagnose(self.history, self.answers, *self.config))

    @rule(prompt=st.integers(1, 8), max_new=st.integers(1, 4))
    def arrive(self, prompt, max_new):
        sid = len(self.ids) + 100
        num_blocks, block_size, _ = self.config
        if blocks_for(prompt + max_new - 1, block_size) > num_blocks:
            with pytest.raises(ValueError):
                self.s.add_request(sid, prompt, max_new)
            return
        self.s.add_request(sid, prompt, max_new)
        self.ids.append(sid)
        self.limits[sid] = (prompt, max_new)
        self.record(("add", sid, prompt, max_new), None)

    def step_once(self, eos_pick):
        self.steps += 1
        before = {sid: (self.s.num_computed_tokens(sid), self.s.num_tokens(sid))
                  for sid in self.s.running_ids() + self.s.waiting_ids()}
        step = self.s.schedule()
        self.check_step(step, before)
        self.record(("schedule",), step)
        samplers = [e[0] for e in step["scheduled"] if e[1] + e[2] == before[e[0]][1]]
        eos = [sid for i, sid in enumerate(samplers) if eos_pick >> i & 1 and eos_pick % 3 == 0]
        finished = self.s.update(eos=eos)
        for sid in finished:
            prompt, max_new = self.limits[sid]
            generated = before[sid][1] + 1 - prompt
            if sid not in eos and generated != max_new:
                raise Mismatch(tr("part04.sched_lost_tokens", seq=sid, got=generated, want=max_new))
        self.record(("update", eos), finished)

    def check_step(self, step, before):
        _, block_size, budget = self.config
        batch = step["scheduled"]
        total = sum(e[2] for e in batch)
        if total > budget:
            raise Mismatch(tr("part04.sched_over_budget", step=self.steps, total=total, budget=budget, batch=batch))
        seen = set()
        for entry in batch:
            sid = entry[0]
            if sid in seen:
                raise Mismatch(tr("part04.sched_twice", step=self.steps, seq=sid, batch=batch))
            seen.add(sid)
            computed = before.get(sid, (None,))[0]
            if entry[2] < 1 or entry[1] != computed or sid not in self.s.running_ids():
                raise Mismatch(tr("part04.sched_bad_entry", step=self.steps, entry=entry, computed=computed))
            reserved = len(self.s.block_table(sid))
            if reserved != blocks_for(entry[1] + entry[2], block_size):
                raise Mismatch(tr("part04.sched_table_len", seq=sid, got=reserved, tokens=entry[1] + entry[2],
                                  block_size=block_size, want=blocks_for(entry[1] + entry[2], block_size)))
        waiting = self.s.waiting_ids()
        for sid in step["preempted"]:
            if self.s.block_table(sid) or self.s.num_computed_tokens(sid) or sid not in waiting:
                raise Mismatch(tr("part04.sched_preempted_state", step=self.steps, seq=sid,
                                  table=self.s.block_table(sid), computed=self.s.num_computed_tokens(sid),
                                  waiting=waiting), REQUEUE_BACK if sid in waiting[len(step["preempted"]):] else None)

    @invariant()
    def blocks_are_never_allocated_twice(self):
        if not hasattr(self, "s"):
            return
        owner = {}
        for sid in self.s.running_ids() + self.s.waiting_ids():
            for block in self.s.block_table(sid):
                if block in owner:
                    raise Mismatch(tr("part04.sched_block_shared", block=block, first=owner[block], second=sid))
                owner[block] = sid
        if len(owner) + self.s.num_free_blocks() != self.config[0]:
            raise Mismatch(tr("part04.sched_block_count", free=self.s.num_free_blocks(), held=len(owner),
                              total=self.config[0]),
                           LEAKED_BLOCKS if len(owner) + self.s.num_free_blocks() < self.config[0] else None)

    @rule(eos_pick=st.integers(0, 63))
    def step(self, eos_pick):
        self.step_once(eos_pick)

    @rule()
    def drain(self):
        """No new arrivals: every step advances the oldest, so all finish within the sum of their lengths."""
        left = [sid for sid in self.s.running_ids() + self.s.waiting_ids()]
        bound = sum(sum(self.limits[sid]) for sid in left) + len(left)
        for _ in range(bound):
            if not (self.s.running_ids() or self.s.waiting_ids()):
                return
            self.step_once(1)  # no eos: every sequence runs to max_new_tokens
        stuck = self.s.running_ids() + self.s.waiting_ids()
        if stuck:
            raise Mismatch(tr("part04.sched_starved", ids=stuck, steps=bound),
                           diagnose(self.history, self.answers, *self.config))


@pytest.mark.weight(4)
def test_random_arrivals_keep_every_rule_and_nobody_starves(impl):
    SchedulerMachine.make = staticmethod(impl(MODULE).Scheduler)
    run_machine(SchedulerMachine, max_examples=30, steps=20)
