"""Running one challenge at one shape on the GPU: correctness gate, warm-up, interleaved timing,
re-checks on timed outputs, verdict, and the result-record entry (course evidence terms).

Order, for a candidate module and a baseline:
1. correctness gate: the allocator's free memory is poisoned (NaN bytes), the candidate runs on
   fresh random inputs and its outputs are compared with the fp32 reference (a wrong or crashing
   candidate is rejected here, with no timing);
2. warm-up of both (JIT compile, autotune);
3. interleaved sampling in two rounds, each on freshly drawn input sets; the outputs of the last
   timed calls of each round are checked against the reference again;
4. a host wall-time cross-check around a synchronised batch;
5. the verdict (infralab.perf.decision) and the record entry.
"""
from __future__ import annotations

import platform
import random
import subprocess
from collections.abc import Callable
from typing import Any

from infralab.i18n import tr
from infralab.perf import decision
from infralab.perf.checked import CheckedCandidate, autotuned_configs, submission_threads, tampered
from infralab.perf.kernel_audit import audit, audit_baseline
from infralab.perf.harness import (GraphBatch, SamplingPolicy, Timer, Timing, calls_per_sample,
                                   graph_calls_per_sample, sample_interleaved, wall_mismatch, warm_up)
from infralab.perf.profiles import Profile
from infralab.perf.spec import METRICS, work_amounts
from infralab.perf.workloads import WORKLOADS, Workload, refill, sample_index
from infralab.testing import Mismatch, assert_close, assert_equal

INPUT_SET_BUDGET_BYTES = 6 * 2**30


def gpu_environment() -> dict[str, Any]:
    """Device, driver, CUDA, torch, triton and clocks: recorded with every GPU figure."""
    import torch
    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "cuda": torch.version.cuda}
    try:
        import triton
        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(device=p.name, capability=f"{p.major}.{p.minor}", sm_count=p.multi_processor_count,
                   memory_gib=round(p.total_memory / 2**30, 1), l2_mb=round(getattr(p, "L2_cache_size", 0) / 1e6, 1))
        env.update(_nvidia_smi())
    else:
        env["device"] = "cpu"
    return env


