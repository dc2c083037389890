"""Hidden tests for part02_parallelism.pipeline (schedules, simulator, closed forms, the 1F1B step)."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.distributed import run_ranks
from infralab.mistakes.part02_parallelism.pipeline import (closed_form_mistakes, expected_1f1b, expected_gpipe,
                                                           expected_interleaved, expected_messages, gpipe_messages,
                                                           normalise, peak_1f1b, peak_interleaved, reference_step,
                                                           schedule_mistakes, step_mistakes)
from infralab.i18n import tr
from infralab.mistakes.part02_parallelism.gloo import run_ranks_on_gloo
from infralab.testing import Mismatch, assert_close, assert_equal, randn

MODULE = "part02_parallelism.pipeline"


def as_float(x):
    return torch.tensor(float(x), dtype=torch.float64)


# --- schedules

@given(p=st.integers(1, 5), m=st.integers(1, 9))
def test_gpipe_runs_every_forward_before_any_backward(impl, p, m):
    assert_equal(normalise(impl(MODULE).gpipe_schedule(p, m)), expected_gpipe(p, m), name=f"gpipe_schedule({p}, {m})")


@pytest.mark.weight(2)
@given(p=st.integers(1, 5), m=st.integers(1, 9))
def test_one_f_one_b_warms_up_p_minus_r_minus_1_forwards_then_alternates(impl, p, m):
    assert_equal(normalise(impl(MODULE).one_f_one_b_schedule(p, m)), expected_1f1b(p, m),
                 name=f"one_f_one_b_schedule({p}, {m})", mistakes=schedule_mistakes(p, m))


@pytest.mark.weight(2)
@pytest.mark.parametrize("p,v,m", [(2, 2, 2), (2, 2, 4), (4, 2, 8), (3, 3, 6), (4, 3, 4), (1, 2, 3)])
def test_interleaved_schedule_follows_megatron_order(impl, p, v, m):
    assert_equal(normalise(impl(MODULE).interleaved_schedule(p, v, m)), expected_interleaved(p, v, m),
                 name=f"interleaved_schedule({p}, {v}, {m})",
                 mistakes={("backward runs the chunks in forward order (chunk (k // p) % v, not v - 1 - that)",
                            "反向按前向的块顺序执行（应为 v - 1 - (k // p) % v）"):
                           expected_interleaved(p, v, m, reverse_backward_chunks=False)})


@pytest.mark.parametrize("p,m", [(2, 3), (4, 6), (3, 4)])
def test_interleaved_schedule_rejects_microbatches_not_a_multiple_of_stages(impl, p, m):
    with pytest.raises(ValueError):
        impl(MODULE).interleaved_schedule(p, 2, m)


# --- closed forms

@pytest.mark.parametrize("p,m,v", [(4, 8, 1), (2, 1, 1), (8, 32, 1), (4, 8, 2), (4, 4, 3), (1, 5, 1)])
def test_bubble_ratio_closed_form(impl, p, m, v):
    got = impl(MODULE).bubble_ratio(p, m, v)
    assert_close(as_float(got), as_float((p - 1) / (v * m + p - 1)), name=f"bubble_ratio({p}, {m}, {v})",
                 mistakes={k: as_float(x) for k, x in closed_form_mistakes(p, m, v).items()})


# --- the simulator, on the reference schedules

def simulated(impl, schedule, m, v=1):
    out = impl(MODULE).simulate(schedule, m, v)
    if not isinstance(out, dict) or not {"makespan", "bubble_ratio", "peak_in_flight"} <= set(out):
        raise Mismatch(tr("part02.pipeline.simulate_result", got=repr(out)[:200]))
    return out


@pytest.mark.weight(2)
@given(p=st.integers(1, 5), m=st.integers(1, 8))
def test_simulated_gpipe_and_1f1b_match_the_closed_form(impl, p, m):
    for name, schedule, peak in [("GPipe", expected_gpipe(p, m), [m] * p), ("1F1B", expected_1f1b(p, m), peak_1f1b(p, m))]:
        out = simulated(impl, schedule, m)
        assert_equal(int(out["makespan"]), 2 * (m + p - 1), name=f"{name} makespan, p={p}, m={m}")
        assert_close(as_float(out["bubble_ratio"]), as_float((p - 1) / (m + p - 1)), name=(f"{name} bubble ratio",
                                                                                           f"{name} 的气泡率"))
        assert_equal([int(x) for x in out["peak_in_flight"]], peak, name=(f"{name} peak in-flight micro-batches",
                                                                          f"{name} 在途 micro-batch 的峰值"))


@pytest.mark.weight(2)
@pytest.mark.parametrize("p,v,m", [(2, 2, 4), (4, 2, 8), (4, 3, 4), (3, 2, 6)])
def test_simulated_interleaved_matches_the_closed_form(impl, p, v, m):
    out = simulated(impl, expected_interleaved(p, v, m), m, v)
    assert_close(as_float(out["bubble_ratio"]), as_float((p - 1) / (v * m + p - 1)), name=(f"interleaved bubble p={p} v={v} m={m}",
                                                                                           f"交错调度的气泡率 p={p} v={v} m={m}"))
    assert_equal(int(out["makespan"]), 2 * (v * m + p - 1), name=("interleaved makespan in chunk ticks",
                                                                  "交错调度的 makespan（以块时间步计）"))
    assert_equal([int(x) for x in out["peak_in_flight"]], peak_interleaved(p, v, m), name=("interleaved peak in-flight",
                                                                                           "交错调度在途的峰值"))


def test_simulator_rejects_a_backward_before_its_forward(impl):
    schedule = expected_1f1b(2, 2)
    schedule[1] = [("B", 0, 0), ("F", 0, 0), ("F", 1, 0), ("B", 1, 0)]
    with pytest.raises(ValueError):
        impl(MODULE).simulate(schedule, 2, 1)


@pytest.mark.weight(2)
def test_simulator_rejects_a_cross_rank_deadlock(impl):
    """Rank 1 wants micro-batch 1 first; rank 0 sends it only after the backward of 0, which rank 1 never starts."""
    schedule = [[("F", 0, 0), ("B", 0, 0), ("F", 1, 0), ("B", 1, 0)],
                [("F", 1, 0), ("F", 0, 0), ("B", 0, 0), ("B", 1, 0)]]
    with pytest.raises(ValueError):
        impl(MODULE).simulate(schedule, 2, 1)


@pytest.mark.parametrize("case", ["missing", "duplicated", "wrong chunk"])
def test_simulator_rejects_a_schedule_that_misses_or_repeats_an_action(impl, case):
    schedule = expected_gpipe(2, 3)
    if case == "missing":
        schedule[0] = schedule[0][:-1]
    elif case == "duplicated":
        schedule[1] = schedule[1] + [("F", 0, 0)]
    else:
        schedule[1][0] = ("F", 0, 1)
    with pytest.raises(ValueError):
        impl(MODULE).simulate(schedule, 3, 1)


@pytest.mark.weight(2)
def test_simulator_waits_for_the_gradient_of_the_next_stage(impl):
    """Rank 0's B0 must wait for rank 1's B0 (tick 3): a simulator that lets it run at tick 2 finishes early."""
    schedule = [[("F", 0, 0), ("B", 0, 0)], [("F", 0, 0), ("B", 0, 0)]]
    out = simulated(impl, schedule, 1)
    assert_equal(int(out["makespan"]), 4, name=("makespan of one micro-batch on two stages",
                                                "一个 micro-batch 在两个 stage 上的 makespan"),
                 mistakes={("the backward did not wait for the next stage's backward (its gradient)",
                            "反向没有等待下一段的反向（梯度还没到）"): 3})


@pytest.mark.weight(2)
def test_simulator_times_a_schedule_that_does_not_overlap_microbatches(impl):
    """Both ranks run F i, B i, F i+1, ...: rank 0's next forward waits for the backward to come back, so the
    makespan is 8 ticks, not the closed form's 2 (m + p - 1) = 6: the answer must come from simulating."""
    sequential = [("F", 0, 0), ("B", 0, 0), ("F", 1, 0), ("B", 1, 0)]
    out = simulated(impl, [list(sequential), list(sequential)], 2)
    assert_equal(int(out["makespan"]), 8, name=("makespan of F0 B0 F1 B1 on both of 2 ranks",
                                                "2 个 rank 上都是 F0 B0 F1 B1 时的 makespan"))
    assert_close(as_float(out["bubble_ratio"]), as_float(0.5), name=("its bubble ratio (8 busy of 16 rank-ticks)",
                                                                     "其气泡率（16 个 rank-时间步中忙 8 个）"))
    assert_equal([int(x) for x in out["peak_in_flight"]], [1, 1], name=("its peak in-flight micro-batches",
                                                                        "其在途 micro-batch 的峰值"))


