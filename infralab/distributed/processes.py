"""Real process groups: one local process per rank, on gloo (CPU) or NCCL (one GPU per rank).

Processes come from a forkserver with torch preloaded (a start costs about a second after the
first); the group meets through a FileStore in a temporary folder (no port is ever guessed),
with a timeout on the process group and a deadline on the whole run, and every process is
killed at the end. Values cross as data only (:mod:`.codec`).

Inside each rank, ``torch.distributed``'s functions are wrapped so that every call is logged
(:mod:`.accounting`), refused when the exercise builds collectives itself, and checked against
the other ranks' calls first (:mod:`.agreement`): a size mismatch that would abort gloo's
process from its own thread is raised as a clear error in the rank that made it.

A rank that has answered waits for all the others to answer before it exits (a counter in the
run's store, at most ``_EXIT_WAIT_S``), so that no rank closes its sockets while a slower rank may
still be in its last exchange with it. This is a precaution against the rare abort at exit seen
at world size 3 (GOTCHAS), whose cause was not reproduced (0 in 40 direct runs of the old harness
at world size 3, 0 in 15 pytest runs of the part's gloo tests). A rank whose process dies without
an answer is reported with its exit code, and a death after another rank's error counts as that
error's consequence, so the first real error is the one the test shows.

NCCL: ``backend="nccl"`` needs a GPU per rank (rank r uses ``cuda:r``); tensors of the
arguments are moved to the rank's GPU before the call and results come back on the CPU.
:func:`backend_unavailable` says why a backend cannot run here (tests skip with that reason).
"""
from __future__ import annotations

import datetime
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist

from infralab.distributed.accounting import op_record
from infralab.distributed.agreement import StoreAgreement
from infralab.distributed.codec import decode, encode
from infralab.distributed.results import (
    COLLECTIVES, P2P, Call, CollectiveNotAllowed, RankResult, _rank_error, _trimmed_traceback,
)
from infralab.i18n import tr

REAL_BACKENDS = ("gloo", "nccl")
_EXIT_WAIT_S = 10.0  # how long an answered rank waits for the others before it exits anyway


def backend_unavailable(backend: str, world_size: int) -> str | None:
    """Why ``backend`` cannot run ``world_size`` ranks on this machine (None: it can)."""
    if backend == "gloo":
        return None if dist.is_available() and dist.is_gloo_available() else tr("distributed.no_gloo")
    if backend == "nccl":
        if not torch.cuda.is_available():
            return tr("distributed.nccl_no_gpu")
        if not dist.is_nccl_available():
            return tr("distributed.nccl_not_built")
        if torch.cuda.device_count() < world_size:
            return tr("distributed.nccl_too_few_gpus", n=world_size, gpus=torch.cuda.device_count())
        return None
    return tr("distributed.bad_backend", backend=repr(backend))


def _count_traffic(log: dict[str, list], allow_collectives: bool, agreement: StoreAgreement | None = None) -> None:
    """In a rank: wrap dist's functions so that each message and collective is logged and checked."""
    def wrap_p2p(name: str, original, peer_key: str, into: str):
        def call(tensor, *args, **kwargs):
            peer = args[0] if args else kwargs.get(peer_key)
            log[into].append((peer, tensor.numel()))
            log["ops"].append(op_record(name, (tensor,), {}))
            if agreement is not None and isinstance(peer, int) and isinstance(tensor, torch.Tensor):
                (agreement.send if into == "sends" else agreement.recv)(tensor, peer)
            return original(tensor, *args, **kwargs)
        return call

    for name in P2P:
        into = "sends" if "send" in name else "recvs"
        setattr(dist, name, wrap_p2p(name, getattr(dist, name), "dst" if into == "sends" else "src", into))

    def wrap_collective(name: str, original):
        def call(*args, **kwargs):
            if not allow_collectives:
                raise CollectiveNotAllowed(tr("distributed.collective_not_allowed", name=name))
            log["collectives"].append(name)
            log["ops"].append(op_record(name, args, kwargs))
            if agreement is not None and kwargs.get("group") is None:
                agreement.collective(name, args, kwargs)
            return original(*args, **kwargs)
        return call

    for name in COLLECTIVES:
        if hasattr(dist, name):
            setattr(dist, name, wrap_collective(name, getattr(dist, name)))


