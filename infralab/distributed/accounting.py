"""Communication accounting: what each ``torch.distributed`` call of a rank moves, and checks on it.

Every backend logs each call of a rank as ``(kind, bytes)`` in :attr:`RankResult.ops`. The
kind is the function's name with ``isend``/``irecv`` counted as ``send``/``recv``. The bytes
follow nccl-tests' size convention (the number a bandwidth figure divides):

- ``send``/``recv``, ``all_reduce``, ``broadcast``, ``reduce``, ``gather``, ``scatter``: the tensor;
- ``all_gather``, ``all_gather_into_tensor``: the gathered output (all ranks' parts);
- ``reduce_scatter``, ``reduce_scatter_tensor``, ``all_to_all``, ``all_to_all_single``: the input;
- ``barrier`` and the ``*_object`` calls: 0.

So "one all-reduce of the (batch, hidden) activation in fp32" is ``{"all_reduce": Counts(1,
batch * hidden * 4)}``, and a rank that all-gathers a whole (out, in) weight shows an
``all_gather_into_tensor`` of ``out * in * 4`` bytes.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

# where the tensor(s) that define the size sit: (position, keyword) in the call's arguments
_SIZE_ARGUMENT = {
    "send": (0, "tensor"), "recv": (0, "tensor"), "isend": (0, "tensor"), "irecv": (0, "tensor"),
    "all_reduce": (0, "tensor"), "broadcast": (0, "tensor"), "reduce": (0, "tensor"),
    "gather": (0, "tensor"), "scatter": (0, "tensor"),
    "all_gather": (0, "tensor_list"), "all_gather_into_tensor": (0, "output_tensor"),
    "reduce_scatter": (1, "input_list"), "reduce_scatter_tensor": (1, "input"),
    "all_to_all": (1, "input_tensor_list"), "all_to_all_single": (1, "input"),
}
_KIND = {"isend": "send", "irecv": "recv"}


@dataclass(frozen=True)
class Counts:
    """How many calls of one kind a rank made, and the bytes they moved."""

    calls: int
    bytes: int

    def __str__(self) -> str:
        return f"{self.calls} call(s), {self.bytes} bytes"


def nbytes(x: Any) -> int:
    """Bytes of a tensor, or of a list/tuple of tensors; 0 for anything else."""
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(nbytes(t) for t in x)
    return 0


def argument(args: Sequence, kwargs: Mapping, position: int, keyword: str) -> Any:
    """A call's argument by position or keyword (None when absent)."""
    return args[position] if len(args) > position else kwargs.get(keyword)


def op_record(name: str, args: Sequence, kwargs: Mapping) -> tuple[str, int]:
    """``(kind, bytes)`` of one ``torch.distributed`` call, as logged in :attr:`RankResult.ops`."""
    where = _SIZE_ARGUMENT.get(name)
    size = nbytes(argument(args, kwargs, *where)) if where else 0
    return _KIND.get(name, name), size


def traffic(ops: Sequence[tuple[str, int]]) -> dict[str, Counts]:
    """Calls and bytes per kind."""
    calls: dict[str, int] = {}
    total: dict[str, int] = {}
    for kind, size in ops:
        calls[kind] = calls.get(kind, 0) + 1
        total[kind] = total.get(kind, 0) + int(size)
    return {k: Counts(calls[k], total[k]) for k in sorted(calls)}


def describe_traffic(counts: Mapping[str, Counts]) -> str:
    return "; ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no communication"


def _of_rank(value: Any, rank: int) -> Any:
    """``value[rank]`` for a per-rank list or tuple, else ``value`` (the same for every rank)."""
    return value[rank] if isinstance(value, (list, tuple)) else value


def assert_traffic(results: Sequence[Any], expected: Mapping[str, Counts] | Sequence[Mapping[str, Counts]],
                   name: str = "traffic", mistakes: Mapping[Any, Any] | None = None) -> None:
    """Every rank's traffic (per kind: calls and bytes) is exactly ``expected``; raise Mismatch
    otherwise, naming the known mistake (a label of ``mistakes``) whose traffic it equals (or, for a
    callable, whose test ``pattern(traffic) -> bool`` it passes). ``expected`` and each pattern may
    also be a list with one entry per rank, where the ranks' traffic differs (e.g. uneven all-to-alls)."""
    from infralab.i18n import localized, tr
    from infralab.testing import Mismatch

    for rank, result in enumerate(results):
        got = traffic(result.ops)
        want = {k: v for k, v in _of_rank(expected, rank).items() if v.calls}
        if got == want:
            continue
        diagnosis = None
        for label, patterns in (mistakes or {}).items():
            pattern = _of_rank(patterns, rank)
            if pattern(got) if callable(pattern) else got == {k: v for k, v in pattern.items() if v.calls}:
                diagnosis = localized(label) if isinstance(label, tuple) else label
                break
        raise Mismatch(tr("distributed.traffic_differs", name=name, rank=rank, got=describe_traffic(got),
                          expected=describe_traffic(want)), diagnosis)


def assert_ring_traffic(results: Sequence[Any], numel: int, world_size: int, phases: int,
                        name: str = "traffic") -> None:
    """Every rank sent ``phases * (n - 1)`` messages to rank + 1 and received as many from rank - 1,
    each of one chunk's size (``numel // n`` or ``numel // n + 1`` elements); raise Mismatch otherwise."""
    from infralab.i18n import tr
    from infralab.testing import Mismatch

    n = world_size
    want = phases * (n - 1)
    small, large = numel // n, -(-numel // n)
    for rank, result in enumerate(results):
        nxt, prev = (rank + 1) % n, (rank - 1) % n
        where = f"{name}: rank {rank}"
        if result.collectives:
            raise Mismatch(tr("distributed.ring_used_collectives", where=where, names=result.collectives))
        too_big = [m for m in result.sends + result.recvs if m[1] > large]
        if too_big:
            raise Mismatch(tr("distributed.ring_message_too_big", where=where, size=too_big[0][1], small=small,
                              large=large, numel=numel), tr("distributed.ring_all_to_one"))
        strangers = sorted({d for d, _ in result.sends if d != nxt} | {s for s, _ in result.recvs if s != prev})
        if strangers:
            raise Mismatch(tr("distributed.ring_strangers", where=where, strangers=strangers, nxt=nxt, prev=prev),
                           tr("distributed.ring_not_neighbours"))
        if len(result.sends) != want or len(result.recvs) != want:
            diagnosis = tr("distributed.ring_n_steps", n=n, n1=n - 1) if len(result.sends) == phases * n else None
            raise Mismatch(tr("distributed.ring_message_count", where=where, sent=len(result.sends),
                              received=len(result.recvs), want=want, phases=phases, n1=n - 1), diagnosis)
        bad = [m for m in result.sends + result.recvs if m[1] < small]
        if bad:
            raise Mismatch(tr("distributed.ring_message_too_small", where=where, size=bad[0][1], small=small,
                              large=large))
