"""Cross-check: part02_parallelism.pipeline's interleaved schedule (the reference solution) against the order
of torch.distributed.pipelining's ``ScheduleInterleaved1F1B``.

torch computes each rank's actions in ``_calculate_single_rank_operations(rank)`` (a private method: this
test skips, saying so, if a torch release renames it) as a time-aligned list with ``None`` for idle slots;
without the ``None`` it is the order of (FORWARD or FULL_BACKWARD, micro-batch, stage) the rank runs. Where
m is a multiple of p (our precondition; torch also accepts other m) it equals ours, with stage =
chunk * p + rank. The idle slots are not compared: torch's timeline also reserves slots for communication,
so its lengths are not our unit-time makespan.
"""
from __future__ import annotations

import types

import pytest

from infralab.testing import assert_equal
from solutions.part02_parallelism.pipeline import interleaved_schedule

schedules = pytest.importorskip("torch.distributed.pipelining.schedules", reason="torch without pipelining")


def torch_order(p: int, v: int, m: int) -> list[list[tuple[str, int, int]]]:
    method = getattr(schedules.ScheduleInterleaved1F1B, "_calculate_single_rank_operations", None)
    if method is None:
        pytest.skip("this torch has no ScheduleInterleaved1F1B._calculate_single_rank_operations")
    fake = types.SimpleNamespace(n_local_stages=v, pp_group_size=p, _n_microbatches=m,
                                 microbatches_per_round=m // max(1, m // p))
    kinds = {schedules._ComputationType.FORWARD: "F", schedules._ComputationType.FULL_BACKWARD: "B"}
    return [[(kinds[a.computation_type], a.microbatch_index, a.stage_index) for a in method(fake, r) if a is not None]
            for r in range(p)]


@pytest.mark.parametrize("p,v,m", [(2, 2, 2), (2, 2, 4), (4, 2, 8), (4, 3, 4), (3, 2, 6), (2, 3, 4)])
def test_interleaved_schedule_equals_torch_interleaved_1f1b(p, v, m):
    ours = [[(kind, i, chunk * p + rank) for kind, i, chunk in actions]
            for rank, actions in enumerate(interleaved_schedule(p, v, m))]
    assert_equal(ours, torch_order(p, v, m), name=f"per-rank order, p={p}, v={v}, m={m}")