def _nvidia_smi() -> dict[str, Any]:
    fields = ["driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "power.limit", "pstate"]
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return {}
    values = [v.strip() for v in out.split(",")]
    return {"driver": values[0], "clocks": dict(zip(fields[1:], values[1:]))} if len(values) == len(fields) else {}


def entry_head(challenge: dict[str, Any], shape: dict[str, int], profile: Profile, *, target: str, exercise: str,
               device: str, protections: list[str]) -> dict[str, Any]:
    """The record entry's workload, candidate, environment, evidence and protections (every route)."""
    wl = WORKLOADS[challenge["workload"]]
    return {
        "exercise": exercise, "challenge": challenge["id"],
        "workload": {"name": wl.name, "shape": dict(shape), "dtype": challenge["dtype"],
                     "options": {**wl.options, **challenge["options"]}, "metric": challenge["metric"],
                     **work_amounts(challenge, shape), "baseline": challenge["baseline"]},
        "candidate": {"target": target, "exercise": exercise, "function": wl.function},
        "environment": gpu_environment() if device == "cuda" else {"device": device},
        "evidence": decision.evidence(profile, on_gpu=device == "cuda"),
        "protections": protections,
    }


def _poison_free_memory(nbytes: int) -> None:
    """Fill a block of the caching allocator with 0xFF bytes (NaN in every float dtype) and free it:
    the candidate's output allocations then start from NaN, not from zeros or an earlier answer."""
    import torch
    block = torch.empty(int(nbytes), dtype=torch.uint8, device="cuda")
    block.fill_(0xFF)
    del block


def _nbytes(value: Any) -> int:
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return int(value.numel() * value.element_size()) if hasattr(value, "numel") else 0


def _outputs(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def check_outputs(wl: Workload, got: Any, inputs: dict, options: dict, sample: dict | None = None) -> str | None:
    """None when ``got`` matches the reference; else the mismatch message. An output that came back
    as ``{"shape", "values"}`` (too large to ship whole from the cage) is compared at the flat
    indices that ``sample`` (the judge's ``seed`` and ``count``) draws, after its shape."""
    expected = _outputs(wl.reference(inputs, options))
    got = _outputs(got)
    if len(got) < len(expected):
        return tr("perf.too_few_outputs", expected=len(expected), names=", ".join(wl.output_names), got=len(got))
    try:
        for name, g, e in zip(wl.output_names, got, expected):
            atol = wl.atol if name == wl.output_names[0] else None
            if isinstance(g, dict) and sample:
                assert_equal(list(g.get("shape") or []), list(e.shape), name=(f"{name} shape", f"{name} 的形状"))
                index = sample_index(e.numel(), int(sample["seed"]), int(sample["count"])).to(e.device)
                g, e = g.get("values"), e.reshape(-1)[index]
                g = g.to(e.device) if hasattr(g, "to") else g
            assert_close(g, e, name=name, reduction=wl.reduction(inputs), atol=atol)
    except Mismatch as m:
        return str(m).splitlines()[0]
    return None


def _gate(module: Any, wl: Workload, inputs: dict, opts: dict, device: str, nbytes: int) -> str | None:
    """None when the candidate's outputs on ``inputs`` (written over poisoned memory) are right."""
    try:
        if device == "cuda":
            _poison_free_memory(4 * nbytes + 2**20)
        got = wl.call(module, inputs, opts)
        _sync(device)
        return check_outputs(wl, got, inputs, opts)
    except Exception as exc:  # crashed, NotImplementedError, a banned routine, ...
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _input_sets(wl: Workload, shape, dtype, options, seed: int, count: int, device: str) -> list[dict]:
    return [wl.make_inputs(shape, dtype, options, seed + i, device) for i in range(count)]


def _sync(device: str) -> None:
    import torch
    if device == "cuda":
        torch.cuda.synchronize()


def run_challenge(module: Any, challenge: dict[str, Any], shape: dict[str, int], profile: Profile, *,
                  timer: Timer, target: str, exercise: str, seed: int = 0,
                  policy: SamplingPolicy | None = None, device: str = "cuda",
                  timed_module: Any = None, profiler: Any = None, capture: Any = None) -> dict[str, Any]:
    """Measure ``module`` (the implementation under test) on one challenge shape; the record entry.

    ``module`` is a :class:`CheckedCandidate` (infralab.perf.checked): its ``gate`` runs the
    correctness gate with every guard of grading, its ``timed`` view of the same module object is
    timed with the checks that cost the device nothing, and for a Triton exercise one timed batch
    per round, at a round drawn at random, runs under ``profiler`` (default
    :func:`infralab.perf.kernel_audit.profile_batch`) instead of the timer: every kernel in it must
    be the submission's own (:func:`infralab.perf.kernel_audit.audit`). A plain module (the torch
    candidates of the harness smoke, or the checks-off measurement) is gated and timed as is,
    ``timed_module`` defaulting to it.
    With ``policy.graphs`` (``bench --graph-batches``; off by default), calls shorter than the
    policy's ``short_kernel_s`` are timed as replays of CUDA graphs of a batch's calls
    (:class:`infralab.perf.harness.GraphBatch`; both runners, as the caged route does), captured once
    per round through the checked calls by ``capture(runner, calls)`` (default:
    :func:`infralab.perf.device_gate.captured_chunks` on a GPU; none on a CPU unless given).
    ``device`` is "cuda" for real measurements; the kit's tests pass "cpu" with a fake timer.
    """
    checked = module if isinstance(module, CheckedCandidate) else None
    if checked is not None:
        module, timed = checked.gate, checked.timed
    else:
        timed = module if timed_module is None else timed_module

    policy = policy or SamplingPolicy()
    wl = WORKLOADS[challenge["workload"]]
    opts = {**wl.options, **challenge["options"]}
    dtype = challenge["dtype"]
    baseline_fn = wl.baselines[challenge["baseline"]]
    amounts = work_amounts(challenge, shape)  # bytes and/or flops: the metric's, and the other for the roofline
    amount = amounts[METRICS[challenge["metric"]][0]]
    unit = METRICS[challenge["metric"]][1]
    entry = entry_head(challenge, shape, profile, target=target, exercise=exercise, device=device,
                       protections=protections(checked))

    def rejected(problem: str, by_check: bool = False) -> dict[str, Any]:
        return rejected_entry(entry, challenge, profile, problem, by_check=by_check)

    if checked is not None and checked.problem:
        return rejected(checked.problem, by_check=True)
    # 1. correctness gate on fresh inputs, outputs poisoned: the challenge shape, then ragged ones
    gate_inputs = wl.make_inputs(shape, dtype, opts, seed, device)
    set_bytes = max(1, _nbytes(list(gate_inputs.values())))
    problem = _gate(module, wl, gate_inputs, opts, device, set_bytes)
    del gate_inputs
    gate_dtypes = [dtype] + [d for d in wl.gate_dtypes if d != dtype]
    for i, (small, dt) in enumerate((s, d) for d in gate_dtypes for s in wl.gate_shapes):
        if problem:
            break
        ragged = wl.make_inputs(small, dt, opts, seed + 7 + i, device, ragged=True)
        problem = _gate(module, wl, ragged, opts, device, _nbytes(list(ragged.values())))
        if problem:
            problem = f"at the ragged shape {small}{'' if dt == dtype else f' in {dt}'}: {problem}"
    if problem:
        return rejected(problem)
    tamper = _tamper_problem(checked)
    if tamper:
        return rejected(tamper, by_check=True)
    try:
        if not policy.graphs:
            capture = None
        elif capture is None and device == "cuda":
            capture = _graph_capture(policy.graph_calls)
        return _timed_part(entry, wl, timed, baseline_fn, challenge, shape, profile, timer, policy, opts, dtype,
                           seed, device, set_bytes, amount, unit, checked, profiler, capture)
    except Rejected as r:
        return rejected(str(r), by_check=True)
    except Exception as exc:  # a timed call raised: a guard (ban, no launch, foreign kernel) or a crash
        return rejected(tr("perf.timed_call_failed", error=f"{type(exc).__name__}: {first_line(exc)}"), by_check=True)


def rejected_entry(entry: dict[str, Any], challenge: dict[str, Any], profile: Profile, problem: str, *,
                   by_check: bool = False) -> dict[str, Any]:
    """``entry`` rejected: a wrong answer (the correctness gate's verdict) or, ``by_check``, a check that
    failed (the answer may be right; how it was computed or timed is not allowed)."""
    if by_check:
        return {**entry, "correct": False, "metrics": {}, "flags": [problem], "level": "rejected by a check",
                "decision": "reject", "reason": problem}
    v = decision.judge(challenge=challenge, profile=profile, achieved=0.0, unit=METRICS[challenge["metric"]][1],
                       ratio=0.0, working_set_bytes=0, l2_bytes=0, correct=False, correctness_message=problem)
    return {**entry, "correct": False, "metrics": {}, "flags": [], "level": v.level,
            "decision": v.decision, "reason": v.reason}


class Rejected(Exception):
    """A check during the timed part failed (the message is the reason)."""


def first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else ""


def _tamper_problem(checked: CheckedCandidate | None = None) -> str | None:
    """The timer's functions replaced, or (of a checked candidate) a thread running the submission's code."""
    names = tampered()
    if names:
        return tr("perf.tampered", names=", ".join(names))
    threads = submission_threads(checked.files) if checked is not None else []
    return tr("perf.submission_thread", threads="; ".join(threads)) if threads else None


class FreshSets:
    """The candidate's runner: call ``i`` on set ``i mod n`` (its outputs kept in ``last``), and before
    each timed batch (the sampler's ``refresh``) the sets the batch will use rewritten in place from
    new seeds, so that no call sees inputs an earlier call saw: a module that caches its answers has
    nothing to reuse, and one keyed by the inputs' addresses answers stale values (the re-check sees them)."""

    def __init__(self, wl: Workload, timed: Any, sets: list[dict], shape, dtype, opts, device, seeds: random.Random):
        self.wl, self.timed, self.sets, self.opts, self.seeds = wl, timed, sets, opts, seeds
        self.shape, self.dtype, self.device = shape, dtype, device
        self.last: dict[int, Any] = {}

    def refresh(self, calls: int, start: int) -> None:
        for j in sorted({(start + i) % len(self.sets) for i in range(calls)}):
            fresh = self.wl.make_inputs(self.shape, self.dtype, self.opts, self.seeds.randrange(2**31), self.device)
            self.sets[j] = refill(self.sets[j], fresh)

    def __call__(self, i: int) -> None:
        self.last[i % len(self.sets)] = self.wl.call(self.timed, self.sets[i % len(self.sets)], self.opts)


def protections(checked: CheckedCandidate | None) -> list[str]:
    """What guarded this measurement (recorded with the entry)."""
    out = ["correctness gate on fresh random inputs, outputs over NaN-poisoned memory",
           "the candidate's inputs rewritten from new seeds before every timed batch, no set twice in a batch",
           "re-check of every input set's latest timed output each round", "host wall-clock cross-check of event time",
           "timer functions compared with their snapshot before and after"]
    if checked is not None:
        out.append("one loaded module for gate and timing")
        out.append("timed calls: banned routines" + (", a Triton launch per call, only the submission's own "
                                                     "Triton kernels" if checked.triton else ""))
        if checked.triton:
            out.append("one timed batch per round (random round) under the CUDA profiler: own Triton kernels "
                       "and torch copy/fill only, on the timed stream; torch.compile rejected")
    return out


def _graph_capture(chunk: int):
    from infralab.perf import device_gate
    return lambda runner, calls: device_gate.captured_chunks(runner, calls, chunk)


def _timed_part(entry, wl, timed, baseline_fn, challenge, shape, profile, timer, policy, opts, dtype, seed,
                device, set_bytes, amount, unit, checked, profiler, capture) -> dict[str, Any]:
    # 2. warm-up; how many calls per event pair; how many input sets
    probe = _input_sets(wl, shape, dtype, opts, seed + 1, 1, device)
    one_cand = warm_up(lambda i: wl.call(timed, probe[0], opts), timer)
    one_base = warm_up(lambda i: baseline_fn(probe[0], opts), timer)
    del probe
    calls = {"candidate": calls_per_sample(one_cand, policy), "baseline": calls_per_sample(one_base, policy)}
    eager_calls = dict(calls)  # what a batch holds if its calls cannot be captured
    graphs = capture is not None and calls["candidate"] > 1  # short calls: graph replays, both runners
    if graphs:
        calls = {"candidate": graph_calls_per_sample(one_cand, policy),
                 "baseline": graph_calls_per_sample(one_base, policy)}
    n_sets = max(2, min(max(calls.values()), INPUT_SET_BUDGET_BYTES // set_bytes))
    calls["candidate"] = min(calls["candidate"], n_sets)  # no set twice in a batch (FreshSets)
    if graphs:  # a graph's calls read sets 0 .. calls - 1, all rewritten before each replay
        calls["baseline"] = min(calls["baseline"], n_sets)
        n_sets = calls["candidate"]

    # 3. two rounds of interleaved sampling on fresh input sets, re-checking timed outputs
    timings: dict[str, list[float]] = {"candidate": [], "baseline": []}
    stopped, notes, rechecks, audits = [], [], [], []
    half = SamplingPolicy(**{**policy.__dict__, "min_samples": max(policy.min_samples // 2, 2),
                             "max_samples": max(policy.max_samples // 2, 2), "time_cap_s": policy.time_cap_s / 2})
    for rnd in range(2):
        sets = _input_sets(wl, shape, dtype, opts, seed + 100 * (rnd + 1), n_sets, device)
        cand = FreshSets(wl, timed, sets, shape, dtype, opts, device, random.Random(seed + rnd))
        last = cand.last

        def base(i: int, sets=sets) -> None:
            baseline_fn(sets[i % len(sets)], opts)

        runners = {"candidate": cand, "baseline": base}
        if graphs:
            try:
                runners = {"candidate": GraphBatch(cand, calls["candidate"], capture),
                           "baseline": GraphBatch(base, calls["baseline"], capture)}
            except Exception as exc:  # noqa: BLE001 - what a graph cannot hold: eager batches from here on,
                # sized as eager batches are: hundreds of eager launches would most likely fill the launch queue
                # behind the spin and time the host's enqueueing (graph-sized eager batches read 0.05-0.07x
                # on an H100, 2026-12-06)
                graphs = False
                notes.append(tr("perf.graph_failed", error=f"{type(exc).__name__}: {first_line(exc)[:200]}"))
                calls = {k: min(v, eager_calls[k]) for k, v in calls.items()}
                cand.last.clear()
                _sync(device)
        asides = []
        if checked is not None and checked.triton:
            asides.append(_profiled_aside("candidate", rnd, half.min_samples, profiler, audits, "perf.profiled_rejected",
                                          lambda kernels, launched: audit(kernels, checked.own_kernels, launched)))
        if device == "cuda" or profiler is not None:
            asides.append(_profiled_aside("baseline", rnd, half.min_samples, profiler, audits,
                                          "perf.profiled_baseline_rejected",
                                          lambda kernels, launched: audit_baseline(kernels)))
        res = sample_interleaved(runners, timer, half, calls, asides=asides)
        tamper = _tamper_problem(checked)
        if tamper:
            raise Rejected(tamper)
        for k in timings:
            timings[k] += res.timings[k].samples
        stopped.append(res.stopped)
        notes += res.notes
        _sync(device)
        # every set's latest output (each set is rewritten just before a batch uses it, so the two match)
        problem = next((p for p in (check_outputs(wl, last[k], sets[k], opts) for k in sorted(last)) if p), None)
        rechecks.append(problem or "ok")
        last.clear()
        if rnd == 1:
            event_s, wall_s = timer.wall_check(runners["candidate"], max(calls["candidate"], 8))
        del sets, runners
    cand_t = Timing(timings["candidate"], calls["candidate"])
    base_t = Timing(timings["baseline"], calls["baseline"])
    scale = 1e9 if unit == "GB/s" else 1e12
    achieved = amount / cand_t.median / scale
    baseline_achieved = amount / base_t.median / scale
    ratio = base_t.median / cand_t.median
    correct = all(r == "ok" for r in rechecks)
    mismatch = wall_mismatch(event_s, wall_s)
    ws = amount if unit == "GB/s" else set_bytes
    v = decision.judge(challenge=challenge, profile=profile, achieved=achieved, unit=unit, ratio=ratio,
                       working_set_bytes=ws, l2_bytes=timer_l2(timer), correct=correct, wall_mismatch=mismatch,
                       correctness_message="; ".join(r for r in rechecks if r != "ok"))
    entry["workload"].update(warmup="until JIT/autotune done, >= 3 calls and 0.2 s", samples=len(cand_t.samples),
                             calls_per_sample=calls, input_sets=n_sets, l2_flush_bytes=getattr(timer, "flush_bytes", None),
                             graph_replays=graphs,
                             sampling_stopped=stopped, notes=notes)
    entry["metrics"] = {
        "unit": unit, "achieved": _sig(achieved), "baseline_achieved": _sig(baseline_achieved),
        "ratio_to_baseline": round(ratio, 4),
        "fraction_of_ceiling": None if v.fraction_of_ceiling is None else round(v.fraction_of_ceiling, 4),
        "candidate": cand_t.summary(), "baseline": base_t.summary(),
        "wall_check": {"event_ms": round(event_s * 1e3, 4), "wall_ms": round(wall_s * 1e3, 4)},
        "pass_at": v.pass_at.get("text"), "challenge_at": v.challenge_at and v.challenge_at.get("text"),
        "rechecks": rechecks,
    }
    if audits:
        entry["evidence"] = {**entry["evidence"], "profiled_batches": audits}
    tuned = autotuned_configs(checked.files) if checked is not None else {}
    if tuned:
        entry["evidence"] = {**entry["evidence"], "autotuned": tuned}
    return {**entry, "correct": correct, "flags": v.flags, "level": v.level, "decision": v.decision,
            "reason": v.reason}


_ROUND_PICK = random.SystemRandom()  # which batch is profiled: not predictable from the seed


def _profiled_aside(name: str, rnd: int, rounds: int, profiler: Any, audits: list, message: str,
                    judge: Callable[[list, list], str | None]):
    """An aside of :func:`infralab.perf.harness.sample_interleaved`: runner ``name``'s batch, in a round drawn
    at random among the first ``rounds``, runs under ``profiler`` (default: the CUDA profiler) instead of the
    timer; ``judge(kernels, launched)`` names a problem, which rejects the candidate (catalogue key ``message``)."""
    def profiled(runner, n, start) -> None:
        kernels, launched = (profiler or _default_profiler())(lambda: [runner(start + i) for i in range(n)])
        found = judge(kernels, launched)
        audits.append({"round": rnd, "runner": name, "kernels": sorted({k.name[:160] for k in kernels}),
                       "problem": found})
        if found:
            raise Rejected(tr(message, round=rnd + 1, problem=found))
    return name, _ROUND_PICK.randrange(max(rounds, 1)), profiled


def _default_profiler():
    from infralab.perf.kernel_audit import profile_batch
    return profile_batch


def _sig(x: float, digits: int = 5) -> float:
    return float(f"{x:.{digits}g}")


def timer_l2(timer: Timer) -> int:
    return int(getattr(timer, "l2_bytes", 0))
