"""Timing (PERF.md, "How to time"): CUDA events, an L2 flush before each sample, interleaved
candidate and baseline, median of >= 30 samples with an early stop, a host wall-time cross-check.

The statistics and the sampling loop take a :class:`Timer`; :class:`CudaTimer` is the real one,
the kit's tests pass a fake one, so nothing here needs a GPU to be tested.
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Runner = Callable[[int], Any]  # runner(i): one call on input set i (the runner picks i mod its sets)


class Timer(Protocol):
    def time_batch(self, runner: Runner, calls: int, start: int) -> float:
        """Flush L2, then time ``calls`` calls (inputs start, start+1, ...); seconds per call."""

    def wall_check(self, runner: Runner, calls: int) -> tuple[float, float]:
        """(event seconds, host wall seconds) around one synchronised batch, no flush."""


@dataclass(frozen=True)
class SamplingPolicy:
    min_samples: int = 30
    max_samples: int = 400
    rel_se: float = 0.01  # stop once every runner's standard error is below this share of its median
    time_cap_s: float = 10.0  # per shape, all runners together
    short_kernel_s: float = 20e-6  # under this, several calls per event pair
    batch_target_s: float = 200e-6  # ... as many as make a batch about this long
    max_calls: int = 64
    # with graphs (bench --graph-batches; off by default): calls shorter than short_kernel_s on a GPU are
    # batched as replays of CUDA graphs of the calls, as in the caged route (infralab.perf.caged); a batch
    # of about graph_batch_target_s (the input-set budget may cap it), graphs of at most graph_calls calls
    # each (device_gate.captured_chunks). Off by default: on an H100 (2026-12-06) it read the reference's
    # small vector_add 0.822x (eager: 0.879x; the cage 0.975x: docs/performance.md)
    graphs: bool = False
    graph_batch_target_s: float = 0.02
    graph_calls: int = 1024


@dataclass
class Timing:
    """One runner's samples (seconds per call) and their summary."""

    samples: list[float]
    calls: int

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def rel_se(self) -> float:
        """Standard error of the mean over the median."""
        n = len(self.samples)
        if n < 2:
            return math.inf
        return statistics.stdev(self.samples) / math.sqrt(n) / self.median

    def summary(self) -> dict[str, float]:
        return {"median_ms": self.median * 1e3, "min_ms": min(self.samples) * 1e3,
                "max_ms": max(self.samples) * 1e3, "se_pct": 100 * self.rel_se,
                "samples": len(self.samples), "calls_per_sample": self.calls}


@dataclass
class SamplingResult:
    timings: dict[str, Timing]
    stopped: str  # converged | max_samples | time_cap
    notes: list[str] = field(default_factory=list)


def calls_per_sample(single_call_s: float, policy: SamplingPolicy) -> int:
    """1 for kernels over ``short_kernel_s``; else enough calls for a batch of ``batch_target_s``."""
    if single_call_s >= policy.short_kernel_s:
        return 1
    return max(2, min(policy.max_calls, math.ceil(policy.batch_target_s / max(single_call_s, 1e-7))))


def graph_calls_per_sample(single_call_s: float, policy: SamplingPolicy) -> int:
    """Calls of a graph-replayed batch of about ``graph_batch_target_s`` (before any memory cap)."""
    return max(2, math.ceil(policy.graph_batch_target_s / max(single_call_s, 1e-7)))


class GraphBatch:
    """A runner whose timed batch is a replay of CUDA graphs of its calls on sets ``0 .. calls - 1``.

    ``capture(runner, calls)`` runs the calls once (each through every check of a timed call) under
    capture and returns the graphs; it raises when a call does what a graph cannot hold. The timer
    calls :meth:`replay` for a batch (one launch per graph); an eager call (``runner(i)``: the
    profiled batch) still reaches the runner itself. Before each batch :meth:`refresh` has the
    runner rewrite every set the graphs read, in place (their addresses are fixed at the capture).
    A runner that keeps its outputs in ``last`` (:class:`infralab.perf.run.FreshSets`) gets the
    captured outputs back there after each replay, which rewrites them: what the re-checks read is
    what the replays wrote, not an eager call's output."""

    def __init__(self, runner: Runner, calls: int, capture: Callable[[Runner, int], list]):
        self.runner, self.calls = runner, calls
        self.graphs = capture(runner, calls)
        self.kept = dict(getattr(runner, "last", None) or {})

    def __call__(self, i: int) -> Any:
        return self.runner(i)

    def refresh(self, calls: int, start: int) -> None:
        refresh_inputs(self.runner, self.calls, 0)

    def replay(self) -> None:
        for graph in self.graphs:
            graph.replay()
        last = getattr(self.runner, "last", None)
        if last is not None:
            last.update(self.kept)


Aside = tuple[str, int, Callable[[Runner, int, int], None]]  # (runner, round, fn(runner, calls, start))


