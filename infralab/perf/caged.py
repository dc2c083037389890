"""A performance challenge graded in the cage (``infralab grade --gpu``): the judge's side.

The student's module lives in the caged executor (:mod:`infralab.judge.perf_ops` answers there);
this process (the judge) never imports it and decides everything:

1. **Seeds.** Every input set is drawn from a seed the judge picks (``random.SystemRandom``) and
   sends; the executor builds the set on the device with the workload's own generator, and the
   judge builds the same set from the same seed on its own side. Large inputs never cross the
   cage, and the judge never trusts the executor's copy: a set the executor altered gives outputs
   that do not match the judge's reference.
2. **Correctness gate.** The challenge shape and the workload's ragged gate shapes, over NaN-poisoned
   memory, each call through every guard of grading; the outputs come back and the judge compares
   them with its own fp32 reference (:func:`infralab.perf.run.check_outputs`).
3. **The judge's clock.** A timed sample is "run N calls on sets start.., then synchronise the
   device": the cage first enqueues the N calls on the device behind a wait on a pinned host flag
   (an *armed* batch, untimed), then the judge starts its clock, sends ``go`` (the cage sets the
   flag), and stops it when the synchronised answer is back, less the median round trip of an
   empty armed batch (measured in the same session). So the host's enqueueing (Python, the guards,
   Triton's launcher) is not timed, as the bench's spin kernel hides it, and a small kernel's figure
   is its device time in both routes. N is chosen so a batch lasts about
   :attr:`CagedPolicy.batch_target_s` (at most :attr:`CagedPolicy.armed_max_calls` calls, so the
   launch queue never fills behind the wait). A batch the cage had to release itself (a call that
   waits on the device) switches the shape to unarmed batches, with a note. The baseline (a library
   kernel, the judge's own code) runs in the judge's process on the same device, interleaved, on the
   same clock, armed the same way (:mod:`infralab.perf.device_gate`) less its own empty batch's
   cost, so the two figures are alike and no code in the cage runs in its process. The GPU is shared
   with the cage's process, though: a third runner, the judge's own device copy (:func:`_canary`),
   runs in the same gaps as the baseline and flags the entry when it reads below
   :data:`CANARY_MIN_FRACTION` of the profile's calibrated copy bandwidth.
   The cage's account of each release (``breakdown``: the flag, the sync, the gate's own latency) goes into the record's ``judge_clock.release_ms``; it decides nothing.
4. **Outputs of timed batches, fresh inputs for every call.** Before each timed batch the cage
   regenerates its input sets from new seeds the judge draws (written into the same tensors), one
   set per call: no call of the batch sees inputs that an earlier call saw, so a module that caches
   its answers (by address or by content) has nothing to reuse, and one keyed by address answers
   stale values. The cage keeps every output of the batch; after the go, the judge draws
   :attr:`CagedPolicy.checks_per_batch` of its calls to check whole and a seed for
   :attr:`CagedPolicy.every_call_elements` elements of every other call's outputs, rebuilds each
   call's inputs from its seed and checks them all, so nothing in the cage knows which answers are
   checked while the calls run, and a skipped or stale call is caught for sure. The sets and kept
   outputs of a batch fit in :attr:`CagedPolicy.device_memory_fraction` of the device's free
   memory, which caps the batch's calls. An output over :attr:`CagedPolicy.whole_output_elements` elements comes back as
   :attr:`CagedPolicy.sample_elements` of its elements, at indices drawn from a seed the judge picks
   after the calls ran (its shape is checked whole).
5. **Cross-check.** The executor also times each batch on its own timer (CUDA events; on a CPU
   ``time.perf_counter``). It decides nothing: when its median disagrees with the judge's by more
   than :data:`CLOCK_TOLERANCE_REL` of the judge's figure plus :data:`CLOCK_TOLERANCE_ABS_S`, the
   entry is flagged (and, as every flag, rejected for review). Timer functions found replaced in the
   cage reject by name, as in ``infralab bench``.
6. **Kernel audit.** In a Triton exercise on a GPU, one candidate batch per round (random sample)
   runs under the CUDA profiler in the cage; the judge audits the kernel list
   (:func:`infralab.perf.kernel_audit.audit`) against the own kernels it read from the submitted
   files itself.

The record entry has the keys of ``infralab bench`` (workload, candidate, environment, metrics,
evidence, decision, protections). Everything here takes a :class:`Bench`, a clock and a sync
function, so the kit's tests run the whole protocol on a CPU with fakes.
"""
from __future__ import annotations

import ast
import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from infralab.i18n import tr
from infralab.perf import decision, device_gate
from infralab.perf.checked import own_kernel_names, torch_compile_use
from infralab.perf.harness import SamplingPolicy, Timing, refresh_inputs, sample_interleaved
from infralab.perf.kernel_audit import Kernel, audit
from infralab.perf.profiles import Profile
from infralab.perf.run import (INPUT_SET_BUDGET_BYTES, Rejected, check_outputs, entry_head, first_line,
                               rejected_entry)
from infralab.perf.spec import METRICS, work_amount
from infralab.perf.workloads import WORKLOADS, Workload, call_seed

CLOCK_TOLERANCE_REL = 0.10  # the cage's timer may differ from the judge's clock by 10% ...
CLOCK_TOLERANCE_ABS_S = 2e-3  # ... plus 2 ms per batch (the start of a batch, the pipe) before it flags
RESOLVED_BATCH_S = 0.025  # armed batches shorter than this: the judge's clock cannot settle a shortfall alone
MEMORY_RETRIES = 2  # a shape whose batches ran out of device memory is timed again with half the budget, twice
CANARY_BYTES = 256 << 20  # the judge's own device copy, interleaved with the baseline (>= 4x any L2 here)
CANARY_MIN_FRACTION = 0.85  # of the profile's calibrated copy_gbps, below which the device was not the judge's


