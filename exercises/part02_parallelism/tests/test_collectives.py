"""Visible tests for part02_parallelism.collectives: run with `pytest exercises/part02_parallelism`.

Your functions run on every rank at once: on a simulated group (threads, `backend="sim"`) and on
real torch.distributed gloo processes (`backend="gloo"`). `run_ranks` returns, per rank, the
value your function returned and the messages it sent and received.
"""
import pytest
import torch

from infralab.distributed import assert_ring_traffic, run_ranks
from infralab.testing import assert_close, assert_equal, randn

MODULE = "part02_parallelism.collectives"


def test_chunk_bounds_of_7_over_3(impl):
    assert_equal(impl(MODULE).chunk_bounds(7, 3), [(0, 3), (3, 5), (5, 7)])


@pytest.mark.parametrize("n", [2, 3])
def test_ring_all_reduce_sums_an_uneven_tensor(impl, gen, n):
    xs = [randn(7, 3, generator=gen) for _ in range(n)]
    results = run_ranks(impl, MODULE, "ring_all_reduce", [(x, r, n) for r, x in enumerate(xs)])
    for rank, res in enumerate(results):
        assert_close(res.value, torch.stack(xs).sum(0), name=f"rank {rank}")


def test_ring_all_reduce_is_a_ring(impl, gen):
    """2(n-1) messages per rank, each one chunk (about 1/n of the data), to rank + 1."""
    xs = [randn(10, generator=gen) for _ in range(3)]
    results = run_ranks(impl, MODULE, "ring_all_reduce", [(x, r, 3) for r, x in enumerate(xs)])
    assert_ring_traffic(results, 10, 3, phases=2, name="ring_all_reduce")


def test_ring_all_gather_matches_torch_cat(impl, gen):
    xs = [randn(2, 4, generator=gen) for _ in range(3)]
    results = run_ranks(impl, MODULE, "ring_all_gather", [(x, r, 3) for r, x in enumerate(xs)])
    for rank, res in enumerate(results):
        assert_close(res.value, torch.cat(xs), name=f"rank {rank}")


@pytest.mark.timeout(120)
def test_ring_all_reduce_on_gloo(impl, gen):
    xs = [randn(5, generator=gen) for _ in range(2)]
    results = run_ranks(impl, MODULE, "ring_all_reduce", [(x, r, 2) for r, x in enumerate(xs)], backend="gloo")
    for rank, res in enumerate(results):
        assert_close(res.value, xs[0] + xs[1], name=(f"gloo rank {rank}", f"gloo 后端的 rank {rank}"))


def test_all_reduce_bus_bandwidth_on_8_ranks(impl):
    algbw, busbw = impl(MODULE).bus_bandwidth("all_reduce", 10**9, 0.01, 8)
    assert_close(torch.tensor([algbw, busbw], dtype=torch.float64),
                 torch.tensor([100.0, 100.0 * 2 * 7 / 8], dtype=torch.float64))
