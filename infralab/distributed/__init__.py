"""Run an SPMD function of the implementation under test on N ranks, and count its messages.

Distributed exercises (part02_parallelism) are written the way real code is: one function that
every rank runs, taking ``rank`` and ``world_size`` and talking through ``torch.distributed``
(``dist.send``, ``dist.recv``, ``dist.isend``, ``dist.irecv``; collectives where the exercise
allows them). Tests never pass a communicator object: they call :func:`run_ranks` with the
name of the function and the data each rank gets, and the ranks run on a group:

- ``backend="sim"`` (:mod:`.simulated`): one thread per rank in this process;
- ``backend="gloo"`` / ``"nccl"`` (:mod:`.processes`): one local process per rank (per GPU for NCCL).

Every backend logs each call of each rank (:mod:`.accounting`: messages, collectives, bytes
per kind) and checks that the ranks agree on sizes before a message or collective is made
(:mod:`.agreement`), so a wrong size is an error, never a gloo abort. Values cross between
processes as data only (:mod:`.codec`). Collectives are refused unless the test allows them
(``allow_collectives=True``): "build it from send/recv" exercises cannot call ``dist.all_reduce``.
In the isolated grading mode the target object itself runs the ranks (it must offer
``run_ranks(module, calls, world_size, backend, allow_collectives, timeout_s)`` with this
module's return shape); the judge decides how to cage them.

The modules: results (RankResult, errors), run (run_ranks, run_calls), simulated, processes,
agreement, accounting, codec. Every public name is importable from ``infralab.distributed``.
"""
from __future__ import annotations

from infralab.distributed.accounting import (
    Counts, assert_ring_traffic, assert_traffic, describe_traffic, nbytes, op_record, traffic,
)
from infralab.distributed.agreement import StoreAgreement, collective_disagreement, describe, p2p_disagreement
from infralab.distributed.codec import decode, encode
from infralab.distributed.processes import (
    REAL_BACKENDS, _CONTEXT, _context, _count_traffic, _gloo_rank, _load_file, _rank_process, _run_gloo,
    _run_processes, backend_unavailable, run_trusted_calls,
)
from infralab.distributed.results import (
    _BUILTIN_ERRORS, COLLECTIVES, P2P, BackendUnavailable, Call, CollectiveNotAllowed, RankResult, _rank_error,
    _trimmed_traceback,
)
from infralab.distributed.run import BACKENDS, run_calls, run_ranks
from infralab.distributed.simulated import (
    _PATCH_LOCK, _TLS, _Aborted, _Done, _reduce_sum, _run_simulated, _sim, _sim_functions, _SimGroup, _simulate_call,
    _unsupported, _Work,
)
