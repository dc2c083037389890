"""The SPMD harness (infralab.distributed): results, traffic logs, errors, deadlocks, never hanging."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from infralab.distributed import (
    CollectiveNotAllowed, Counts, RankResult, _run_simulated, assert_ring_traffic, assert_traffic, backend_unavailable,
    decode, encode, run_trusted_calls,
)
from infralab.testing import Mismatch

THIS = sys.modules[__name__]


def pass_right(x, rank, n):
    out = torch.empty_like(x)
    req = dist.isend(x, (rank + 1) % n)
    dist.recv(out, (rank - 1) % n)
    req.wait()
    return out


def everyone_sends_first(x, rank, n):
    dist.send(x, (rank + 1) % n)
    dist.recv(x, (rank - 1) % n)
    return x


def rank_one_fails(x, rank, n):
    if rank == 1:
        raise ValueError("rank one refuses")
    dist.recv(x, 1)  # would wait forever for rank 1
    return x


def library_all_reduce(x, rank, n):
    dist.all_reduce(x)
    return x


def sim(function, xs, allow_collectives=False, timeout_s=10.0):
    n = len(xs)
    return _run_simulated(THIS, [(function, [(x, r, n) for r, x in enumerate(xs)])], n, allow_collectives,
                          timeout_s)[0]


def test_simulated_ring_passes_tensors_and_logs_traffic():
    xs = [torch.full((3,), float(r)) for r in range(3)]
    results = sim("pass_right", xs)
    for rank, res in enumerate(results):
        assert torch.equal(res.value, xs[(rank - 1) % 3])
        assert res.sends == [((rank + 1) % 3, 3)] and res.recvs == [((rank - 1) % 3, 3)]
    assert dist.send is not None and "infralab" not in getattr(dist.send, "__module__", "")  # restored


def test_simulated_deadlock_is_reported_at_once():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="deadlock"):
        sim("everyone_sends_first", [torch.ones(2) for _ in range(3)])
    assert time.monotonic() - t0 < 5


def test_simulated_rank_error_keeps_its_type_and_stops_the_others():
    with pytest.raises(ValueError, match="rank 1: rank one refuses"):
        sim("rank_one_fails", [torch.ones(2) for _ in range(3)])


def test_library_collectives_are_refused_unless_allowed():
    with pytest.raises(RuntimeError, match="not allowed"):
        sim("library_all_reduce", [torch.ones(2), torch.ones(2)])
    results = sim("library_all_reduce", [torch.ones(2), 2 * torch.ones(2)], allow_collectives=True)
    assert all(torch.equal(r.value, 3 * torch.ones(2)) and r.collectives == ["all_reduce"] for r in results)
    assert issubclass(CollectiveNotAllowed, RuntimeError)


def test_ring_traffic_check_names_an_all_to_one_reduction():
    star = [RankResult(None, sends=[(1, 8), (2, 8)], recvs=[(1, 8), (2, 8)]),
            RankResult(None, sends=[(0, 8)], recvs=[(0, 8)]), RankResult(None, sends=[(0, 8)], recvs=[(0, 8)])]
    with pytest.raises(Mismatch, match="all-to-one"):
        assert_ring_traffic(star, 8, 3, phases=2)


def test_data_round_trips_without_pickle():
    value = {"a": (torch.arange(3), [1.5, None, "x"]), "b": torch.float16, "c": torch.zeros(0, 2)}
    back = decode(encode(value))
    assert torch.equal(back["a"][0], value["a"][0]) and back["a"][1] == [1.5, None, "x"]
    assert back["b"] is torch.float16 and back["c"].shape == (0, 2)
    with pytest.raises(TypeError):
        encode(object())


@pytest.mark.timeout(120)
def test_gloo_runs_ranks_and_logs_traffic():
    (results,) = run_trusted_calls(Path(__file__), [("pass_right", [(torch.full((2,), float(r)), r, 2) for r in range(2)])],
                                   2, allow_collectives=False)
    assert torch.equal(results[0].value, torch.ones(2)) and results[0].sends == [(1, 2)]


@pytest.mark.timeout(120)
def test_gloo_deadlock_ends_within_the_timeout():
    t0 = time.monotonic()
    with pytest.raises((RuntimeError, TimeoutError)):
        run_trusted_calls(Path(__file__), [("everyone_sends_first", [(torch.ones(2), r, 2) for r in range(2)])], 2,
                          timeout_s=5)
    assert time.monotonic() - t0 < 60


@pytest.mark.timeout(120)
def test_gloo_rank_error_is_reported_and_the_waiting_ranks_are_killed():
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="rank one refuses"):
        run_trusted_calls(Path(__file__), [("rank_one_fails", [(torch.ones(2), r, 3) for r in range(3)])], 3,
                          timeout_s=60)
    assert time.monotonic() - t0 < 45, "the ranks waiting on the failed one were not stopped early"


def send_more_than_posted(rank, n):
    """Rank 0 sends 6 elements where rank 1 posted a receive for 4 (gloo aborts rank 1's process on this)."""
    if rank == 0:
        dist.send(torch.ones(6), 1)
        return None
    buffer = torch.empty(4)
    dist.recv(buffer, 0)
    return buffer


def all_to_all_with_rank_dependent_chunks(rank, n):
    """Every rank sends chunks of rank + 1 elements but expects chunks of its own size back."""
    outs = [torch.empty(rank + 1) for _ in range(n)]
    dist.all_to_all(outs, [torch.full((rank + 1,), float(rank)) for _ in range(n)])
    return outs


def all_to_all_single_with_rows_that_disagree(rank, n):
    """Rank 1 sends 3 rows to rank 0, which expects 2 (gloo aborts rank 0's process on this)."""
    ins, outs, out_rows = ([2, 2], [2, 2], 4) if rank == 0 else ([3, 1], [2, 1], 3)
    out = torch.empty(out_rows, 2)
    dist.all_to_all_single(out, torch.ones(4, 2), outs, ins)
    return out


def all_reduce_twice(x, rank, n):
    dist.all_reduce(x)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    return x


def test_simulated_size_mismatch_names_both_ends():
    with pytest.raises(RuntimeError, match="posted recv.src=0. for 4 float32 elements but rank 0 sent 6"):
        _run_simulated(THIS, [("send_more_than_posted", [(r, 2) for r in range(2)])], 2, False, 10.0)


def test_simulated_all_to_all_with_chunks_that_differ_across_ranks_is_an_error():
    with pytest.raises(RuntimeError, match="dist.all_to_all: rank 0 expects 1 float32 elements from rank 1"):
        _run_simulated(THIS, [("all_to_all_with_rank_dependent_chunks", [(r, 3) for r in range(3)])], 3, True, 10.0)


def test_accounting_counts_calls_and_bytes_per_kind():
    results = sim("all_reduce_twice", [torch.ones(5), torch.ones(5)], allow_collectives=True)
    assert all(r.traffic() == {"all_reduce": Counts(2, 40)} for r in results)
    assert_traffic(results, {"all_reduce": Counts(2, 40)})
    with pytest.raises(Mismatch, match="(?s)rank 0 communicated all_reduce: 2 call.s., 40 bytes.*looks like: twice"):
        assert_traffic(results, {"all_reduce": Counts(1, 20)}, mistakes={"twice": {"all_reduce": Counts(2, 40)}})


def test_accounting_takes_one_expectation_and_one_pattern_per_rank():
    """Uneven exchanges (an all-to-all of routed tokens) move different bytes on every rank."""
    results = sim("all_reduce_twice", [torch.ones(5), torch.ones(5)], allow_collectives=True)
    results[1].ops.append(("send", 8))
    assert_traffic(results, [{"all_reduce": Counts(2, 40)}, {"all_reduce": Counts(2, 40), "send": Counts(1, 8)}])
    pattern = [lambda t: False, lambda t: "send" in t]
    with pytest.raises(Mismatch, match="(?s)rank 1 communicated all_reduce.*send: 1 call.s., 8 bytes.*like: sent"):
        assert_traffic(results, {"all_reduce": Counts(2, 40)}, mistakes={"sent": pattern})


@pytest.mark.timeout(120)
@pytest.mark.parametrize("function,world_size,message", [
    ("send_more_than_posted", 2, "posted recv.src=0. for 4 float32 elements but rank 0 sent 6"),
    ("all_to_all_single_with_rows_that_disagree", 2,
     "dist.all_to_all_single: rank 0 expects 4 float32 elements from rank 1, which sends it 6"),
])
def test_gloo_size_mismatch_is_a_clear_error_not_an_abort(function, world_size, message):
    """gloo itself aborts the receiving process ('terminate called after throwing an instance of
    gloo::EnforceNotMet', measured on torch 2.13); the harness compares the sizes first."""
    with pytest.raises(RuntimeError, match=message):
        run_trusted_calls(Path(__file__), [(function, [(r, world_size) for r in range(world_size)])], world_size,
                          timeout_s=20)


def test_nccl_without_a_gpu_per_rank_says_why():
    reason = backend_unavailable("nccl", torch.cuda.device_count() + 1)
    assert reason and "GPU" in reason