def _to_device(x: Any, device: torch.device) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, tuple):
        return tuple(_to_device(v, device) for v in x)
    if isinstance(x, list):
        return [_to_device(v, device) for v in x]
    if isinstance(x, dict):
        return {k: _to_device(v, device) for k, v in x.items()}
    return x


def _rank_process(rank: int, world_size: int, backend: str, store_path: str, spec: Any, banned: dict,
                  module: str, payload: bytes, allow_collectives: bool, timeout_s: float, conn: Any) -> None:
    """The body of one rank's process: join the group, run the calls, send back data, exit."""
    from infralab.targets import InProcessTarget

    agree_store = None
    try:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        timeout = datetime.timedelta(seconds=timeout_s)
        device = None
        if backend == "nccl":
            device = torch.device("cuda", rank)
            torch.cuda.set_device(device)
        dist.init_process_group(backend, init_method=f"file://{store_path}", rank=rank, world_size=world_size,
                                timeout=timeout, **({"device_id": device} if device is not None else {}))
        agree_store = dist.FileStore(store_path + ".agree", world_size)
        agree_store.set_timeout(timeout)
        calls = decode(payload)
        log: dict[str, list] = {"sends": [], "recvs": [], "collectives": [], "ops": []}
        _count_traffic(log, allow_collectives, StoreAgreement(agree_store, rank, world_size, timeout_s))
        code = _load_file(module) if spec is None else InProcessTarget(spec, banned).load(module)
        results = []
        for function, args_per_rank in calls:
            for v in log.values():
                v.clear()
            args = args_per_rank[rank] if device is None else _to_device(args_per_rank[rank], device)
            value = getattr(code, function)(*args)
            results.append({key: (value if key == "value" else list(log[key]))
                            for key in ("value", "sends", "recvs", "collectives", "ops")})
        conn.send_bytes(encode({"ok": results}))
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        try:
            conn.send_bytes(encode({"error": [type(exc).__name__, str(exc)[:4000], _trimmed_traceback(exc)]}))
        except Exception:  # noqa: BLE001 - the parent sees a dead rank instead
            pass
    finally:
        conn.close()
        _wait_for_the_others(agree_store, world_size)
        os._exit(0)  # no atexit, no destroy_process_group that could wait on a dead peer


def _wait_for_the_others(store: Any, world_size: int) -> None:
    """Exit only when every rank has answered (or after a while): see the module's docstring."""
    if store is None:
        return
    try:
        store.add("answered", 1)
        deadline = time.monotonic() + _EXIT_WAIT_S
        while store.add("answered", 0) < world_size and time.monotonic() < deadline:
            time.sleep(0.01)
    except Exception:  # noqa: BLE001 - a store gone with the run: exit anyway
        pass


_gloo_rank = _rank_process  # the name before NCCL existed


