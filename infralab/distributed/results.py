"""What a run of ranks gives back (:class:`RankResult`), the names of ``torch.distributed``'s calls
the harness knows, and how a rank's exception reaches the test."""
from __future__ import annotations

import builtins
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infralab.distributed.accounting import Counts

# point-to-point functions every backend provides (and logs)
P2P = ("send", "recv", "isend", "irecv")
# collectives: refused unless allowed; the simulated group implements the ones in simulated.py
COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
               "reduce_scatter", "broadcast", "barrier", "all_to_all", "all_to_all_single", "reduce",
               "gather", "scatter", "batch_isend_irecv", "all_gather_object", "broadcast_object_list")
# error types re-raised as themselves in the test; anything else becomes RuntimeError
_BUILTIN_ERRORS = ("NotImplementedError", "ValueError", "RuntimeError", "TypeError", "IndexError",
                   "KeyError", "AssertionError", "ZeroDivisionError", "AttributeError", "TimeoutError")

Call = tuple[str, Sequence[tuple]]  # (function name, the positional arguments of each rank)


@dataclass
class RankResult:
    """What one rank's call returned, and the traffic it made.

    ``ops`` is every ``torch.distributed`` call of the rank, in order, as ``(kind, bytes)``
    (see :mod:`infralab.distributed.accounting` for what the bytes of each kind are);
    :meth:`traffic` sums it per kind."""

    value: Any
    sends: list[tuple[int, int]] = field(default_factory=list)  # (destination rank, numel)
    recvs: list[tuple[int, int]] = field(default_factory=list)  # (source rank, numel)
    collectives: list[str] = field(default_factory=list)  # names of dist collectives called
    ops: list[tuple[str, int]] = field(default_factory=list)  # (kind, bytes) of every call, in order

    def traffic(self) -> dict[str, "Counts"]:
        from infralab.distributed.accounting import traffic
        return traffic(self.ops)


class CollectiveNotAllowed(RuntimeError):
    """The exercise asks for the algorithm built from send/recv; a library collective was called."""


class BackendUnavailable(RuntimeError):
    """The machine cannot run this backend at this world size (e.g. NCCL with fewer GPUs than ranks)."""


def _rank_error(rank: int, type_name: str, message: str, where: str) -> BaseException:
    cls = getattr(builtins, type_name) if type_name in _BUILTIN_ERRORS else RuntimeError
    prefix = "" if cls.__name__ == type_name else f"{type_name}: "
    text = f"rank {rank}: {prefix}{message}" + (f"\n{where}" if where else "")
    return cls(text)


def _trimmed_traceback(exc: BaseException, limit: int = 4) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "infralab" not in f.filename and "torch" not in f.filename]
    return "".join(traceback.format_list(frames[-limit:])).rstrip()