def sample_interleaved(runners: dict[str, Runner], timer: Timer, policy: SamplingPolicy,
                       calls: dict[str, int], clock: Callable[[], float] = time.monotonic,
                       asides: Sequence[Aside] = ()) -> SamplingResult:
    """Round-robin over the runners (the order rotates each round), one sample each per round.

    A runner with a ``refresh(calls, start)`` method gets it before each of its batches (untimed):
    the candidate's inputs are rewritten from new seeds, so no call sees inputs seen before.
    Stops when every runner has >= min_samples and a standard error under rel_se of its median,
    or at max_samples, or when the time cap is reached (after at least min_samples if the cap allows).
    Each of ``asides``, ``(name, round, fn)``: in that round, runner ``name``'s batch goes to
    ``fn(runner, calls, start)`` instead of the timer (a profiled batch) and is left out of the
    statistics; the round then counts one sample less for that runner. An aside whose round never came
    (sampling stopped first) runs after the last round.
    """
    names = list(runners)
    out = {n: Timing([], calls[n]) for n in names}
    t0 = clock()
    rounds = 0
    pending = list(asides)
    while True:
        order = names[rounds % len(names):] + names[: rounds % len(names)]
        for n in order:
            refresh_inputs(runners[n], calls[n], rounds * calls[n])
            due = next((a for a in pending if a[0] == n and a[1] == rounds), None)
            if due is not None:
                due[2](runners[n], calls[n], rounds * calls[n])
                pending.remove(due)
                continue
            out[n].samples.append(timer.time_batch(runners[n], calls[n], rounds * calls[n]))
        rounds += 1
        res = None
        if rounds >= policy.min_samples and all(t.rel_se < policy.rel_se for t in out.values()):
            res = SamplingResult(out, "converged")
        elif rounds >= policy.max_samples:
            res = SamplingResult(out, "max_samples")
        elif clock() - t0 > policy.time_cap_s and rounds >= 3:
            res = SamplingResult(out, "time_cap")
            if rounds < policy.min_samples:
                res.notes.append(f"only {rounds} samples in the {policy.time_cap_s:g} s cap")
        if res is not None:
            for name, _, fn in pending:  # stopped before the chosen round: the aside batch runs now
                refresh_inputs(runners[name], calls[name], rounds * calls[name])
                fn(runners[name], calls[name], rounds * calls[name])
            return res


def refresh_inputs(runner: Runner, calls: int, start: int) -> None:
    """A runner's ``refresh(calls, start)``, where it has one: fresh inputs for the batch, untimed."""
    refresh = getattr(runner, "refresh", None)
    if refresh is not None:
        refresh(calls, start)


def wall_mismatch(event_s: float, wall_s: float) -> bool:
    """Host wall time well above event time: work escaped the timed stream (another stream, host)."""
    return wall_s > 1.25 * event_s + 1e-3


class CudaTimer:
    """CUDA events on the current stream, measuring device time only.

    Before each sample: a write of 2x the L2 size (flush), then a spin kernel long enough for the
    host to enqueue the whole batch, then the begin event. Without the spin, the host-side cost of
    a Python wrapper or an autotuner's dispatch (tens of microseconds) would be counted as idle
    device time between the begin event and the kernel, and a 0.2 ms kernel would look 20% slower.
    The spin is sized from the host time the previous batches of the same runner took to enqueue;
    a batch whose enqueueing outran its spin is re-timed with a longer one.
    """

    def __init__(self, device: Any = None):
        import torch
        self.torch = torch
        props = torch.cuda.get_device_properties(device or torch.cuda.current_device())
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0)) or 64 * 2**20
        self.flush_bytes = max(2 * self.l2_bytes, 128 * 2**20)
        self._flush = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device="cuda")
        self._host_s: dict[int, float] = {}  # runner -> host seconds to enqueue one call
        self.cycles_per_s = self._spin_rate()

    def _spin_rate(self) -> float:
        torch = self.torch
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)  # first launch outside the timed region
        rates = []
        for _ in range(3):
            begin.record()
            torch.cuda._sleep(2_000_000)
            end.record()
            end.synchronize()
            rates.append(2_000_000 / (begin.elapsed_time(end) / 1e3))
        return statistics.median(rates)

    def flush_l2(self) -> None:
        self._flush.fill_(0x5A5A5A5A)

    def _spin(self, seconds: float) -> None:
        self.torch.cuda._sleep(int(min(seconds, 0.05) * self.cycles_per_s))

    def time_batch(self, runner: Runner, calls: int, start: int) -> float:
        torch = self.torch
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if isinstance(runner, GraphBatch):  # a few launches, whatever the calls: a short spin covers them
            self.flush_l2()
            self._spin(100e-6 + 20e-6 * len(runner.graphs))
            begin.record()
            runner.replay()
            end.record()
            end.synchronize()
            return begin.elapsed_time(end) / 1e3 / runner.calls
        for _attempt in range(3):
            ahead = max(100e-6, 2.0 * calls * self._host_s.get(id(runner), 50e-6))
            self.flush_l2()
            self._spin(ahead)
            begin.record()
            t0 = time.perf_counter()
            for i in range(calls):
                runner(start + i)
            host = time.perf_counter() - t0
            end.record()
            end.synchronize()
            self._host_s[id(runner)] = host / calls
            if host < ahead or ahead >= 0.05:
                break  # the batch was queued before the device reached it: device time only
        return begin.elapsed_time(end) / 1e3 / calls

    def wall_check(self, runner: Runner, calls: int) -> tuple[float, float]:
        torch = self.torch
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        begin.record()
        if isinstance(runner, GraphBatch):
            runner.replay()
        else:
            for i in range(calls):
                runner(i)
        end.record()
        torch.cuda.synchronize()  # the whole device: work on other streams included
        wall = time.perf_counter() - t0
        return begin.elapsed_time(end) / 1e3, wall


def warm_up(runner: Runner, timer: Timer, min_calls: int = 3, min_s: float = 0.2,
            clock: Callable[[], float] = time.monotonic) -> float:
    """Run until JIT compilation and autotuning are behind us; return one call's time (seconds)."""
    t0 = clock()
    n = 0
    while n < min_calls or clock() - t0 < min_s:
        runner(n)
        n += 1
        if n > 10_000:
            break
    return statistics.median(timer.time_batch(runner, 1, i) for i in range(3))