# --- the real 1F1B step

def step_inputs(p, m, b, d, g, dtype=torch.float32):
    weights = [randn(d, d, generator=g, dtype=dtype) * 0.5 for _ in range(p)]
    biases = [randn(d, generator=g, dtype=dtype) * 0.1 for _ in range(p)]
    return weights, biases, randn(m, b, d, generator=g, dtype=dtype), randn(m, b, d, generator=g, dtype=dtype)


def check_step(results, weights, biases, xs, ts, where):
    gw, gb, loss = reference_step(weights, biases, xs, ts)
    p = len(weights)
    for rank, res in enumerate(results):
        if not isinstance(res.value, (tuple, list)) or len(res.value) != 3:
            raise Mismatch(tr("part02.pipeline.step_result", where=where, rank=rank, got=type(res.value).__name__))
        assert_close(res.value[0], gw[rank], name=(f"{where}rank {rank}: grad of W", f"{where}rank {rank}：W 的梯度"),
                     mistakes=step_mistakes(weights, biases, xs, ts, rank))
        assert_close(res.value[1], gb[rank], name=(f"{where}rank {rank}: grad of b", f"{where}rank {rank}：b 的梯度"))
    last = results[p - 1].value[2]
    assert_close(last, loss, name=(f"{where}loss on the last rank", f"{where}最后一个 rank 上的损失"))


