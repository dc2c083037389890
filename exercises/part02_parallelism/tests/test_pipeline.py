"""Visible tests for part02_parallelism.pipeline: run with `pytest exercises/part02_parallelism -k pipeline`.

Schedules are lists of ``(kind, microbatch, chunk)`` per rank. ``run_ranks`` runs your
``pipeline_1f1b_step`` on every rank of a simulated group and returns, per rank, the value and the
messages it sent (destination, numel) and received (source, numel), in order.
"""
import pytest
import torch

from infralab.distributed import run_ranks
from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, assert_equal, randn

MODULE = "part02_parallelism.pipeline"


def as_lists(schedule):
    return [[(str(a[0]), int(a[1]), int(a[2])) for a in actions] for actions in schedule]


def test_gpipe_runs_all_forwards_then_all_backwards(impl):
    want = [("F", 0, 0), ("F", 1, 0), ("F", 2, 0), ("B", 0, 0), ("B", 1, 0), ("B", 2, 0)]
    assert_equal(as_lists(impl(MODULE).gpipe_schedule(2, 3)), [want, want])


def test_one_f_one_b_on_2_stages_and_3_microbatches(impl, golden):
    rank0 = [("F", 0, 0), ("F", 1, 0), ("B", 0, 0), ("F", 2, 0), ("B", 1, 0), ("B", 2, 0)]
    rank1 = [("F", 0, 0), ("B", 0, 0), ("F", 1, 0), ("B", 1, 0), ("F", 2, 0), ("B", 2, 0)]
    assert_equal(as_lists(impl(MODULE).one_f_one_b_schedule(2, 3)), [rank0, rank1],
                 mistakes=golden.ref.schedule_mistakes(2, 3))


def test_interleaved_schedule_on_2_stages_2_chunks_2_microbatches(impl):
    """Rank 0 warms up 2 (p - r - 1) + (v - 1) p = 4 forwards: every forward before its first backward."""
    got = as_lists(impl(MODULE).interleaved_schedule(2, 2, 2))
    rank0 = [("F", 0, 0), ("F", 1, 0), ("F", 0, 1), ("F", 1, 1), ("B", 0, 1), ("B", 1, 1), ("B", 0, 0), ("B", 1, 0)]
    rank1 = [("F", 0, 0), ("F", 1, 0), ("F", 0, 1), ("B", 0, 1), ("F", 1, 1), ("B", 1, 1), ("B", 0, 0), ("B", 1, 0)]
    assert_equal(got, [rank0, rank1])
    with pytest.raises(ValueError):
        impl(MODULE).interleaved_schedule(2, 2, 3)  # 3 micro-batches are not a multiple of 2 stages


def test_bubble_ratio_of_4_stages_8_microbatches(impl, golden):
    got = torch.tensor([float(impl(MODULE).bubble_ratio(4, 8)), float(impl(MODULE).bubble_ratio(4, 8, 2))],
                       dtype=torch.float64)
    assert_close(got, torch.tensor([3 / 11, 3 / 19], dtype=torch.float64), name=("bubble ratio with v = 1 and v = 2",
                                                                                 "v = 1 与 v = 2 时的气泡率"),
                 mistakes={label: torch.tensor([3 / 11, value], dtype=torch.float64)
                           for label, value in golden.ref.closed_form_mistakes(4, 8, 2).items()})


def test_simulated_1f1b_holds_at_most_p_minus_r_microbatches(impl):
    out = impl(MODULE).simulate(impl(MODULE).one_f_one_b_schedule(4, 8), 8, 1)
    assert_equal(int(out["makespan"]), 22, name=("makespan = 2 (m + p - 1) ticks", "makespan = 2 (m + p - 1) 个时间步"))
    assert_equal([int(x) for x in out["peak_in_flight"]], [4, 3, 2, 1], name=("peak in-flight micro-batches per rank",
                                                                              "每个 rank 在途 micro-batch 的峰值"))
    assert_close(torch.tensor(float(out["bubble_ratio"]), dtype=torch.float64),
                 torch.tensor(3 / 11, dtype=torch.float64), name=("simulated bubble ratio", "模拟得到的气泡率"))


def test_simulator_waits_for_the_next_stages_gradient(impl):
    """One micro-batch on two stages: F(r0) F(r1) B(r1) B(r0), 4 ticks."""
    out = impl(MODULE).simulate([[("F", 0, 0), ("B", 0, 0)], [("F", 0, 0), ("B", 0, 0)]], 1, 1)
    assert_equal(int(out["makespan"]), 4, name="makespan",
                 mistakes={("the backward did not wait for the next stage's backward (its gradient)",
                            "反向没有等待下一段的反向（梯度还没到）"): 3})


def test_simulator_rejects_a_backward_before_its_forward(impl):
    schedule = [[("F", 0, 0), ("B", 0, 0)], [("B", 0, 0), ("F", 0, 0)]]
    with pytest.raises(ValueError):
        impl(MODULE).simulate(schedule, 1, 1)


def test_1f1b_step_gives_the_gradients_of_the_whole_model(impl, golden):
    p, m = 2, 3
    weights = [randn(4, 4, generator=golden.gen) * 0.5 for _ in range(p)]
    biases = [randn(4, generator=golden.gen) * 0.1 for _ in range(p)]
    xs, ts = randn(m, 2, 4, generator=golden.gen), randn(m, 2, 4, generator=golden.gen)
    results = run_ranks(impl, MODULE, "pipeline_1f1b_step", [(weights[r], biases[r], xs, ts, r, p) for r in range(p)])
    grad_w, grad_b, loss = golden.ref.reference_step(weights, biases, xs, ts)
    for rank, res in enumerate(results):
        assert_close(res.value[0], grad_w[rank], name=(f"rank {rank}: grad of W", f"rank {rank}：W 的梯度"),
                     mistakes=golden.ref.step_mistakes(weights, biases, xs, ts, rank))
        assert_close(res.value[1], grad_b[rank], name=(f"rank {rank}: grad of b", f"rank {rank}：b 的梯度"))
    assert_close(results[1].value[2], loss, name=("loss on the last rank", "最后一个 rank 上的损失"))


def test_1f1b_step_sends_in_1f1b_order_on_3_stages(impl, gen, golden):
    """Rank 1 warms up one forward, then alternates: activation to rank 2, gradient to rank 0 (GPipe sends all activations first)."""
    p, m = 3, 3
    weights, biases = [randn(2, 2, generator=gen) for _ in range(p)], [randn(2, generator=gen) for _ in range(p)]
    xs, ts = randn(m, 1, 2, generator=gen), randn(m, 1, 2, generator=gen)
    results = run_ranks(impl, MODULE, "pipeline_1f1b_step", [(weights[r], biases[r], xs, ts, r, p) for r in range(p)])
    if results[1].collectives:
        raise Mismatch(tr("part02.pipeline.collectives", rank=1, names=results[1].collectives))
    assert_equal([d for d, _ in results[1].sends], [2, 2, 0, 2, 0, 0], name=("rank 1: destinations of its sends",
                                                                             "rank 1：其发送的目标"),
                 mistakes={("GPipe order: all activations sent before any gradient", "GPipe 顺序：先发完所有激活再发梯度"):
                           [2, 2, 2, 0, 0, 0]})