@dataclass(frozen=True)
class CagedPolicy:
    min_samples: int = 10  # timed batches of the candidate per shape, both rounds together
    max_samples: int = 60
    rel_se: float = 0.01
    time_cap_s: float = 20.0  # seconds of sampling per shape (both runners)
    batch_target_s: float = 0.1  # a batch lasts about this long: the round trip is < 1% of it
    max_calls: int = 4096
    warmup_s: float = 0.2
    null_trips: int = 5  # empty batches timed to learn the round trip's own cost
    input_budget_bytes: int = INPUT_SET_BUDGET_BYTES
    max_input_sets: int = 256  # the baseline's sets (the judge's); the candidate's: one per call, fresh per batch
    checks_per_batch: int = 2  # calls of each timed batch whose outputs the judge checks whole, drawn after the go
    every_call_elements: int = 256  # ... and every other call's outputs at this many elements drawn after the go
    device_memory_fraction: float = 0.4  # of the free device memory: the cage's sets and kept outputs of a batch
    memory_scale: float = 1.0  # of that budget (halved for each retry after the device ran out of memory)
    armed: bool = True  # enqueue each batch behind a device wait before the judge's clock starts
    armed_max_calls: int = 256  # calls of an armed batch: the launch queue must hold them all (H200: 1024
    # launches behind a closed gate blocked the host, 256 did not; benchmarks/probe_armed_batch.py)
    graphs: bool = True  # calls too short for armed_max_calls to fill a batch: replays of CUDA graphs ...
    graph_calls: int = 1024  # ... of at most this many calls each (halved when a replay blocks the host behind the
    # gate; benchmarks/probe_graph_gate.py on the H200: a 3,072-call graph did not, 4,096 did, 16 x 512 did not)
    arm_release_s: float = 5.0  # an armed batch not released by then is released by the cage itself
    gate_fills_device: bool = True  # armed batches wait behind the filling gate (device_gate.DeviceGate): no
    # kernel of the cage's side streams runs while a batch is enqueued. The one-block gate (grade
    # --one-block-gate) let a raw side-stream launch run ahead of the clock (H100, 2026-12-05: accepted at
    # 1.016x); the filling gate cost the reference figures within 2% (benchmarks/results/h100-session11)
    whole_output_elements: int = 1 << 24  # larger outputs come back as a sample of elements ...
    sample_elements: int = 1 << 20  # ... this many, at indices the judge draws after the calls ran


class Bench(Protocol):
    """The executor's side of a challenge, as the judge sees it (:class:`RemoteBench`, or a fake)."""

    def prepare(self, *, workload: str, shape: dict, dtype: str, options: dict, seeds: list[int], ragged: bool,
                device: str, poison: bool, poison_bytes: int = 0) -> dict: ...

    def run(self, calls: int, start: int, keep: list[int] | None, *, gate: bool = False, profile: bool = False,
            arm: float = 0.0, graph: int = 0, fill: bool = False) -> dict: ...
    # keep None: every output of the batch (the judge names the ones it checks at the fetch); arm > 0: an
    # armed batch, released by the cage itself after ``arm`` seconds if go has not come; graph > 0: armed
    # and replayed from CUDA graphs of at most that many calls each (captured once); fill: armed behind
    # the filling gate

    def go(self) -> dict: ...

    def fetch(self, sample: dict | None = None) -> dict[int, tuple]: ...


class RemoteBench:
    """:class:`Bench` over the wire to the caged executor of one exercise (an isolated ``impl``)."""

    def __init__(self, remote_module: Any):
        self.target = remote_module._target
        self.module = remote_module._module_name

    def prepare(self, **request: Any) -> dict:
        return self.target.ask(f"{self.module}: preparing inputs",
                               {"op": "perf_prepare", "module": self.module, **request}, slow=True)

    def run(self, calls: int, start: int, keep: list[int] | None, *, gate: bool = False, profile: bool = False,
            arm: float = 0.0, graph: int = 0, fill: bool = False) -> dict:
        return self.target.ask(f"{self.module}: {calls} timed calls", {
            "op": "perf_run", "calls": calls, "start": start, "keep": None if keep is None else list(keep),
            "gate": gate, "profile": profile, "arm": arm, "graph": graph, "fill": fill}, slow=gate or profile or graph)

    def go(self) -> dict:
        return self.target.ask(f"{self.module}: armed calls", {"op": "perf_go"})

    def fetch(self, sample: dict | None = None) -> dict[int, tuple]:
        return self.target.ask(f"{self.module}: outputs", {"op": "perf_fetch", "sample": sample})