@pytest.mark.weight(3)
@pytest.mark.parametrize("p,m", [(2, 1), (2, 4), (3, 5), (4, 4), (4, 2)])
def test_1f1b_step_gradients_equal_the_unpipelined_model(impl, gen, p, m):
    weights, biases, xs, ts = step_inputs(p, m, 2, 4, gen)
    results = run_ranks(impl, MODULE, "pipeline_1f1b_step", [(weights[r], biases[r], xs, ts, r, p) for r in range(p)])
    check_step(results, weights, biases, xs, ts, "")


@pytest.mark.weight(2)
@pytest.mark.parametrize("p,m", [(3, 4), (4, 6)])
def test_1f1b_step_messages_follow_the_1f1b_order(impl, gen, p, m):
    """One message per activation and per gradient, to the neighbours, in 1F1B order (not GPipe's)."""
    weights, biases, xs, ts = step_inputs(p, m, 2, 3, gen)
    results = run_ranks(impl, MODULE, "pipeline_1f1b_step", [(weights[r], biases[r], xs, ts, r, p) for r in range(p)])
    for rank, res in enumerate(results):
        if res.collectives:
            raise Mismatch(tr("part02.pipeline.collectives", rank=rank, names=res.collectives))
        sizes = [n for _, n in res.sends + res.recvs]
        if any(n != 2 * 3 for n in sizes):
            raise Mismatch(tr("part02.pipeline.message_sizes", rank=rank, sizes=sizes, numel=2 * 3))
        want_sends, want_recvs = expected_messages(p, m, rank)
        gp_sends, _ = gpipe_messages(p, m, rank)
        assert_equal([d for d, _ in res.sends], want_sends, name=(f"rank {rank}: destinations of its sends, in order",
                                                                  f"rank {rank}：其发送的目标（按顺序）"),
                     mistakes={("GPipe order: all activations sent before any gradient", "GPipe 顺序：先发完所有激活再发梯度"):
                               gp_sends})
        assert_equal([s for s, _ in res.recvs], want_recvs, name=(f"rank {rank}: sources of its receives, in order",
                                                                  f"rank {rank}：其接收的来源（按顺序）"))


def test_1f1b_step_in_float64_leaves_inputs_untouched(impl, gen):
    weights, biases, xs, ts = step_inputs(2, 3, 3, 4, gen, dtype=torch.float64)
    before = [w.clone() for w in weights]
    results = run_ranks(impl, MODULE, "pipeline_1f1b_step", [(weights[r], biases[r], xs, ts, r, 2) for r in range(2)])
    check_step(results, weights, biases, xs, ts, "float64: ")
    if not all(torch.equal(w, b) for w, b in zip(weights, before)):
        raise Mismatch(tr("part02.pipeline.modified_input"))
    if results[0].value[2] is not None:
        raise Mismatch(tr("part02.pipeline.loss_not_none", rank=0, got=repr(results[0].value[2])[:80]))


@pytest.mark.timeout(120)
@pytest.mark.weight(2)
def test_1f1b_step_on_real_gloo_processes(impl):
    """The transport on real processes; values are swept over seeds on the simulated group. Fixed inputs keep
    this ~2 s process start out of the 60-seed soundness sweep (a gloo start per seed would cost minutes)."""
    weights, biases, xs, ts = step_inputs(2, 3, 2, 4, torch.Generator().manual_seed(1234))
    results = run_ranks_on_gloo(impl, MODULE, "pipeline_1f1b_step",
                                [(weights[r], biases[r], xs, ts, r, 2) for r in range(2)])
    check_step(results, weights, biases, xs, ts, "gloo: ")
