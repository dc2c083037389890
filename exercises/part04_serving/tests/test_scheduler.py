"""Visible tests for part04_serving.scheduler: `pytest exercises/part04_serving -m scheduler`.

Each test is a short trace derived by hand from the rules in the stub's docstring: the comments
say why each step looks as it does."""
import pytest

from infralab.i18n import tr

MODULE = "part04_serving.scheduler"


def test_a_prompt_longer_than_the_budget_is_chunked_over_steps(impl):
    s = impl(MODULE).Scheduler(num_blocks=8, block_size=4, max_num_batched_tokens=4)
    s.add_request(0, prompt_len=10, max_new_tokens=2)
    assert s.schedule() == {"scheduled": [[0, 0, 4]], "preempted": []}, tr("part04.sched_chunk_first")
    s.update()
    assert s.schedule()["scheduled"] == [[0, 4, 4]], tr("part04.sched_chunk_next")
    s.update()
    assert s.schedule()["scheduled"] == [[0, 8, 2]], tr("part04.sched_chunk_last")
    assert s.update() == [] and s.num_tokens(0) == 11, tr("part04.sched_chunk_samples")
    assert s.schedule()["scheduled"] == [[0, 10, 1]], tr("part04.sched_then_decode")
    assert s.update() == [0], tr("part04.sched_two_new_finish")


def test_running_decodes_go_before_a_waiting_prompt(impl):
    s = impl(MODULE).Scheduler(num_blocks=8, block_size=4, max_num_batched_tokens=3)
    s.add_request(0, prompt_len=2, max_new_tokens=4)
    s.add_request(1, prompt_len=3, max_new_tokens=4)
    assert s.schedule()["scheduled"] == [[0, 0, 2], [1, 0, 1]], tr("part04.sched_fcfs_chunked")
    s.update()
    s.add_request(2, prompt_len=2, max_new_tokens=4)
    step = s.schedule()["scheduled"]
    assert step[0] == [0, 2, 1], tr("part04.sched_decode_first", step=step)
    assert step == [[0, 2, 1], [1, 1, 2]], tr("part04.sched_no_budget_left", step=step)


def test_out_of_blocks_preempts_the_newest_and_requeues_it_at_the_front(impl):
    s = impl(MODULE).Scheduler(num_blocks=2, block_size=2, max_num_batched_tokens=8)
    s.add_request(0, prompt_len=2, max_new_tokens=2)  # 1 block for its prompt
    s.add_request(1, prompt_len=2, max_new_tokens=2)  # the other block
    s.schedule()
    s.update()
    s.add_request(2, prompt_len=1, max_new_tokens=1)
    # A decodes its 3rd token: it needs a 2nd block and none is free. B is the newest running: preempted.
    step = s.schedule()
    assert step["preempted"] == [1], tr("part04.sched_newest_preempted", step=step)
    assert step["scheduled"] == [[0, 2, 1]], tr("part04.sched_no_admit_on_preempt")
    assert s.waiting_ids() == [1, 2], tr("part04.sched_preempted_front")
    assert s.block_table(1) == [] and s.num_computed_tokens(1) == 0, tr("part04.sched_recompute_drops")
    assert s.num_tokens(1) == 3, tr("part04.sched_keeps_generated")
    assert s.update() == [0]
    # B comes back: its prompt and generated token (3 tokens) are prefilled again.
    assert s.schedule()["scheduled"] == [[1, 0, 3]]


def test_a_waiting_head_that_does_not_fit_blocks_the_queue(impl):
    s = impl(MODULE).Scheduler(num_blocks=3, block_size=2, max_num_batched_tokens=8)
    s.add_request(0, prompt_len=4, max_new_tokens=1)  # takes 2 blocks
    s.add_request(1, prompt_len=3, max_new_tokens=1)  # needs 2, 1 is free
    s.add_request(2, prompt_len=1, max_new_tokens=1)  # would fit, but must not overtake 1
    assert s.schedule()["scheduled"] == [[0, 0, 4]]
    assert s.waiting_ids() == [1, 2] and s.num_free_blocks() == 1


def test_finished_sequences_give_their_blocks_back(impl):
    s = impl(MODULE).Scheduler(num_blocks=4, block_size=2, max_num_batched_tokens=8)
    s.add_request(0, prompt_len=3, max_new_tokens=5)
    s.schedule()
    assert len(s.block_table(0)) == 2 and s.num_free_blocks() == 2
    assert s.update(eos=[0]) == [0], tr("part04.sched_eos_finishes")
    assert s.num_free_blocks() == 4 and s.running_ids() == []
    with pytest.raises(KeyError):
        s.block_table(0)
