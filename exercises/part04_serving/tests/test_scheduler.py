"""Visible tests for part04_serving.scheduler: `pytest exercises/part04_serving -m scheduler`.

Each test is a short trace derived by hand from the rules in the stub's docstring: the comments
say why each step looks as it does."""
import pytest

from infralab.i18n import tr
from infralab.testing import expect

MODULE = "part04_serving.scheduler"
SCHEDULED = 'schedule()["scheduled"]'


def expect_step(got, expected, what, note=None):
    """``got == expected``, or a failure naming the call, both values and, given, why (a part04 key)."""
    __tracebackhide__ = True  # the student reads the test line that called it
    if note is None:
        expect(got == expected, "check.value", what=what, expected=expected, got=got)
    else:
        expect(got == expected, "check.value_note", what=what, expected=expected, got=got, note=tr(note))


def test_a_prompt_longer_than_the_budget_is_chunked_over_steps(impl):
    s = impl(MODULE).Scheduler(num_blocks=8, block_size=4, max_num_batched_tokens=4)
    s.add_request(0, prompt_len=10, max_new_tokens=2)
    expect_step(s.schedule(), {"scheduled": [[0, 0, 4]], "preempted": []}, "schedule()", "part04.sched_chunk_first")
    s.update()
    expect_step(s.schedule()["scheduled"], [[0, 4, 4]], SCHEDULED, "part04.sched_chunk_next")
    s.update()
    expect_step(s.schedule()["scheduled"], [[0, 8, 2]], SCHEDULED, "part04.sched_chunk_last")
    expect_step(s.update(), [], "update()", "part04.sched_chunk_samples")
    expect_step(s.num_tokens(0), 11, "num_tokens(0)", "part04.sched_chunk_samples")
    expect_step(s.schedule()["scheduled"], [[0, 10, 1]], SCHEDULED, "part04.sched_then_decode")
    expect_step(s.update(), [0], "update()", "part04.sched_two_new_finish")


def test_running_decodes_go_before_a_waiting_prompt(impl):
    s = impl(MODULE).Scheduler(num_blocks=8, block_size=4, max_num_batched_tokens=3)
    s.add_request(0, prompt_len=2, max_new_tokens=4)
    s.add_request(1, prompt_len=3, max_new_tokens=4)
    expect_step(s.schedule()["scheduled"], [[0, 0, 2], [1, 0, 1]], SCHEDULED, "part04.sched_fcfs_chunked")
    s.update()
    s.add_request(2, prompt_len=2, max_new_tokens=4)
    step = s.schedule()["scheduled"]
    expect(step[0] == [0, 2, 1], "part04.sched_decode_first", step=step)
    expect(step == [[0, 2, 1], [1, 1, 2]], "part04.sched_no_budget_left", step=step)


def test_out_of_blocks_preempts_the_newest_and_requeues_it_at_the_front(impl):
    s = impl(MODULE).Scheduler(num_blocks=2, block_size=2, max_num_batched_tokens=8)
    s.add_request(0, prompt_len=2, max_new_tokens=2)  # 1 block for its prompt
    s.add_request(1, prompt_len=2, max_new_tokens=2)  # the other block
    s.schedule()
    s.update()
    s.add_request(2, prompt_len=1, max_new_tokens=1)
    # A decodes its 3rd token: it needs a 2nd block and none is free. B is the newest running: preempted.
    step = s.schedule()
    expect(step["preempted"] == [1], "part04.sched_newest_preempted", step=step)
    expect_step(step["scheduled"], [[0, 2, 1]], SCHEDULED, "part04.sched_no_admit_on_preempt")
    expect_step(s.waiting_ids(), [1, 2], "waiting_ids()", "part04.sched_preempted_front")
    expect_step(s.block_table(1), [], "block_table(1)", "part04.sched_recompute_drops")
    expect_step(s.num_computed_tokens(1), 0, "num_computed_tokens(1)", "part04.sched_recompute_drops")
    expect_step(s.num_tokens(1), 3, "num_tokens(1)", "part04.sched_keeps_generated")
    expect_step(s.update(), [0], "update()")
    # B comes back: its prompt and generated token (3 tokens) are prefilled again.
    expect_step(s.schedule()["scheduled"], [[1, 0, 3]], SCHEDULED)


def test_a_waiting_head_that_does_not_fit_blocks_the_queue(impl):
    s = impl(MODULE).Scheduler(num_blocks=3, block_size=2, max_num_batched_tokens=8)
    s.add_request(0, prompt_len=4, max_new_tokens=1)  # takes 2 blocks
    s.add_request(1, prompt_len=3, max_new_tokens=1)  # needs 2, 1 is free
    s.add_request(2, prompt_len=1, max_new_tokens=1)  # would fit, but must not overtake 1
    expect_step(s.schedule()["scheduled"], [[0, 0, 4]], SCHEDULED)
    expect_step(s.waiting_ids(), [1, 2], "waiting_ids()")
    expect_step(s.num_free_blocks(), 1, "num_free_blocks()")


def test_finished_sequences_give_their_blocks_back(impl):
    s = impl(MODULE).Scheduler(num_blocks=4, block_size=2, max_num_batched_tokens=8)
    s.add_request(0, prompt_len=3, max_new_tokens=5)
    s.schedule()
    expect_step(len(s.block_table(0)), 2, "len(block_table(0))")
    expect_step(s.num_free_blocks(), 2, "num_free_blocks()")
    expect_step(s.update(eos=[0]), [0], "update(eos=[0])", "part04.sched_eos_finishes")
    expect_step(s.num_free_blocks(), 4, "num_free_blocks()")
    expect_step(s.running_ids(), [], "running_ids()")
    with pytest.raises(KeyError):
        s.block_table(0)