def _relative_imports(text: str) -> set[str]:
    """Sibling modules a file imports relatively (``from .common import x``, ``from . import common``)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
    return found


def submitted_kernels(remote_module: Any) -> tuple[frozenset[str], str | None]:
    """The ``@triton.jit`` functions of the exercise's file, the sibling files it imports and the
    files submitted in its part, and torch.compile use there: read by the judge from the files it
    copied into the cage (never from what the executor says)."""
    target = remote_module._target
    part, name = remote_module._module_name.split(".", 1)
    folder = target.cage.lib / "code" / target.package / part
    wanted = {name} | {m.split(".", 1)[1] for m in target.spec.overlays if m.split(".", 1)[0] == part}
    wanted |= _relative_imports((folder / f"{name}.py").read_text(encoding="utf-8", errors="replace"))
    files = sorted(folder / f"{m}.py" for m in wanted if (folder / f"{m}.py").is_file())
    texts = {f: f.read_text(encoding="utf-8", errors="replace") for f in files}
    problem = next((tr("perf.torch_compile", file=f"{part}/{f.name}", where=use)
                    for f, text in texts.items() if (use := torch_compile_use(text))), None)
    return own_kernel_names(texts.values()), problem


def clock_disagreement(judge_s: float, inner_s: float) -> bool:
    """The cage's timer and the judge's clock disagree on a batch beyond the stated tolerance."""
    return abs(judge_s - inner_s) > CLOCK_TOLERANCE_REL * judge_s + CLOCK_TOLERANCE_ABS_S


def caged_protections(triton: bool, device: str) -> list[str]:
    out = ["student code in the caged executor; the judge never imports it",
           "inputs from seeds the judge draws; the judge rebuilds them and computes the reference itself",
           "correctness gate on fresh random inputs over NaN-poisoned memory, every guard of grading",
           "time on the judge's clock around synchronised batches; the cage's timer is a cross-check "
           f"(tolerance {CLOCK_TOLERANCE_REL:.0%} + {CLOCK_TOLERANCE_ABS_S * 1e3:g} ms)",
           "fresh inputs for every timed call (the cage's sets regenerated before each batch, one per call)",
           "outputs of calls of each timed batch drawn by the judge after the batch ran, checked by the judge",
           "baseline timed in the judge's process, interleaved",
           "timer functions in the cage compared with their snapshot",
           "timed calls: banned routines (op_guard)" + (", a Triton launch per call, only the submission's own "
                                                        "Triton kernels" if triton else "")]
    if triton and device == "cuda":
        out.append("one timed batch per round (random) under the CUDA profiler in the cage; the judge audits "
                   "the kernels against the own kernels it read from the submitted files (kernel audit)")
    return out


def _on(value: Any, device: str) -> Any:
    if isinstance(value, (tuple, list)):
        return tuple(_on(v, device) for v in value)
    return value.to(device) if hasattr(value, "to") and device != "cpu" else value


def _nbytes(inputs: dict) -> int:
    return _nbytes_of(list(inputs.values()))


class _ArmingFailed(Exception):
    """The cage released an armed batch itself: this shape is timed again, unarmed."""


class _GraphFailed(Exception):
    """The calls could not be captured in a CUDA graph: this shape is timed again with plain armed batches."""


class _GraphBlocked(Exception):
    """A graph's replay blocked the host behind the gate (the watchdog released it): timed again with
    graphs of half as many calls."""


def derived_seeds(batch_seed: int, n: int) -> list[int]:
    """The seeds of a timed batch's ``n`` input sets, from the batch's seed (the record holds it)."""
    derive = random.Random(batch_seed)
    return [derive.randrange(2**31) for _ in range(n)]


class _Candidate:
    """The remote candidate as a sampling runner: ``refresh`` rewrites the cage's input sets (one per
    call, from seeds drawn here), ``prime`` arms the batch (both untimed), ``batch`` is the timed
    request, ``settle`` checks calls drawn after it ran."""

    def __init__(self, bench: Bench, wl: Workload, shape: dict, dtype: str, opts: dict, device: str,
                 rng: random.Random, policy: CagedPolicy, seed: Callable[[], int]):
        self.bench, self.wl, self.opts, self.device, self.rng, self.policy = bench, wl, opts, device, rng, policy
        self.shape, self.dtype, self.seed = shape, dtype, seed
        self.armed = policy.armed
        self.graph = 0  # calls per CUDA graph of an armed batch replayed from graphs (short calls; see _sampled)
        self.graph_ok = policy.graphs
        self.primed = False
        self.overhead_s = 0.0
        self.set_seeds: list[int] = []  # the seed of each of the cage's sets now
        self.start = 0  # the first set of the batch (0 for a graph: its calls are fixed at the capture)
        self.answer: dict = {}
        self.clocks: list[tuple[float, float]] = []  # (judge s, cage s) per timed batch
        self.breakdowns: list[dict] = []  # the cage's account of each armed release (reported only)
        self.tampered: set[str] = set()
        self.rechecks: list[str] = []  # the whole checks of drawn calls
        self.calls_checked = 0  # timed calls whose outputs the judge checked (every call of every batch)
        self.gate: dict = {}  # the cage's gate, as its armed answers describe it (fills the device, why not)
        self.peak_bytes: int | None = None  # the most device memory the cage's allocator held, as it reports

    def __call__(self, i: int) -> None:  # the sampling loop's runner interface: one call
        self.batch(1, i)

    def refresh(self, calls: int, start: int) -> None:
        """Fresh inputs for the next batch, one set per call (the sampler's step before every batch):
        nothing a call sees was seen before. The batch's seed is recorded; its sets' seeds derive from it."""
        if calls:
            self.set_seeds = derived_seeds(self.seed(), calls)
            self.bench.prepare(workload=self.wl.name, shape=dict(self.shape), dtype=self.dtype, options=self.opts,
                               seeds=self.set_seeds, ragged=False, device=self.device, poison=False)

    def prime(self, calls: int, start: int) -> None:
        self.primed = False
        self.start = 0 if self.graph else start
        if self.armed:  # a cage that cannot arm (no Triton on its device) says so: unarmed from then on
            answer = self.bench.run(calls, self.start, None, arm=self.policy.arm_release_s, graph=self.graph,
                                    fill=self.policy.gate_fills_device)
            if isinstance(answer.get("gate"), dict):
                self.gate = answer["gate"]
            if answer.get("graph_failed"):
                raise _GraphFailed(str(answer["graph_failed"]))
            self.primed = self.armed = bool(answer.get("armed"))

    def batch(self, calls: int, start: int) -> None:
        if not self.primed:
            self.answer = self.bench.run(calls, self.start, None)
            return
        self.primed = False
        self.answer = self.bench.go()
        if self.answer.get("released_early"):
            raise _GraphBlocked if self.graph else _ArmingFailed

    def sample(self) -> dict:
        return {"seed": self.rng.randrange(2**31), "count": self.policy.sample_elements,
                "whole_up_to": self.policy.whole_output_elements}

    def settle(self, calls: int, start: int, judge_s: float) -> None:
        self.tampered.update(str(n) for n in self.answer.get("tampered") or [])
        peak = self.answer.get("peak_bytes")
        if isinstance(peak, int) and not isinstance(peak, bool):
            self.peak_bytes = max(self.peak_bytes or 0, peak)
        if calls and isinstance(self.answer.get("inner_s"), (int, float)):
            self.clocks.append((judge_s, float(self.answer["inner_s"])))
            if isinstance(self.answer.get("breakdown"), dict):
                self.breakdowns.append(self.answer["breakdown"])
        if not calls:
            return
        picks = sorted(self.rng.sample(range(calls), min(calls, self.policy.checks_per_batch)))
        every = self.policy.every_call_elements
        sample = {**self.sample(), "calls": picks, "every": every}  # drawn now: the calls have run
        got = self.bench.fetch(sample)
        for k in range(calls):  # every call, the picks whole (or sampled if large), the others at `every` elements
            seed = self.set_seeds[(self.start + k) % len(self.set_seeds)]
            inputs = self.wl.make_inputs(dict(self.shape), self.dtype, self.opts, seed, self.device)  # the judge's own
            drawn = sample if k in picks else {"seed": call_seed(sample["seed"], k), "count": every}
            problem = "no output came back" if k not in got else \
                check_outputs(self.wl, _on(got[k], self.device), inputs, self.opts, drawn)
            if k in picks:
                self.rechecks.append(problem or "ok")
            if problem:
                raise Rejected(tr("gpugrade.timed_output_wrong", call=k + 1, calls=calls, problem=problem))
            del inputs
        self.calls_checked += calls


class _Baseline:
    """The library baseline, run by the judge on its own inputs (the same seeds), same device; armed
    in the judge's process as the candidate is in the cage (:mod:`infralab.perf.device_gate`), so
    neither runner's figure holds its host's enqueueing."""

    def __init__(self, fn: Callable, opts: dict, sync: Callable[[], None], gate: Any = None,
                 release_s: float = 5.0):
        self.fn, self.opts, self.sync, self.gate, self.release_s = fn, opts, sync, gate, release_s
        self.sets: list[dict] = []
        self.armed_batch: Any = None
        self.overhead_s = 0.0
        self.graph = 0  # calls per graph when replaying CUDA graphs of the calls, as the candidate (with a gate)
        self.captured: Any = None  # (calls, the graphs) for the current sets

    @property
    def armed(self) -> bool:
        return self.gate is not None

    def __call__(self, i: int) -> None:
        self.batch(1, i)

    def _run(self, calls: int, start: int) -> None:
        for i in range(calls):
            self.fn(self.sets[(start + i) % len(self.sets)], self.opts)

    def prime(self, calls: int, start: int) -> None:
        if self.gate is not None:
            self.sync()
            if self.graph and calls:
                if self.captured is None or self.captured[0] != calls:
                    self.captured = None
                    one = lambda i: self.fn(self.sets[i % len(self.sets)], self.opts)  # noqa: E731
                    self.captured = (calls, device_gate.captured_chunks(one, calls, self.graph))
                graphs = self.captured[1]
                run = lambda: [g.replay() for g in graphs]  # noqa: E731
            else:
                run = lambda: self._run(calls, start)  # noqa: E731
            self.armed_batch = device_gate.Armed(self.gate, run, self.release_s)

    def batch(self, calls: int, start: int) -> None:
        armed, self.armed_batch = self.armed_batch, None
        if armed is None:
            self._run(calls, start)
            self.sync()
            return
        if armed.go()[1]:  # released by the watchdog
            if self.graph:  # the graph's launch blocked the host behind the gate: smaller graphs
                raise _GraphBlocked
            self.gate = None  # the judge's own library call waited on the device: unarmed from now on

    def settle(self, calls: int, start: int, judge_s: float) -> None:
        pass


def reported_configs(value: Any) -> dict[str, dict[str, str]]:
    """The cage's report of the configs its Triton autotuners chose (``checked.autotuned_configs``):
    evidence gathered next to student code, so kept only as capped strings, never read for a verdict."""
    if not isinstance(value, dict):
        return {}
    return {str(kernel)[:100]: {str(key)[:200]: str(config)[:300] for key, config in list(chosen.items())[:50]}
            for kernel, chosen in list(value.items())[:20] if isinstance(chosen, dict)}


def _canary(device: str, profile: Profile, sync: Callable[[], None], gate: Any, policy: CagedPolicy):
    """The judge's own copy of :data:`CANARY_BYTES` on the device, a third runner interleaved with the
    candidate and the baseline, armed as the baseline is. The cage's process stays alive while the
    judge runs the baseline, and GPU contexts share the device by time slices, so code left running in
    the cage (a thread launching work whenever its own batches are not timed) would slow the baseline
    and lift the candidate's ratio. The canary runs in those same gaps, where the cage cannot tell it
    from the baseline: read against the profile's calibrated copy bandwidth, a slow canary flags the
    entry. None on a CPU or without a calibrated ``copy_gbps``."""
    if device != "cuda" or not profile.calibrated or not profile.ceilings.get("copy_gbps"):
        return None
    import torch
    src = torch.empty(CANARY_BYTES // 4, dtype=torch.float32, device=device).fill_(1.0)
    runner = _Baseline(lambda s, opts: s["dst"].copy_(s["src"]), {}, sync, gate, policy.arm_release_s)
    runner.sets = [{"src": src, "dst": torch.empty_like(src)}]
    return runner


class JudgeClock:
    """The :class:`infralab.perf.harness.Timer` of the caged route: the judge's clock around a whole
    synchronised batch, less the runner's measured round-trip cost; seconds per call."""

    def __init__(self, clock: Callable[[], float]):
        self.clock = clock

    def time_batch(self, runner: Any, calls: int, start: int) -> float:
        prime = getattr(runner, "prime", None)
        if prime is not None:  # an armed batch: enqueued before the clock starts
            prime(calls, start)
        t0 = self.clock()
        runner.batch(calls, start)
        elapsed = max(self.clock() - t0 - runner.overhead_s, 1e-9)
        runner.settle(calls, start, elapsed)
        return elapsed / max(calls, 1)

    def wall_check(self, runner: Any, calls: int) -> tuple[float, float]:  # the Timer protocol; unused here
        s = self.time_batch(runner, calls, 0) * calls
        return s, s


def _calls_for(one_call_s: float, policy: CagedPolicy, armed: bool = False) -> int:
    cap = min(policy.max_calls, policy.armed_max_calls) if armed else policy.max_calls
    return max(1, min(cap, math.ceil(policy.batch_target_s / max(one_call_s, 1e-7))))


def _call_in_batch(runner: Any, timer: JudgeClock, one_s: float, policy: CagedPolicy, most: int) -> float:
    """One call's time read from a batch of the calls that one call's time sizes (at most ``most``),
    no more than ``one_s``: a call timed alone also holds the cage's handling of the request beyond an
    empty batch's round trip (the guards, the launch checks: 0.2-0.5 ms), which a batch spreads over its
    calls. Sized from the lone call, the batches of a 7 us kernel came out 205-367 calls (1.8-2.5 ms)
    long, where the judge's clock could not tell the reference from the bar (H100, 2026-12-05); sized
    from this, they reach the target or the memory cap. Up to three batches, each sized from the last,
    until the size grows by less than a quarter; untimed for the statistics."""
    n = 1
    for _ in range(3):
        grown = max(1, min(_calls_for(one_s, policy, runner.armed), most))
        if grown < 2 or grown < 1.25 * n:
            break
        n = grown
        refresh_inputs(runner, n, 0)
        one_s = min(one_s, timer.time_batch(runner, n, 0))
    return one_s


def _one_call(runner: Any, timer: JudgeClock, clock: Callable[[], float], policy: CagedPolicy,
              trips: bool) -> float:
    """One call's time after warm-up, less the runner's round trip: with ``trips``, the median of
    :attr:`CagedPolicy.null_trips` empty batches on the judge's clock, as the timed ones are run,
    which becomes ``runner.overhead_s`` (subtracted from every batch of that runner)."""
    one = _warm(runner, timer, clock, policy)
    null = []
    for _ in range(policy.null_trips if trips else 0):
        runner.prime(0, 0)
        t0 = clock()
        runner.batch(0, 0)
        null.append(clock() - t0)
    runner.overhead_s = statistics.median(null) if null else 0.0
    return max(one - runner.overhead_s, 1e-9)


def _warm(runner: Any, timer: JudgeClock, clock: Callable[[], float], policy: CagedPolicy) -> float:
    """Single calls until JIT/autotune are behind (>= 3 calls and ``warmup_s``); one call's time."""
    t0, n = clock(), 0
    while n < 3 or clock() - t0 < policy.warmup_s:
        timer.time_batch(runner, 1, n)
        n += 1
        if n > 10_000:
            break
    return statistics.median(timer.time_batch(runner, 1, n + i) for i in range(3))


def run_caged_challenge(bench: Bench, challenge: dict[str, Any], shape: dict[str, int], profile: Profile, *,
                        exercise: str, target: str, own_kernels: frozenset[str], triton: bool,
                        source_problem: str | None = None, device: str = "cuda",
                        clock: Callable[[], float] = time.perf_counter, sync: Callable[[], None] | None = None,
                        policy: CagedPolicy | None = None, rng: random.Random | None = None,
                        profile_batches: bool | None = None, l2_bytes: int | None = None) -> dict[str, Any]:
    """One challenge shape of a caged candidate, judged on the judge's clock: the record entry."""
    policy = policy or CagedPolicy()
    rng = rng or random.SystemRandom()
    sync = sync or _device_sync(device)
    wl = WORKLOADS[challenge["workload"]]
    opts = {**wl.options, **challenge["options"]}
    dtype = challenge["dtype"]
    entry = entry_head(challenge, shape, profile, target=target, exercise=exercise, device=device,
                       protections=caged_protections(triton, device))
    entry["evidence"]["timing"] = tr("gpugrade.evidence_timing")
    seeds: list[int] = []
    entry["workload"]["seeds"] = seeds  # every input set's seed, all drawn here

    def seed() -> int:
        seeds.append(rng.randrange(2**31))
        return seeds[-1]

    def rejected(problem: str, by_check: bool = False) -> dict[str, Any]:
        return rejected_entry(entry, challenge, profile, problem, by_check=by_check)

    if source_problem:
        return rejected(source_problem, by_check=True)
    problem, by_check = _gate(bench, wl, shape, dtype, opts, device, seed, policy, rng)
    if problem:
        return rejected(problem, by_check=by_check)
    try:
        return _timed(bench, entry, wl, challenge, shape, profile, opts, dtype, device, clock, sync, policy, rng, seed,
                      own_kernels, triton and device == "cuda" if profile_batches is None else profile_batches,
                      _l2(device) if l2_bytes is None else l2_bytes)
    except Rejected as r:
        return rejected(str(r), by_check=True)
    except Exception as exc:  # noqa: BLE001 - a timed call raised in the cage (a guard, a crash) or the wire failed
        if out_of_memory(exc) == "judge":  # the judge's own work did not fit: not the submission's failure
            _record_out_of_memory(entry, "judge", device, exc)
            flag = tr("gpugrade.judge_out_of_memory", error=first_line(exc)[:300], retries=MEMORY_RETRIES)
            return {**entry, "correct": True, "metrics": {}, "flags": [flag], "level": "flagged",
                    "decision": "reject", "reason": tr("gpugrade.flagged", flags=flag)}
        return rejected(tr("perf.timed_call_failed", error=f"{type(exc).__name__}: {first_line(exc)}"), by_check=True)


def out_of_memory(exc: BaseException) -> str | None:
    """Where device memory ran out: ``"judge"`` (the judge's own allocation, a torch
    ``OutOfMemoryError`` raised here), ``"cage"`` (the executor's, which comes over the wire as a
    RuntimeError naming it), else None."""
    if any(cls.__name__ == "OutOfMemoryError" for cls in type(exc).__mro__):
        return "judge"
    return "cage" if isinstance(exc, RuntimeError) and str(exc).startswith("OutOfMemoryError") else None


def _record_out_of_memory(entry: dict, where: str, device: str, exc: BaseException, scale: float | None = None,
                          cage_peak: int | None = None) -> None:
    """What each process held when device memory ran out (``workload.out_of_memory``)."""
    entry["workload"].setdefault("out_of_memory", []).append(
        {"where": where, "scale": scale, "judge_peak_bytes": _peak_memory(device), "cage_peak_bytes": cage_peak,
         "error": first_line(exc)[:300]})


def _free_judge_memory(device: str) -> None:
    """The judge's cached device blocks back to the device before a retry with smaller batches."""
    import gc
    gc.collect()
    if device == "cuda":
        import torch
        torch.cuda.empty_cache()


def _gate(bench: Bench, wl: Workload, shape: dict, dtype: str, opts: dict, device: str,
          seed: Callable[[], int], policy: CagedPolicy, rng: random.Random) -> tuple[str | None, bool]:
    """(problem, whether a check found it rather than a wrong answer); (None, False) when all is right."""
    cases = [(shape, dtype, False)] + [(s, d, True) for d in [dtype] + [d for d in wl.gate_dtypes if d != dtype]
                                       for s in wl.gate_shapes]
    for case_shape, dt, ragged in cases:
        s = seed()
        inputs = wl.make_inputs(dict(case_shape), dt, opts, s, device, ragged=ragged)  # the judge's own copy
        try:
            info = bench.prepare(workload=wl.name, shape=dict(case_shape), dtype=dt, options=opts, seeds=[s],
                                 ragged=ragged, device=device, poison=True, poison_bytes=4 * _nbytes(inputs) + 2**20)
            if info.get("problem"):  # a torch.compile'd object on the loaded module
                return str(info["problem"]), True
            bench.run(1, 0, [0], gate=True)
            sample = {"seed": rng.randrange(2**31), "count": policy.sample_elements,
                      "whole_up_to": policy.whole_output_elements}
            got = bench.fetch(sample).get(0)
        except Exception as exc:  # noqa: BLE001 - crashed, NotImplementedError, a guard: the gate fails
            problem = f"{type(exc).__name__}: {first_line(exc)}"
        else:
            problem = "no output came back" if got is None else \
                check_outputs(wl, _on(got, device), inputs, opts, sample)
        if problem:
            return (tr("gpugrade.gate_ragged", shape=case_shape, dtype="" if dt == dtype else f" in {dt}",
                       problem=problem) if ragged else problem), False
    return None, False


def _timed(bench, entry, wl, challenge, shape, profile, opts, dtype, device, clock, sync, policy, rng, seed,
           own_kernels, profile_batches, l2_bytes) -> dict[str, Any]:
    """The shape timed with armed batches (CUDA-graph replays for short calls); again with smaller
    graphs if a replay blocked the host, with plain armed batches if the calls cannot be captured,
    unarmed if the cage had to release a plain batch itself."""
    armed, chunk = policy.armed, policy.graph_calls if policy.graphs else 0
    memory_retries = MEMORY_RETRIES
    for _ in range(6 + MEMORY_RETRIES):
        cand = _Candidate(bench, wl, shape, dtype, opts, device, rng, policy, seed)
        cand.armed, cand.graph_ok = armed, chunk >= 16
        try:
            return _sampled(bench, entry, wl, challenge, shape, profile, opts, dtype, device, clock, sync, policy,
                            rng, seed, own_kernels, profile_batches, l2_bytes, cand, chunk)
        except _ArmingFailed:
            note, armed, chunk = tr("gpugrade.arming_failed", seconds=policy.arm_release_s), False, 0
        except _GraphFailed as failed:
            note, chunk = tr("gpugrade.graph_failed", error=str(failed)), 0
        except _GraphBlocked:
            note, chunk = tr("gpugrade.graph_blocked", calls=chunk, seconds=policy.arm_release_s), chunk // 2
        except Exception as exc:  # noqa: BLE001 - device memory ran out: smaller batches; anything else goes up
            where = out_of_memory(exc)
            if where is None or not memory_retries:
                raise
            memory_retries -= 1
            _record_out_of_memory(entry, where, device, exc, scale=policy.memory_scale, cage_peak=cand.peak_bytes)
            policy = replace(policy, memory_scale=policy.memory_scale / 2)
            _free_judge_memory(device)
            note = tr("gpugrade.memory_retry", where=tr(f"gpugrade.memory_where_{where}"),
                      scale=f"{policy.memory_scale:g}")
        entry["workload"].setdefault("notes", []).append(note)
    cand = _Candidate(bench, wl, shape, dtype, opts, device, rng, policy, seed)
    cand.armed, cand.graph_ok = False, False
    return _sampled(bench, entry, wl, challenge, shape, profile, opts, dtype, device, clock, sync, policy, rng, seed,
                    own_kernels, profile_batches, l2_bytes, cand, 0)


def _sampled(bench, entry, wl, challenge, shape, profile, opts, dtype, device, clock, sync, policy, rng, seed,
             own_kernels, profile_batches, l2_bytes, cand, chunk: int) -> dict[str, Any]:
    timer = JudgeClock(clock)
    _reset_peak_memory(device)
    gate = device_gate.gate_or_none(device, fill=policy.gate_fills_device) if policy.armed and cand.armed else None
    base = _Baseline(wl.baselines[challenge["baseline"]], opts, sync, gate, policy.arm_release_s)

    def use_sets(n: int) -> None:  # the baseline's (the judge's own); the candidate's come fresh per batch
        base.sets, base.captured = [], None  # the round before's go first (device memory)
        base.sets = [wl.make_inputs(dict(shape), dtype, opts, seed(), device) for _ in range(n)]

    canary = _canary(device, profile, sync, gate, policy)
    use_sets(1)
    cand.refresh(1, 0)  # the warm-up's set; the sampler refreshes before every batch after it
    set_bytes = max(1, _nbytes(base.sets[0]))
    call_bytes = set_bytes + _nbytes_of(base.fn(base.sets[0], opts))  # a call's inputs and outputs
    # the candidate's round trip (the pipe, armed or not) and an armed judge-side runner's (the gate)
    runners = {"candidate": cand, "baseline": base, **({"canary": canary} if canary is not None else {})}
    one = {name: _one_call(r, timer, clock, policy, trips=r is cand or r.armed) for name, r in runners.items()}
    budget = _device_budget(device, policy)
    one = {name: _call_in_batch(r, timer, one[name], policy, budget // call_bytes if r is cand else policy.max_calls)
           for name, r in runners.items()}
    calls = {name: _calls_for(one[name], policy, r.armed) for name, r in runners.items()}
    if cand.armed and cand.graph_ok and calls["candidate"] >= policy.armed_max_calls and \
            _calls_for(one["candidate"], policy) > policy.armed_max_calls:
        # calls too short for 256 launches to fill a batch: both runners replay CUDA graphs of `chunk` calls
        cand.graph = chunk
        base.graph = chunk if base.armed else 0
        calls.update({name: _calls_for(one[name], policy) for name in ("candidate", "baseline")
                      if name == "candidate" or base.graph})
    for name in ("candidate", "baseline"):  # a batch's calls and their outputs fit the budget, either runner's
        calls[name] = max(1, min(calls[name], budget // call_bytes))
    memory = entry["workload"]["memory"] = {"budget_bytes": budget, "call_bytes": call_bytes,
                                            "scale": policy.memory_scale}  # what capped the batch
    n_sets = max(2, min(max(calls.values()), policy.max_input_sets,
                         int(policy.memory_scale * policy.input_budget_bytes) // set_bytes))
    half = SamplingPolicy(min_samples=max(policy.min_samples // 2, 2), max_samples=max(policy.max_samples // 2, 2),
                          rel_se=policy.rel_se, time_cap_s=policy.time_cap_s / 2)
    timings: dict[str, list[float]] = {name: [] for name in runners}
    stopped, audits = [], []
    cand.clocks.clear()
    cand.breakdowns.clear()
    for rnd in range(2):
        use_sets(n_sets)
        asides = []
        if profile_batches:
            def profiled(runner, calls_in_batch, start, rnd=rnd) -> None:
                answer = bench.run(calls_in_batch, start, [], profile=True)
                kernels = [Kernel(str(k[0]), k[1] if isinstance(k[1], int) else None, str(k[2]))
                           for k in answer.get("kernels") or []]
                found = audit(kernels, own_kernels, [str(name) for name in answer.get("launched") or []])
                audits.append({"round": rnd, "kernels": sorted({k.name[:160] for k in kernels}), "problem": found})
                tuned = reported_configs(answer.get("autotuned"))
                if tuned:  # what the cage says its autotuners chose: explains a figure, decides nothing
                    entry["evidence"] = {**entry["evidence"], "autotuned": tuned}
                if found:
                    raise Rejected(tr("perf.profiled_rejected", round=rnd + 1, problem=found))
            asides.append(("candidate", rng.randrange(max(half.min_samples, 1)), profiled))
        res = sample_interleaved(runners, timer, half, calls, clock=clock, asides=asides)
        for k in timings:
            timings[k] += res.timings[k].samples
        stopped.append(res.stopped)
    base.sets = []
    if canary is not None:
        canary.sets = []
    memory.update(judge_peak_bytes=_peak_memory(device), cage_peak_bytes=cand.peak_bytes)  # where memory went
    if policy.gate_fills_device and cand.armed:
        base_fills = gate is not None and bool(getattr(gate, "fills", False))
        problems = [p for p in (cand.gate.get("problem"), getattr(gate, "fill_problem", None)) if p]
        if not (cand.gate.get("fills") and base_fills):
            entry["workload"].setdefault("notes", []).append(
                tr("gpugrade.gate_not_filling", problem="; ".join(map(str, problems)) or "-"))
    return _verdict(entry, challenge, shape, profile, cand, timings, calls, n_sets, stopped, audits, l2_bytes,
                    set_bytes, base.armed, base.overhead_s)


def _reset_peak_memory(device: str) -> None:
    if device == "cuda":
        import torch
        torch.cuda.reset_peak_memory_stats()


def _peak_memory(device: str) -> int | None:
    """The judge's most device memory held by its allocator since :func:`_reset_peak_memory`."""
    if device != "cuda":
        return None
    import torch
    return int(torch.cuda.max_memory_reserved())


def _device_budget(device: str, policy: CagedPolicy) -> int:
    """Bytes for the cage's input sets and kept outputs of one batch (the cage gave its cache back when
    it made this shape's sets; the judge gives back its own here)."""
    if device != "cuda":
        return int(policy.memory_scale * policy.input_budget_bytes)
    import torch
    torch.cuda.empty_cache()
    return int(policy.memory_scale * policy.device_memory_fraction * torch.cuda.mem_get_info()[0])


def _nbytes_of(value: Any) -> int:
    if isinstance(value, (tuple, list)):
        return sum(_nbytes_of(v) for v in value)
    return int(value.numel() * value.element_size()) if hasattr(value, "numel") else 0


def _release_medians(breakdowns: list[dict]) -> dict[str, float]:
    """The cage's account of its armed releases, median per part, in ms (the record's evidence)."""
    keys = sorted({k for b in breakdowns for k in b if isinstance(b[k], (int, float))})
    return {k.removesuffix("_s"): round(statistics.median(float(b[k]) for b in breakdowns if k in b) * 1e3, 4)
            for k in keys}


def _verdict(entry, challenge, shape, profile, cand, timings, calls, n_sets, stopped, audits, l2_bytes,
             set_bytes, base_armed: bool = False, base_overhead_s: float = 0.0) -> dict[str, Any]:
    unit = METRICS[challenge["metric"]][1]
    amount = work_amount(challenge, shape)
    cand_t, base_t = Timing(timings["candidate"], calls["candidate"]), Timing(timings["baseline"], calls["baseline"])
    scale = 1e9 if unit == "GB/s" else 1e12
    achieved, baseline_achieved = amount / cand_t.median / scale, amount / base_t.median / scale
    ratio = base_t.median / cand_t.median
    judge_s = statistics.median(j for j, _ in cand.clocks) if cand.clocks else 0.0
    inner_s = statistics.median(i for _, i in cand.clocks) if cand.clocks else 0.0
    v = decision.judge(challenge=challenge, profile=profile, achieved=achieved, unit=unit, ratio=ratio,
                       working_set_bytes=amount if unit == "GB/s" else set_bytes, l2_bytes=l2_bytes, correct=True)
    flags = list(v.flags)
    if cand.clocks and clock_disagreement(judge_s, inner_s):
        flags.append(tr("gpugrade.clock_disagreement", judge_ms=f"{judge_s * 1e3:.3f}", inner_ms=f"{inner_s * 1e3:.3f}",
                        rel=f"{CLOCK_TOLERANCE_REL:.0%}", abs_ms=f"{CLOCK_TOLERANCE_ABS_S * 1e3:g}"))
    if cand.tampered:
        flags.append(tr("perf.tampered", names=", ".join(sorted(cand.tampered))))
    if (v.decision == "tune" and not v.flags and cand.armed and cand.clocks and calls["candidate"]
            and judge_s < RESOLVED_BATCH_S):
        # below the bar on a short batch: the judge's clock also holds the cage's own handling of the
        # request beyond what an empty batch's round trip removes (0.4-1 ms a batch on the H200,
        # 0.15-0.55 ms on a CPU), so when the cage's timer reads the bar met, the shortfall is not the judge's to
        # settle: flagged for review with both figures, never accepted
        per_call = inner_s / calls["candidate"]
        alt = decision.judge(challenge=challenge, profile=profile, achieved=amount / per_call / scale, unit=unit,
                             ratio=base_t.median / per_call,
                             working_set_bytes=amount if unit == "GB/s" else set_bytes, l2_bytes=l2_bytes,
                             correct=True)
        if alt.decision == "accept":
            flags.append(tr("gpugrade.unresolved", ratio=f"{ratio:.3f}", cage_ratio=f"{base_t.median / per_call:.3f}",
                            batch_ms=f"{judge_s * 1e3:.2f}", resolved_ms=f"{RESOLVED_BATCH_S * 1e3:g}"))
    canary = None
    if timings.get("canary"):
        copy = float(profile.ceilings["copy_gbps"])
        gbps = 2 * CANARY_BYTES / statistics.median(timings["canary"]) / 1e9
        canary = {"gbps": round(gbps, 1), "fraction_of_copy": round(gbps / copy, 4), "min": CANARY_MIN_FRACTION,
                  "calls": calls.get("canary")}
        if gbps < CANARY_MIN_FRACTION * copy:
            flags.append(tr("gpugrade.device_busy", gbps=f"{gbps:,.0f}", copy=f"{copy:,.0f}",
                            fraction=f"{gbps / copy:.0%}", min=f"{CANARY_MIN_FRACTION:.0%}"))
    level, verdict, reason = v.level, v.decision, v.reason
    if flags and not v.flags:  # the cage's own findings: flagged for review, as every flag
        level, verdict, reason = "flagged", "reject", tr("gpugrade.flagged", flags="; ".join(flags))
    entry["workload"].update(warmup="until JIT/autotune done, >= 3 calls and 0.2 s", samples=len(cand_t.samples),
                             calls_per_sample=calls, input_sets={"baseline": n_sets, "candidate": "fresh per call"},
                             sampling_stopped=stopped)
    entry["metrics"] = {
        "unit": unit, "achieved": float(f"{achieved:.5g}"), "baseline_achieved": float(f"{baseline_achieved:.5g}"),
        "ratio_to_baseline": round(ratio, 4),
        "fraction_of_ceiling": None if v.fraction_of_ceiling is None else round(v.fraction_of_ceiling, 4),
        "candidate": cand_t.summary(), "baseline": base_t.summary(),
        "judge_clock": {"batch_ms": round(judge_s * 1e3, 4), "cage_timer_ms": round(inner_s * 1e3, 4),
                        "round_trip_ms": round(cand.overhead_s * 1e3, 4), "armed": cand.armed,
                        "graph_calls": cand.graph, "gate_fills_device": bool(cand.gate.get("fills")),
                        "baseline_armed": base_armed, "baseline_round_trip_ms": round(base_overhead_s * 1e3, 4),
                        "release_ms": _release_medians(cand.breakdowns), "canary": canary,
                        "tolerance": f"{CLOCK_TOLERANCE_REL:.0%} + {CLOCK_TOLERANCE_ABS_S * 1e3:g} ms"},
        "pass_at": v.pass_at.get("text"), "challenge_at": v.challenge_at and v.challenge_at.get("text"),
        "rechecks": cand.rechecks, "calls_checked": cand.calls_checked,
    }
    if audits:
        entry["evidence"] = {**entry["evidence"], "profiled_batches": audits}
    return {**entry, "correct": True, "flags": flags, "level": level, "decision": verdict, "reason": reason}


def _device_sync(device: str) -> Callable[[], None]:
    if device != "cuda":
        return lambda: None
    import torch
    return torch.cuda.synchronize


def _l2(device: str) -> int:
    if device != "cuda":
        return 0
    import torch
    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0))


def measure_in_cage(remote_module: Any, challenge: dict[str, Any], shape: dict[str, int], profile: Profile, *,
                    exercise: str, target: str, triton: bool, device: str = "cuda",
                    time_cap_s: float | None = None, one_block_gate: bool = False) -> dict[str, Any]:
    """``grade --gpu``: one challenge shape of an isolated ``impl`` module, on the judge's clock
    (``time_cap_s``: seconds of sampling for the shape, ``grade --time-cap``; ``one_block_gate``:
    ``grade --one-block-gate``)."""
    own, problem = submitted_kernels(remote_module)
    policy = CagedPolicy(gate_fills_device=not one_block_gate,
                         **({} if time_cap_s is None else {"time_cap_s": time_cap_s}))
    return run_caged_challenge(RemoteBench(remote_module), challenge, shape, profile, exercise=exercise,
                               target=target, own_kernels=own if triton else frozenset(), triton=triton,
                               source_problem=problem if triton else None, device=device, policy=policy)


PERF_TEST_FILE = "test_perf.py"  # beside a part's hidden tests: its exercises' challenges
PERF_TEST = "test_kernel_is_correct_and_reaches_the_pass_bar"


def perf_cases(course: Any, exercises: Any) -> list[str]:
    """pytest node ids of the performance challenges of ``exercises`` (every shape of each), for the
    pytest run of ``grade --gpu``."""
    from infralab.perf.spec import case_id
    out = []
    for ex in exercises:
        file = (Path(course.root) / ex.hidden_tests).parent / PERF_TEST_FILE
        if ex.perf and file.is_file():
            out += [f"{file}::{PERF_TEST}[{case_id(ex.name, c, shape)}]" for c in ex.perf for shape in c["shapes"]]
    return out


def is_caged(module: Any) -> bool:
    """Whether ``module`` (what ``impl(...)`` returned) lives in a caged executor."""
    from infralab.judge.isolated import RemoteModule
    return isinstance(module, RemoteModule)