def _load_file(path: str) -> Any:
    """A module of the kit's own (trusted) code by file path: an oracle or probe run on gloo."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_infralab_probe_{os.getpid()}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def run_trusted_calls(path: str, calls: Sequence[Call], world_size: int, *, allow_collectives: bool = True,
                      timeout_s: float = 60.0, backend: str = "gloo") -> list[list[RankResult]]:
    """Like :func:`run_calls` on a real backend, for functions of a kit file (a public implementation
    used as an oracle, e.g. FSDP2 or DTensor), not the implementation under test."""
    # FSDP2 imports torch._dynamo on first use: 20 s per rank on a loaded 2-core machine, once if preloaded
    _context(preload=("torch.distributed.fsdp", "torch._dynamo"))
    return _run_processes(backend, None, {}, str(path), calls, world_size, allow_collectives, timeout_s)


_CONTEXT: list[Any] = []


def _context(preload: Sequence[str] = ()):
    """The forkserver context; its server imports torch once (and ``preload`` if it starts now)."""
    if not _CONTEXT:
        import multiprocessing as mp
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["torch", "torch.distributed", "infralab.distributed", "infralab.targets",
                                    *preload])
        _CONTEXT.append(ctx)
    return _CONTEXT[0]


def _run_gloo(spec: Any, banned: dict, module: str, calls: Sequence[Call], n: int, allow_collectives: bool,
              timeout_s: float) -> list[list[RankResult]]:
    return _run_processes("gloo", spec, banned, module, calls, n, allow_collectives, timeout_s)


def _is_consequence(error: list) -> bool:
    """An error that follows from another rank going away (not the rank's own mistake)."""
    return error[3] if len(error) > 3 else ("gloo" in error[1] or "Connection" in error[1])


def _run_processes(backend: str, spec: Any, banned: dict, module: str, calls: Sequence[Call], n: int,
                   allow_collectives: bool, timeout_s: float) -> list[list[RankResult]]:
    from multiprocessing.connection import wait

    reason = backend_unavailable(backend, n)
    if reason:
        from infralab.distributed.results import BackendUnavailable
        raise BackendUnavailable(reason)
    ctx = _context()
    payload = encode([[name, list(args)] for name, args in calls])
    with tempfile.TemporaryDirectory(prefix=f"infralab-{backend}-") as tmp:
        store = os.path.join(tmp, "store")
        pipes, procs = [], []
        try:
            for rank in range(n):
                parent, child = ctx.Pipe(duplex=False)
                p = ctx.Process(target=_rank_process, name=f"{backend}-rank-{rank}", daemon=True,
                                args=(rank, n, backend, store, spec, banned, module, payload, allow_collectives,
                                      timeout_s, child))
                p.start()
                child.close()
                pipes.append(parent)
                procs.append(p)
            replies = _collect_replies(pipes, procs, n, timeout_s, wait)
        finally:
            for p in procs:
                p.join(0.5)
                if p.is_alive():
                    p.kill()
                    p.join(2.0)
            for conn in pipes:
                conn.close()
    errors = sorted((r, rep["error"]) for r, rep in replies.items() if "error" in rep)
    if errors:
        # prefer the error that is not a consequence of another rank going away
        errors.sort(key=lambda e: (_is_consequence(e[1]), e[0]))
        rank, (type_name, message, where, *_) = errors[0]
        if type_name == "NotImplementedError":
            raise NotImplementedError(message)
        raise _rank_error(rank, type_name, message, where)
    missing = [r for r in range(n) if r not in replies]
    if missing:
        raise TimeoutError(tr("distributed.ranks_did_not_finish", ranks=missing, seconds=f"{timeout_s:g}",
                              backend=backend))
    return [[RankResult(replies[r]["ok"][i]["value"], [tuple(x) for x in replies[r]["ok"][i]["sends"]],
                        [tuple(x) for x in replies[r]["ok"][i]["recvs"]], replies[r]["ok"][i]["collectives"],
                        [tuple(x) for x in replies[r]["ok"][i]["ops"]])
             for r in range(n)] for i in range(len(calls))]


def _collect_replies(pipes: list, procs: list, n: int, timeout_s: float, wait) -> dict[int, dict]:
    """Each rank's answer; a rank that dies without one is named with how it died."""
    replies: dict[int, dict] = {}
    first_error: float | None = None
    deadline = time.monotonic() + timeout_s + 15  # the group's own timeout fires first
    pending = {pipes[r]: r for r in range(n)}
    while pending:
        now = time.monotonic()
        limit = deadline if first_error is None else min(deadline, first_error + 2.0)
        if now >= limit:
            break
        for conn in wait(list(pending), timeout=limit - now):
            rank = pending.pop(conn)
            try:
                replies[rank] = decode(conn.recv_bytes())
            except (EOFError, OSError):
                procs[rank].join(1.0)
                code = procs[rank].exitcode
                # a death after another rank failed is that failure's consequence
                replies[rank] = {"error": ["RuntimeError", tr("distributed.rank_died", code=code), "",
                                           first_error is not None]}
            if "error" in replies[rank] and first_error is None:
                first_error = time.monotonic()
    return replies
