"""The simulated group: every rank a thread of this process, ``torch.distributed`` swapped for
functions that move tensors between the threads.

``send`` is a rendezvous (it returns when the receiver has taken the tensor), as on gloo
(measured: a ring where every rank calls ``dist.send`` first deadlocks on gloo even for 10
elements). A deadlock (every live rank waiting) is detected at once and reported; a rank's
exception stops the others. Messages are matched in posting order per (source, destination)
pair; a size or dtype that differs between the two ends is an error (:mod:`.agreement`), and
so is a collective whose ranks pass sizes that cannot work together. Every call is logged for
:mod:`.accounting`. This module is shipped into the judge's cage: it imports only torch, the
standard library, and its siblings results/accounting/agreement (and the i18n catalogue).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist

from infralab.distributed.accounting import op_record
from infralab.distributed.agreement import collective_disagreement, describe, p2p_disagreement
from infralab.distributed.results import (
    COLLECTIVES, Call, CollectiveNotAllowed, RankResult, _rank_error, _trimmed_traceback,
)
from infralab.i18n import tr


class _Aborted(BaseException):
    """Raised inside a simulated rank when another rank failed: unwinds without being reported."""


class _Work:
    """What isend/irecv return: ``wait()`` blocks until the message has been matched."""

    def __init__(self, group: "_SimGroup", rank: int, entry: dict):
        self._group, self._rank, self._entry = group, rank, entry

    def wait(self, timeout: Any = None) -> bool:
        self._group.wait_until(self._rank, lambda: self._entry["done"], self._entry["what"])
        return True

    def is_completed(self) -> bool:
        return self._entry["done"]


class _SimGroup:
    """Mailboxes between ranks, matched in posting order per (source, destination) pair."""

    def __init__(self, world_size: int, allow_collectives: bool, timeout_s: float):
        self.n = world_size
        self.allow_collectives = allow_collectives
        self.timeout_s = timeout_s
        self.cond = threading.Condition()
        self.sends: dict[tuple[int, int], deque] = {}
        self.recvs: dict[tuple[int, int], deque] = {}
        self.live = world_size
        self.waiting: dict[int, tuple[str, Any]] = {}  # rank -> (what it waits in, its readiness test)
        self.error: tuple[int, BaseException] | None = None
        self.rounds: dict[int, dict] = {}
        self.round_of = [0] * world_size
        self.logs = [RankResult(None) for _ in range(world_size)]

    # --- blocking, deadlock detection, abort
    def wait_until(self, rank: int, ready, what: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        with self.cond:
            while not ready():
                if self.error is not None:
                    raise _Aborted()
                self.waiting[rank] = (what, ready)
                if len(self.waiting) == self.live and not any(r() for _, r in self.waiting.values()):
                    blocked = "; ".join(f"rank {r}: {w}" for r, (w, _) in sorted(self.waiting.items()))
                    self.fail(rank, RuntimeError(tr("distributed.deadlock", blocked=blocked)))
                    raise _Aborted()
                left = deadline - time.monotonic()
                if left <= 0:
                    self.fail(rank, TimeoutError(tr("distributed.waited_too_long", rank=rank, seconds=f"{self.timeout_s:g}",
                                                   what=what)))
                    raise _Aborted()
                self.cond.wait(min(left, 1.0))
                self.waiting.pop(rank, None)
            self.waiting.pop(rank, None)

    def fail(self, rank: int, exc: BaseException) -> None:
        with self.cond:
            if self.error is None:
                self.error = (rank, exc)
            self.cond.notify_all()

    def finished(self) -> None:
        with self.cond:
            self.live -= 1
            self.cond.notify_all()

    # --- point to point
    def _match(self, key: tuple[int, int]) -> None:
        sends, recvs = self.sends.get(key), self.recvs.get(key)
        while sends and recvs:
            s, r = sends.popleft(), recvs.popleft()
            src, dst = key
            problem = p2p_disagreement(src, dst, _numel_dtype(s["tensor"]), _numel_dtype(r["tensor"]))
            if problem:
                self.error = self.error or (dst, RuntimeError(problem))
            else:
                r["tensor"].copy_(s["tensor"].reshape(r["tensor"].shape))
            s["done"] = r["done"] = True
        self.cond.notify_all()

    def post_send(self, rank: int, tensor: torch.Tensor, dst: int) -> dict:
        self._check_peer(rank, dst, "dst")
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(tr("distributed.not_a_tensor", call="send", got=type(tensor).__name__))
        entry = {"tensor": tensor.detach().clone(), "done": False, "what": f"send(dst={dst})"}
        with self.cond:
            self.logs[rank].sends.append((dst, tensor.numel()))
            self.logs[rank].ops.append(op_record("send", (tensor,), {}))
            self.sends.setdefault((rank, dst), deque()).append(entry)
            self._match((rank, dst))
        return entry

    def post_recv(self, rank: int, tensor: torch.Tensor, src: int | None) -> dict:
        if src is None:
            raise RuntimeError(tr("distributed.recv_any_source"))
        self._check_peer(rank, src, "src")
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(tr("distributed.not_a_tensor", call="recv", got=type(tensor).__name__))
        entry = {"tensor": tensor, "done": False, "what": f"recv(src={src})"}
        with self.cond:
            self.logs[rank].recvs.append((src, tensor.numel()))
            self.logs[rank].ops.append(op_record("recv", (tensor,), {}))
            self.recvs.setdefault((src, rank), deque()).append(entry)
            self._match((src, rank))
        return entry

    def _check_peer(self, rank: int, peer: Any, name: str) -> None:
        if not isinstance(peer, int) or not 0 <= peer < self.n:
            raise ValueError(tr("distributed.bad_peer", name=name, peer=repr(peer), n=self.n))
        if peer == rank:
            raise ValueError(tr("distributed.self_peer", rank=rank, name=name, peer=peer))

    # --- collectives (only where the exercise allows them)
    def collective(self, rank: int, name: str, args: Sequence, kwargs: dict, tensor: Any, compute) -> Any:
        """Post this rank's part of the next collective, wait for every rank's, check that they
        agree (same collective, sizes that fit), then return ``compute(parts in rank order)``."""
        if not self.allow_collectives:
            raise CollectiveNotAllowed(tr("distributed.collective_not_allowed", name=name))
        with self.cond:
            self.logs[rank].collectives.append(name)
            self.logs[rank].ops.append(op_record(name, args, kwargs))
            index = self.round_of[rank]
            self.round_of[rank] += 1
            entry = self.rounds.setdefault(index, {"names": {}, "descs": {}, "parts": {}})
            entry["names"][rank] = name
            entry["descs"][rank] = describe(name, args, kwargs, self.n)
            entry["parts"][rank] = _detached(tensor)
            self.cond.notify_all()
        self.wait_until(rank, lambda: len(entry["parts"]) == self.n, f"dist.{name}")
        names = [entry["names"][r] for r in range(self.n)]
        if len(set(names)) > 1:
            raise RuntimeError(tr("distributed.collective_names_differ", index=index,
                                  listed=", ".join(f"rank {r}: dist.{x}" for r, x in enumerate(names))))
        problem = collective_disagreement(name, [entry["descs"][r] for r in range(self.n)])
        if problem:
            raise RuntimeError(problem)
        return compute([entry["parts"][r] for r in range(self.n)])


def _detached(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, (list, tuple)):
        return [_detached(t) for t in x]
    return x


def _numel_dtype(t: torch.Tensor) -> tuple[int, str]:
    return t.numel(), str(t.dtype).removeprefix("torch.")


_TLS = threading.local()


def _sim() -> tuple[_SimGroup, int]:
    group = getattr(_TLS, "group", None)
    if group is None:
        raise RuntimeError(tr("distributed.sim_threads_only"))
    return group, _TLS.rank


def _reduce_sum(parts: list[torch.Tensor]) -> torch.Tensor:
    total = parts[0].clone()
    for p in parts[1:]:
        total += p
    return total


def _reducer(op: Any, name: str):
    """parts -> the reduction of ``op`` (SUM, AVG, MAX, MIN, PRODUCT)."""
    R = dist.ReduceOp
    if op == R.SUM or op == R.AVG:
        return _reduce_sum
    if op == R.MAX:
        return lambda parts: torch.stack(parts).amax(0)
    if op == R.MIN:
        return lambda parts: torch.stack(parts).amin(0)
    if op == R.PRODUCT:
        return lambda parts: torch.stack(parts).prod(0)
    raise RuntimeError(tr("distributed.sim_reduce_op", name=name, op=str(op)))


def _finish(total: torch.Tensor, op: Any, n: int) -> torch.Tensor:
    return total / n if op == dist.ReduceOp.AVG else total


class _Done:
    """What a simulated collective returns with ``async_op=True``: already complete."""

    def wait(self, timeout: Any = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def _sim_functions() -> dict[str, Any]:
    """Replacements for torch.distributed's functions, acting on the calling thread's group."""

    def send(tensor, dst=None, group=None, tag=0, group_dst=None):
        g, r = _sim()
        entry = g.post_send(r, tensor, dst if dst is not None else group_dst)
        g.wait_until(r, lambda: entry["done"], entry["what"])

    def recv(tensor, src=None, group=None, tag=0, group_src=None):
        g, r = _sim()
        src = src if src is not None else group_src
        entry = g.post_recv(r, tensor, src)
        g.wait_until(r, lambda: entry["done"], entry["what"])
        return src

    def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
        g, r = _sim()
        return _Work(g, r, g.post_send(r, tensor, dst if dst is not None else group_dst))

    def irecv(tensor, src=None, group=None, tag=0, group_src=None):
        g, r = _sim()
        return _Work(g, r, g.post_recv(r, tensor, src if src is not None else group_src))

    def done(async_op: bool):
        return _Done() if async_op else None

    def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
        g, r = _sim()
        reduce = _reducer(op, "all_reduce")
        total = g.collective(r, "all_reduce", (tensor,), {}, tensor, reduce)
        tensor.copy_(_finish(total, op, g.n))
        return done(async_op)

    def all_gather(tensor_list, tensor, group=None, async_op=False):
        g, r = _sim()
        parts = g.collective(r, "all_gather", (tensor_list, tensor), {}, tensor, list)
        for out, part in zip(tensor_list, parts):
            out.copy_(part.reshape(out.shape))
        return done(async_op)

    def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
        g, r = _sim()
        if output_tensor.numel() != g.n * input_tensor.numel():
            raise RuntimeError(tr("distributed.gather_output_size", got=output_tensor.numel(), n=g.n,
                                  part=input_tensor.numel()))
        parts = g.collective(r, "all_gather_into_tensor", (output_tensor, input_tensor), {}, input_tensor, list)
        output_tensor.copy_(torch.cat([p.reshape(-1) for p in parts]).reshape(output_tensor.shape))
        return done(async_op)

    def reduce_scatter_tensor(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
        g, r = _sim()
        reduce = _reducer(op, "reduce_scatter_tensor")
        if input.numel() != g.n * output.numel():
            raise RuntimeError(tr("distributed.scatter_input_size", got=input.numel(), n=g.n, part=output.numel()))
        total = g.collective(r, "reduce_scatter_tensor", (output, input), {}, input, reduce)
        mine = total.reshape(-1).chunk(g.n)[r]
        output.copy_(_finish(mine, op, g.n).reshape(output.shape))
        return done(async_op)

    def reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, group=None, async_op=False):
        g, r = _sim()
        reduce = _reducer(op, "reduce_scatter")
        parts = g.collective(r, "reduce_scatter", (output, input_list), {}, input_list, list)
        output.copy_(_finish(reduce([p[r] for p in parts]), op, g.n).reshape(output.shape))
        return done(async_op)

    def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
        g, r = _sim()
        parts = g.collective(r, "all_to_all", (output_tensor_list, input_tensor_list), {}, input_tensor_list, list)
        for q, out in enumerate(output_tensor_list):
            out.copy_(parts[q][r].reshape(out.shape))
        return done(async_op)

    def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                          async_op=False):
        g, r = _sim()
        args = (output, input, output_split_sizes, input_split_sizes)
        parts = g.collective(r, "all_to_all_single", args, {}, [input, input_split_sizes], list)

        def pieces(t, splits):
            return list(t.split(list(splits) if splits is not None else t.shape[0] // g.n, dim=0))

        received = [pieces(p[0], p[1])[r] for p in parts]
        output.copy_(torch.cat(received, dim=0).reshape(output.shape))
        return done(async_op)

    def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
        g, r = _sim()
        src = src if src is not None else group_src
        parts = g.collective(r, "broadcast", (tensor,), {}, tensor, list)
        tensor.copy_(parts[src])
        return done(async_op)

    def barrier(group=None, async_op=False, device_ids=None):
        g, r = _sim()
        g.collective(r, "barrier", (), {}, None, list)
        return done(async_op)

    def get_rank(group=None):
        return _sim()[1]

    def get_world_size(group=None):
        return _sim()[0].n

    def is_initialized():
        return getattr(_TLS, "group", None) is not None

    implemented = dict(send=send, recv=recv, isend=isend, irecv=irecv, all_reduce=all_reduce,
                       all_gather=all_gather, all_gather_into_tensor=all_gather_into_tensor,
                       reduce_scatter_tensor=reduce_scatter_tensor, reduce_scatter=reduce_scatter,
                       all_to_all=all_to_all, all_to_all_single=all_to_all_single, broadcast=broadcast,
                       barrier=barrier, get_rank=get_rank, get_world_size=get_world_size,
                       is_initialized=is_initialized)
    for name in COLLECTIVES:
        implemented.setdefault(name, _unsupported(name))
    return implemented


def _unsupported(name: str):
    def call(*args, **kwargs):
        g, r = _sim()
        if not g.allow_collectives:
            raise CollectiveNotAllowed(tr("distributed.collective_not_allowed", name=name))
        raise RuntimeError(tr("distributed.sim_unsupported", name=name))
    return call


_PATCH_LOCK = threading.Lock()


def _run_simulated(module: Any, calls: Sequence[Call], n: int, allow_collectives: bool,
                   timeout_s: float) -> list[list[RankResult]]:
    replacements = _sim_functions()
    out: list[list[RankResult]] = []
    with _PATCH_LOCK:
        saved = {name: getattr(dist, name) for name in replacements if hasattr(dist, name)}
        try:
            for name, value in replacements.items():
                setattr(dist, name, value)
            for function, args_per_rank in calls:
                out.append(_simulate_call(getattr(module, function), function, args_per_rank, n,
                                          allow_collectives, timeout_s))
        finally:
            for name in replacements:
                if name in saved:
                    setattr(dist, name, saved[name])
                else:
                    delattr(dist, name)
    return out


def _simulate_call(fn, name: str, args_per_rank: Sequence[tuple], n: int, allow_collectives: bool,
                   timeout_s: float) -> list[RankResult]:
    group = _SimGroup(n, allow_collectives, timeout_s)

    def body(rank: int) -> None:
        _TLS.group, _TLS.rank = group, rank
        try:
            group.logs[rank].value = fn(*args_per_rank[rank])
        except _Aborted:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            exc.__infralab_where__ = _trimmed_traceback(exc)  # type: ignore[attr-defined]
            group.fail(rank, exc)
        finally:
            group.finished()
            _TLS.group = None

    threads = [threading.Thread(target=body, args=(r,), name=f"sim-rank-{r}", daemon=True) for r in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout_s + 5
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in threads):
        alive = [r for r, t in enumerate(threads) if t.is_alive()]
        message = tr("distributed.sim_ranks_running", name=name, ranks=alive, seconds=f"{timeout_s:g}")
        group.fail(-1, TimeoutError(message))
        raise TimeoutError(message)
    if group.error is not None:
        rank, exc = group.error
        if isinstance(exc, NotImplementedError):
            raise exc
        raise _rank_error(rank, type(exc).__name__, str(exc), getattr(exc, "__infralab_where__", ""))
    return group.logs


