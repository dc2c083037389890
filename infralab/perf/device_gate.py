"""Armed batches: calls enqueued on the device behind a wait on a pinned host flag.

``infralab grade --gpu`` times a batch on the judge's clock from the moment it releases the batch
to the moment the device is synchronised, so that the host's enqueueing (Python, the guards,
Triton's launcher) is not timed, as the bench's spin kernel hides it. Both runners of a caged
challenge use it: the candidate in the cage (:mod:`infralab.judge.perf_ops`) and the library
baseline in the judge's own process (:mod:`infralab.perf.caged`), so their figures are measured
the same way. Copied into the executor's tree with the other files that ``perf_ops`` imports.

:class:`Armed` also returns where the release's time went (``breakdown``, host seconds): the judge
reports it in the record's ``judge_clock`` evidence and decides nothing on it.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

import torch

from infralab.i18n import tr

_synchronize = torch.cuda.synchronize  # bound at import, before any student code runs


class DeviceGate:
    """A Triton kernel that spins until a flag holds ``epoch``: the calls enqueued after it wait on
    the device, not on the host. Raises if Triton cannot compile here (no GPU, no Triton): the
    caller then times unarmed batches.

    Two kinds. The one-block gate spins on a pinned host int32 that :meth:`open` writes. The
    filling gate (``fill=True``) launches as many 1,024-thread blocks as the device holds at once
    (the SMs' thread slots, capped at 32 registers a thread), spinning on a device int32 that
    :meth:`open` writes with a host-to-device copy on a stream of its own (the copy engine: no SM is
    free to run a kernel). While it waits, no kernel of any stream of the process runs: work that a
    call launches on a side stream while an armed batch is enqueued (the judge's clock not yet
    running) waits for the release and is timed with the batch. It tests itself when made (a kernel
    on another stream must not run behind it); ``fill_problem`` says why it fell back to one block."""

    def __init__(self, fill: bool = False):
        import triton
        import triton.language as tl

        @triton.jit
        def _infralab_wait_flag(flag_ptr, want):
            v = tl.load(flag_ptr, volatile=True)
            while v != want:
                v = tl.load(flag_ptr, volatile=True)

        self.kernel = _infralab_wait_flag
        self.flag = torch.zeros(1, dtype=torch.int32).pin_memory()
        self.epoch = 1
        self.flag[0] = 1
        self.kernel[(1,)](self.flag, 1)  # compiled now, while nothing waits on it
        _synchronize()
        self.fills, self.fill_problem = False, None
        if fill:
            try:
                self.fill_problem = self._fill()
            except Exception as exc:  # noqa: BLE001 - a Triton without maxnreg, ...: the one-block gate
                self.fill_problem = f"{type(exc).__name__}: {str(exc)[:200]}"
            self.fills = self.fill_problem is None

    def _fill(self) -> str | None:
        """Set up the filling gate and test it; None when it holds a kernel of another stream back."""
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        per_sm = max(1, int(getattr(props, "max_threads_per_multi_processor", 2048)) // FILL_THREADS)
        self.blocks = per_sm * props.multi_processor_count
        self.device_flag = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.opener = torch.cuda.Stream()
        probe_stream = torch.cuda.Stream()
        probe = torch.zeros(1, dtype=torch.int32, device="cuda")
        done = torch.cuda.Event()
        _synchronize()
        self.fills = True
        epoch = self.close()
        try:  # whatever happens, the gate opens: a closed filling gate would hold the device for good
            with torch.cuda.stream(probe_stream):
                probe.fill_(1)
                done.record(probe_stream)
            time.sleep(FILL_TEST_S)
            ran = done.query()  # non-blocking: True if the fill ran beside the closed gate
        finally:
            self.open(epoch)
            _synchronize()
        if ran:
            self.fills = False
            return tr("gpugrade.gate_fill_test_failed", blocks=self.blocks, threads=FILL_THREADS)
        return None

    def close(self) -> int:
        self.epoch += 1
        if self.fills:
            self.kernel[(self.blocks,)](self.device_flag, self.epoch, num_warps=FILL_THREADS // 32, maxnreg=32)
        else:
            self.kernel[(1,)](self.flag, self.epoch)
        return self.epoch

    def open(self, epoch: int) -> None:
        self.flag[0] = epoch
        if self.fills:
            with torch.cuda.stream(self.opener):
                self.device_flag.copy_(self.flag, non_blocking=True)


FILL_THREADS = 1024  # threads of a filling gate's block (the most a block has): 2 blocks fill an H200 SM
FILL_TEST_S = 0.005  # how long the filling gate's self-test gives a kernel of another stream to run


_GATE: dict[bool, DeviceGate | None] = {}  # this process's gates (one-block, filling), made once each


def gate_or_none(device: str, fill: bool = False) -> DeviceGate | None:
    """This process's gate on a CUDA device where Triton works; None elsewhere (a CPU: an armed
    batch is deferred to its go). ``fill``: the filling gate (its ``fills`` false when it fell back)."""
    if device != "cuda":
        return None
    if fill not in _GATE:
        try:
            _GATE[fill] = DeviceGate(fill=fill)
        except Exception:  # noqa: BLE001 - no Triton on this device: unarmed batches
            _GATE[fill] = None
    return _GATE[fill]


def captured(run: Callable[[], None]):
    """A CUDA graph of the launches ``run`` makes, replayed once (untimed) so that it is uploaded:
    :class:`Armed` replays it behind the gate as one launch, so a batch of thousands of short calls
    fits behind the gate (256 separate launches are the most it holds). Raises when ``run`` does what
    a graph cannot hold (a call that waits on the device or copies to the host)."""
    graph = torch.cuda.CUDAGraph()
    _synchronize()
    with torch.cuda.graph(graph):
        run()
    graph.replay()  # its first launch uploads it, and a new graph's upload behind the closed gate blocks the host
    _synchronize()
    return graph


def captured_chunks(call: Callable[[int], None], calls: int, chunk: int) -> list:
    """Calls ``call(0) .. call(calls - 1)`` captured in graphs of at most ``chunk`` calls each: a graph
    of 4,096 one-kernel calls blocked the host behind the closed gate on the H200, 3,072 did not, and
    sixteen launches of one 512-call graph did not either; graphs not yet launched once blocked it even at
    32 calls each (benchmarks/probe_graph_gate.py; hence the upload in :func:`captured`)."""
    return [captured(lambda lo=lo: [call(i) for i in range(lo, min(calls, lo + chunk))])
            for lo in range(0, calls, chunk)]


class Armed:
    """One armed batch: ``run`` is enqueued now behind the gate; released by :meth:`go` or, after
    ``release_s``, by its own watchdog (then ``early``: a call that waits on the device, such as
    ``.item()``, would otherwise never return). Without a gate (a CPU) ``run`` waits for the go."""

    def __init__(self, gate: DeviceGate | None, run: Callable[[], None], release_s: float):
        self.gate, self.run = gate, run
        self.lock, self.released, self.early = threading.Lock(), threading.Event(), False
        self.events = None
        self.host = {}
        if gate is None:
            return
        pre = torch.cuda.Event(enable_timing=True)
        pre.record()
        epoch = gate.close()
        self.closed_at = time.perf_counter()

        def watchdog() -> None:
            if not self.released.wait(release_s):
                self.release(early=True)

        self.epoch = epoch
        threading.Thread(target=watchdog, daemon=True).start()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        try:
            run()  # enqueued behind the gate (the watchdog frees a host that blocks here)
        except BaseException:  # a call that raised: open the gate now, not after release_s
            self.release()
            raise
        end.record()
        self.events = (pre, begin, end)
        self.host["enqueue_s"] = time.perf_counter() - self.closed_at

    def release(self, early: bool = False) -> None:
        """Open the gate, once; ``early``: the watchdog's release, which the go's answer reports."""
        with self.lock:
            if not self.released.is_set():
                self.early = early
                self.released.set()
                self.gate.open(self.epoch)

    def go(self) -> tuple[float, bool, dict]:
        """Release, wait for the batch: (its time on the device's events, or the host's clock on a
        CPU; released early; where the release's time went)."""
        t0 = time.perf_counter()
        if self.gate is None:
            self.run()
            return float(time.perf_counter() - t0), False, {}
        self.release()
        opened = time.perf_counter()
        _synchronize()
        synced = time.perf_counter()
        pre, begin, end = self.events
        batch_s = float(begin.elapsed_time(end)) / 1e3
        # how long the device waited behind the gate, less how long the host kept it closed: the
        # gate's own release latency (the wait kernel's launch latency included)
        lag_s = float(pre.elapsed_time(begin)) / 1e3 - (opened - self.closed_at)
        breakdown = {"open_s": opened - t0, "sync_s": synced - opened, "events_s": batch_s, "gate_lag_s": lag_s,
                     **self.host}
        return batch_s, self.early, breakdown
