"""Caged GPU grading's protocol on a CPU (infralab.perf.caged): the judge picks the seeds, checks the
outputs itself (timed batches too), times batches on its own clock less the round trip, and flags a
cage timer that disagrees. The executor's side is a fake here (its own tests: test_caged_perf_cage.py)."""
from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import torch

from infralab.perf.caged import CagedPolicy, clock_disagreement, derived_seeds, run_caged_challenge
from infralab.perf.kernel_audit import Kernel
from infralab.perf.profiles import load_profiles
from infralab.perf.spec import validate_challenge
from infralab.perf.workloads import WORKLOADS, call_seed

ROOT = Path(__file__).resolve().parents[1]
H200 = load_profiles(ROOT / "hardware_profiles")["h200"]
ADD = WORKLOADS["vector_add"]
SMALL = CagedPolicy(min_samples=4, max_samples=4, time_cap_s=60.0, batch_target_s=4e-3, warmup_s=0.0, null_trips=3)
CHALLENGE = validate_challenge(Path("course.yml"), "perf[0]", {
    "workload": "vector_add", "shapes": [{"N": 300}], "dtype": "float32", "metric": "bandwidth",
    "bytes": "3*N*s", "baseline": "eager", "pass": {"fraction": 0.6, "of": "baseline"},
    "challenge": {"fraction": 0.9, "of": "baseline"}})


class FakeClock:
    """The judge's clock: moves only when the fake device works."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Right:
    @staticmethod
    def vector_add(x, y):
        return x + y


class FakeBench:
    """The executor's side, in-process: each call costs ``per_call`` of the fake clock on the device
    and ``host_per_call`` to enqueue (an unarmed batch costs the larger of the two per call; an armed
    one, the enqueueing at arming and the device's share after go), each request ``trip``; the cage's
    own timer reports ``cage_timer(true seconds)``. ``can_arm=False``: a cage without Triton;
    ``release_early``: the cage's watchdog released every armed batch; ``go_extra``: what the go of a
    batch with calls costs beyond an empty one's round trip (seen on the H200 and on a CPU)."""

    def __init__(self, module, clock: FakeClock, per_call=1e-3, trip=5e-3, cage_timer=lambda s: s, tampered=(),
                 kernels=None, alter_inputs=False, host_per_call=0.0, can_arm=True, release_early=False, go_extra=0.0,
                 graph_failed=None, graph_blocks_over=None):
        self.module, self.clock, self.per_call, self.trip, self.go_extra = module, clock, per_call, trip, go_extra
        self.host_per_call, self.can_arm, self.release_early = host_per_call, can_arm, release_early
        self.graph_failed, self.graph_blocks_over = graph_failed, graph_blocks_over
        self.armed = None
        self.cage_timer, self.tampered, self.kernels, self.alter_inputs = cage_timer, list(tampered), kernels, alter_inputs
        self.autotuned: dict = {}  # what the cage reports its autotuners chose (profiled batches)
        self.seeds: list[int] = []
        self.requests: list[dict] = []
        self.kept: dict[int, tuple] = {}

    def prepare(self, *, workload, shape, dtype, options, seeds, ragged, device, poison, poison_bytes=0):
        self.seeds += seeds
        self.wl, self.opts = WORKLOADS[workload], options
        self.sets = [self.wl.make_inputs(shape, dtype, options, s, "cpu", ragged=ragged) for s in seeds]
        if self.alter_inputs and not poison:  # the timed sets only: the gate saw the real ones
            self.sets = [{k: torch.ones_like(v) for k, v in s.items()} for s in self.sets]
        return {"sets": len(self.sets), "problem": None}

    def run(self, calls, start, keep, *, gate=False, profile=False, arm=0.0, graph=0, fill=False):
        self.requests.append({"calls": calls, "gate": gate, "profile": profile, "arm": arm, "keep": keep,
                              "sets": len(self.sets), "graph": graph, "start": start})
        self.clock.now += self.trip
        if arm and not gate and not profile:
            if not self.can_arm:
                return {"armed": False}
            if graph and self.graph_failed:
                return {"armed": False, "graph_failed": self.graph_failed}
            self.clock.now += calls * self.host_per_call  # enqueued behind the wait: before the judge's clock
            self.armed = (calls, start, keep)
            self.blocked = bool(graph) and self.graph_blocks_over is not None and graph > self.graph_blocks_over
            return {"armed": True}
        self._calls(calls, start, keep, max(self.per_call, self.host_per_call))
        if profile:
            return {"kernels": [[k.name, k.stream, k.kind] for k in self.kernels], "launched": ["add_kernel"] * calls,
                    "tampered": [], "autotuned": self.autotuned}
        return {"inner_s": self.cage_timer(calls * self.per_call), "tampered": self.tampered}

    def _calls(self, calls, start, keep, per_call):
        kept = {}
        for i in range(calls):
            out = self.wl.call(self.module, self.sets[(start + i) % len(self.sets)], self.opts)
            self.clock.now += per_call
            if keep is None or i in keep:
                kept[i] = out if isinstance(out, tuple) else (out,)
        self.kept = kept

    def go(self):
        (calls, start, keep), self.armed = self.armed, None
        self.clock.now += self.trip + (self.go_extra if calls else 0.0)  # the cage's handling after calls
        self._calls(calls, start, keep, self.per_call)
        return {"inner_s": self.cage_timer(calls * self.per_call), "tampered": self.tampered,
                "released_early": (self.release_early or getattr(self, "blocked", False)) and calls > 0}

    def fetch(self, sample=None):
        self.fetched = sample
        kept, self.kept = self.kept, {}
        named = (sample or {}).get("calls")
        every = (sample or {}).get("every")  # the others come whole here: the judge's check is the same
        return kept if named is None or every else {c: kept[c] for c in named if c in kept}


@pytest.fixture
def eager_baseline(monkeypatch):
    """The judge's baseline costs 1 ms per call of the fake clock (its real work is done too)."""
    def use(clock: FakeClock, per_call=1e-3):
        real = ADD.baselines["eager"]

        def timed(inputs, opts):
            clock.now += per_call
            return real(inputs, opts)
        monkeypatch.setitem(ADD.baselines, "eager", timed)
    return use


def run(bench, clock, **kw):
    kw = {"policy": SMALL, "rng": random.Random(7), "own_kernels": frozenset({"add_kernel"}), "triton": True,
          "device": "cpu", "l2_bytes": 0, **kw}
    return run_caged_challenge(bench, CHALLENGE, CHALLENGE["shapes"][0], H200, exercise="part03_kernels.vector_add",
                               target="alice", clock=clock, **kw)


def test_the_judge_picks_every_seed_and_its_clock_less_the_round_trip_is_the_figure(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    bench = FakeBench(Right, clock, per_call=1e-3, trip=5e-3)
    e = run(bench, clock)
    assert e["decision"] == "accept" and e["correct"], e["reason"]
    recorded = e["workload"]["seeds"]  # the gate's and the baseline's, and each timed batch's (its sets derive)
    derived = {d for s in recorded for d in derived_seeds(s, max(e["workload"]["calls_per_sample"].values()))}
    assert set(bench.seeds) <= set(recorded) | derived and len(set(bench.seeds)) == len(bench.seeds) > 3
    assert e["metrics"]["candidate"]["median_ms"] == pytest.approx(1.0)  # 5 ms round trip subtracted
    assert e["metrics"]["ratio_to_baseline"] == pytest.approx(1.0)
    assert e["metrics"]["judge_clock"]["round_trip_ms"] == pytest.approx(5.0)
    assert any(r["calls"] > 1 for r in bench.requests)  # batches sized to batch_target_s, not single calls
    assert all(r == "ok" for r in e["metrics"]["rechecks"]) and len(e["metrics"]["rechecks"]) >= 4
    for key in ("workload", "candidate", "environment", "metrics", "evidence", "decision", "protections"):
        assert key in e  # the keys of infralab bench's entries
    assert "judge's clock" in e["evidence"]["timing"]


def test_a_cage_timer_that_disagrees_with_the_judge_flags_but_the_figure_stays_the_judges(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    e = run(FakeBench(Right, clock, per_call=10e-3, cage_timer=lambda s: s / 3), clock)
    assert e["decision"] == "reject" and e["level"] == "flagged"
    assert "disagrees with the judge's clock" in e["reason"]
    assert e["metrics"]["candidate"]["median_ms"] == pytest.approx(10.0)


def test_the_cross_check_tolerance_is_relative_plus_absolute():
    assert not clock_disagreement(0.100, 0.091) and clock_disagreement(0.100, 0.087)
    assert not clock_disagreement(0.001, 0.0) and clock_disagreement(0.010, 0.005)


def test_timer_functions_replaced_in_the_cage_reject_by_name(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    e = run(FakeBench(Right, clock, tampered=["torch.cuda.Event.elapsed_time"]), clock)
    assert e["decision"] == "reject" and "torch.cuda.Event.elapsed_time" in e["reason"]


class RightInTheGateOnly:
    """Right for the gate's calls, then a cheaper wrong answer: the count is its only cue."""

    calls = 0

    @classmethod
    def vector_add(cls, x, y):
        cls.calls += 1
        return x + y if cls.calls <= 12 else x


def test_outputs_of_timed_batches_are_checked_by_the_judge(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    bench = FakeBench(RightInTheGateOnly, clock)
    e = run(bench, clock)
    assert e["decision"] == "reject" and "timed batch's output was wrong" in e["reason"]
    assert any(r["gate"] for r in bench.requests)


class WrongOnEveryThirdTimedCall:
    """Right in the gate and on two timed calls of three: a module that could tell the checked calls
    from the others would answer right on those only."""

    calls = 0

    @classmethod
    def vector_add(cls, x, y):
        cls.calls += 1
        return x if cls.calls > 12 and cls.calls % 3 == 0 else x + y


def test_the_cage_keeps_every_output_and_learns_the_checked_calls_only_after_the_batch(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    bench = FakeBench(Right, clock)
    e = run(bench, clock)
    assert e["decision"] == "accept", e["reason"]
    timed = [r for r in bench.requests if not r["gate"] and not r["profile"] and r["calls"]]
    assert timed and all(r["keep"] is None for r in timed)  # nothing in the cage names the checked calls
    assert all(r["sets"] >= r["calls"] for r in timed)  # one fresh set per call: no inputs seen twice
    assert len(bench.fetched["calls"]) == SMALL.checks_per_batch
    assert len(e["metrics"]["rechecks"]) >= SMALL.checks_per_batch * e["workload"]["samples"]
    calls = e["workload"]["calls_per_sample"]["candidate"]
    assert e["metrics"]["calls_checked"] >= calls * e["workload"]["samples"] and bench.fetched["every"] > 0
    WrongOnEveryThirdTimedCall.calls = 0
    e = run(FakeBench(WrongOnEveryThirdTimedCall, clock), clock)
    assert e["decision"] == "reject" and "timed batch's output was wrong" in e["reason"]


def test_inputs_the_cage_changed_are_caught_by_the_judges_own_inputs(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    e = run(FakeBench(Right, clock, alter_inputs=True), clock)
    assert e["decision"] == "reject" and "timed batch's output was wrong" in e["reason"]


class Wrong:
    @staticmethod
    def vector_add(x, y):
        return x - y


def test_a_wrong_answer_fails_the_gate_and_nothing_is_timed(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    bench = FakeBench(Wrong, clock)
    e = run(bench, clock)
    assert e["decision"] == "reject" and e["level"] == "incorrect" and e["metrics"] == {}
    assert bench.requests and all(r["gate"] for r in bench.requests)


def test_the_judge_audits_the_profiled_batch_against_the_kernels_it_read(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    marker = Kernel("at::cuda::(anonymous namespace)::spin_kernel(long)", 7)
    bench = FakeBench(Right, clock, kernels=[marker, Kernel("add_kernel", 7)])
    bench.autotuned = {"add_kernel": {"1048576, torch.float32": "BLOCK: 1024, num_warps: 4"}, "junk": "not a dict"}
    ok = run(bench, clock, profile_batches=True)
    assert ok["decision"] == "accept" and len(ok["evidence"]["profiled_batches"]) == 2
    assert ok["evidence"]["autotuned"] == {"add_kernel": {"1048576, torch.float32": "BLOCK: 1024, num_warps: 4"}}
    bad = run(FakeBench(Right, clock, kernels=[marker, Kernel("add_kernel", 7), Kernel("nvjet_tst_128x64", 7)]),
              clock, profile_batches=True)
    assert bad["decision"] == "reject" and "nvjet_tst_128x64" in bad["reason"]


def test_a_source_problem_found_by_the_judge_rejects_before_any_request(eager_baseline):
    clock = FakeClock()
    bench = FakeBench(Right, clock)
    e = run(bench, clock, source_problem="part03_kernels/vector_add.py: line 3: torch.compile")
    assert e["decision"] == "reject" and "torch.compile" in e["reason"] and bench.requests == []


class BannedWhenTimed(FakeBench):
    """A guard of the timed calls trips in the cage (the error comes back as the executor sent it)."""

    def run(self, calls, start, keep, *, gate=False, profile=False, arm=0.0, graph=0, fill=False):
        if calls and not gate:
            raise RuntimeError("BannedCall: aten.add (elementwise class) on the torch side of a timed call")
        return super().run(calls, start, keep, gate=gate, profile=profile, arm=arm, graph=graph)


def test_a_guard_tripped_in_a_timed_call_rejects_with_the_cages_error(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    e = run(BannedWhenTimed(Right, clock), clock)
    assert e["decision"] == "reject" and "a timed call failed" in e["reason"] and "aten.add" in e["reason"]


def test_a_replaced_part_of_the_executors_challenge_side_is_a_disabled_guard(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT / "infralab" / "judge"))  # as in the cage: the kit's folder on the path
    import executor
    import perf_ops

    from infralab import guards
    from infralab.judge import wire
    monkeypatch.setattr(executor, "flag", lambda kind, detail: None)  # main() binds the flag channel's sender
    session = executor.Session({"code": str(tmp_path), "package": "exercises"}, torch, wire, {}, guards,
                               executor.flag)
    session.perf = perf_ops.PerfOps(session)
    session.intact.update(session.perf_parts())
    assert session.lost_guards() == []
    monkeypatch.setattr(perf_ops.PerfOps, "_inner_timed", lambda self, batch: 1.0)
    monkeypatch.setattr(perf_ops.checked, "tampered", lambda: [])
    assert session.lost_guards() == ["PerfOps._inner_timed", "checked.tampered"]


def test_armed_batches_leave_the_hosts_enqueueing_out_of_the_judges_clock(eager_baseline):
    """3 ms of host work per call (Python, the guards, the launcher) before 1 ms on the device: armed,
    the figure is the device's 1 ms, as the bench's spin kernel makes it; unarmed, the host's 3 ms."""
    clock = FakeClock()
    eager_baseline(clock)
    armed = run(FakeBench(Right, clock, per_call=1e-3, host_per_call=3e-3), clock)
    assert armed["metrics"]["candidate"]["median_ms"] == pytest.approx(1.0)
    assert armed["metrics"]["judge_clock"]["armed"] is True and armed["decision"] == "accept"
    clock = FakeClock()
    eager_baseline(clock)
    bench = FakeBench(Right, clock, per_call=1e-3, host_per_call=3e-3)
    plain = run(bench, clock, policy=CagedPolicy(**{**vars(SMALL), "armed": False}))
    assert plain["metrics"]["candidate"]["median_ms"] == pytest.approx(3.0)
    assert plain["metrics"]["judge_clock"]["armed"] is False
    assert not any(r["arm"] for r in bench.requests)


def test_the_baseline_is_armed_in_the_judges_process_as_the_candidate_is_in_the_cage(monkeypatch):
    """The library baseline's host work (3 ms a call here) is left out as the candidate's is: both
    figures are the device's 1 ms, so a small shape's ratio is not the candidate's device time
    against the baseline's host time. With the gate unavailable both are timed unarmed."""
    from infralab.perf import device_gate

    clock, calls = FakeClock(), []
    real = ADD.baselines["eager"]

    def host_bound(inputs, opts):  # enqueueing costs the host 3 ms; the device's 1 ms comes at the go
        clock.now += 3e-3
        calls.append(1)
        return real(inputs, opts)

    class FakeArmed:
        def __init__(self, gate, run, release_s):
            calls.clear()
            run()
            self.n = len(calls)

        def go(self):
            clock.now += 1e-3 * self.n + 2e-4  # the device's share, plus the release's own cost
            return 1e-3 * self.n, False, {}

    monkeypatch.setitem(ADD.baselines, "eager", host_bound)
    monkeypatch.setattr(device_gate, "Armed", FakeArmed)
    monkeypatch.setattr(device_gate, "gate_or_none", lambda device, fill=False: object())
    e = run(FakeBench(Right, clock, per_call=1e-3, host_per_call=3e-3), clock)
    assert e["metrics"]["baseline"]["median_ms"] == pytest.approx(1.0)
    assert e["metrics"]["judge_clock"]["baseline_armed"] is True
    assert e["metrics"]["judge_clock"]["baseline_round_trip_ms"] == pytest.approx(0.2)
    assert e["metrics"]["ratio_to_baseline"] == pytest.approx(1.0)
    monkeypatch.setattr(device_gate, "gate_or_none", lambda device, fill=False: None)
    e = run(FakeBench(Right, clock, per_call=1e-3, host_per_call=3e-3, can_arm=False), clock)
    assert e["metrics"]["judge_clock"]["baseline_armed"] is False
    assert e["metrics"]["baseline"]["median_ms"] == pytest.approx(3.0)


@pytest.mark.parametrize("copy_ms, flagged", [(0.13, False), (0.30, True)])
def test_a_slow_canary_copy_flags_work_left_running_on_the_device(monkeypatch, eager_baseline, copy_ms, flagged):
    """The judge's own 256 MiB copy runs in the same gaps as the baseline (where code left running in
    the cage could slow the baseline and lift the ratio); on the H200 profile (4,228 GB/s calibrated)
    0.13 ms a copy is 4,130 GB/s (98%), 0.30 ms is 1,790 GB/s (42%: flagged, rejected for review)."""
    from infralab.perf import caged

    clock = FakeClock()
    eager_baseline(clock)

    class FakeCopy:
        armed, overhead_s, sets = False, 0.0, []

        def __call__(self, i):
            self.batch(1, i)

        def batch(self, calls, start):
            clock.now += calls * copy_ms * 1e-3

        def settle(self, calls, start, judge_s):
            pass

    monkeypatch.setattr(caged, "_canary", lambda device, profile, sync, gate, policy: FakeCopy())
    e = run(FakeBench(Right, clock), clock)
    canary = e["metrics"]["judge_clock"]["canary"]
    assert canary["fraction_of_copy"] == pytest.approx(2 * caged.CANARY_BYTES / (copy_ms * 1e-3) / 1e9 / 4228.0,
                                                       rel=1e-3)
    assert (e["level"] == "flagged") is flagged
    assert ("judge's own device copy" in e["reason"]) is flagged
    if not flagged:
        assert e["decision"] == "accept"


def test_armed_batches_are_capped_so_the_launch_queue_holds_them(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    bench = FakeBench(Right, clock, per_call=1e-6)
    e = run(bench, clock, policy=CagedPolicy(**{**vars(SMALL), "armed_max_calls": 64, "graphs": False}))
    assert e["workload"]["calls_per_sample"]["candidate"] == 64
    assert max(r["calls"] for r in bench.requests if r["arm"]) == 64


def test_batches_are_sized_from_a_batch_not_from_a_lone_call(eager_baseline):
    """A lone call also holds the cage's handling of the request (go_extra here, 0.2-0.5 ms on a GPU);
    sized from it, a 10 us kernel's batches would hold 10 calls, mostly that handling."""
    clock = FakeClock()
    eager_baseline(clock, per_call=1e-5)
    bench = FakeBench(Right, clock, per_call=1e-5, go_extra=4e-4)
    e = run(bench, clock, policy=CagedPolicy(**{**vars(SMALL), "graphs": False}))
    lone = math.ceil(SMALL.batch_target_s / (1e-5 + 4e-4))
    sizing = [r["calls"] for r in bench.requests if r["arm"] and r["calls"] > 1][:3]
    assert sizing[0] == lone and sizing == sorted(sizing)
    assert e["workload"]["calls_per_sample"]["candidate"] >= 10 * lone
    assert e["metrics"]["candidate"]["median_ms"] < 1.2 * 1e-2  # the handling spread over the batch


@pytest.mark.parametrize("failure", [None, "RuntimeError: operation not permitted when stream is capturing"])
def test_calls_too_short_to_fill_an_armed_batch_are_replayed_from_graphs(eager_baseline, failure):
    """Past the launch queue's 64 here, the batch is replayed from CUDA graphs of graph_calls calls
    each (the same calls and sets every time: start 0), up to max_calls; a call a graph cannot hold:
    plain armed batches, a note."""
    clock = FakeClock()
    eager_baseline(clock, per_call=1e-6)
    bench = FakeBench(Right, clock, per_call=1e-6, graph_failed=failure)
    e = run(bench, clock, policy=CagedPolicy(**{**vars(SMALL), "armed_max_calls": 64, "max_calls": 2000,
                                                "graph_calls": 500}))
    assert e["decision"] == "accept", e["reason"]
    sizing, *timed = [r for r in bench.requests if r["arm"] and r["calls"] > 1]
    assert sizing["graph"] == 0 and sizing["calls"] == 64  # sized from a plain armed batch first
    calls = e["workload"]["calls_per_sample"]["candidate"]
    if failure is None:
        assert calls == 2000 and e["metrics"]["judge_clock"]["graph_calls"] == 500
        assert all(r["graph"] == 500 and r["start"] == 0 and r["calls"] == 2000 for r in timed)
    else:
        assert calls == 64 and e["metrics"]["judge_clock"]["graph_calls"] == 0
        assert any("CUDA graph" in note and "capturing" in note for note in e["workload"]["notes"])
        assert max(r["calls"] for r in bench.requests if r["arm"] and not r["graph"]) == 64


def test_graphs_whose_replay_blocked_the_host_are_captured_again_with_half_the_calls(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock, per_call=1e-6)
    bench = FakeBench(Right, clock, per_call=1e-6, graph_blocks_over=300)
    e = run(bench, clock, policy=CagedPolicy(**{**vars(SMALL), "armed_max_calls": 64, "max_calls": 2000,
                                                "graph_calls": 1000}))
    assert e["decision"] == "accept", e["reason"]
    assert e["workload"]["calls_per_sample"]["candidate"] == 2000 and e["metrics"]["judge_clock"]["graph_calls"] == 250
    notes = e["workload"]["notes"]
    assert [n for n in notes if "half" in n] and any("1000 calls" in n for n in notes) and any("500 calls" in n for n in notes)


class OutOfMemoryBench(FakeBench):
    """The cage's allocator runs out on armed batches of more than ``fits`` calls (as it answers over
    the wire: a RuntimeError naming the torch error)."""

    def __init__(self, *a, fits: int, **kw):
        super().__init__(*a, **kw)
        self.fits = fits

    def run(self, calls, start, keep, **kw):
        if kw.get("arm") and calls > self.fits:
            raise RuntimeError("OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB.")
        return super().run(calls, start, keep, **kw)


def test_batches_that_ran_out_of_device_memory_are_timed_again_with_half_the_budget(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock, per_call=1e-5)
    call_bytes = 3 * 300 * 4  # x, y and the output of one call
    policy = CagedPolicy(**{**vars(SMALL), "graphs": False, "input_budget_bytes": 40 * call_bytes})
    bench = OutOfMemoryBench(Right, clock, per_call=1e-5, fits=15)
    e = run(bench, clock, policy=policy)
    assert e["decision"] == "accept", e["reason"]
    assert e["workload"]["calls_per_sample"]["candidate"] == 10  # 40, then 20, then 10 calls' memory
    assert e["workload"]["memory"]["scale"] == 0.25
    notes = [n for n in e["workload"]["notes"] if "out of memory" in n]
    assert len(notes) == 2 and all("caged executor" in n for n in notes)
    assert [(o["where"], o["scale"]) for o in e["workload"]["out_of_memory"]] == [("cage", 1.0), ("cage", 0.5)]


def test_the_baselines_batches_fit_the_memory_budget_as_the_candidates_do(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock, per_call=1e-5)
    call_bytes = 3 * 300 * 4
    e = run(FakeBench(Right, clock, per_call=1e-5),
            clock, policy=CagedPolicy(**{**vars(SMALL), "graphs": False, "input_budget_bytes": 12 * call_bytes}))
    assert e["workload"]["calls_per_sample"] == {"candidate": 12, "baseline": 12}


def test_graph_replayed_batches_of_the_baseline_fit_the_memory_budget_too(eager_baseline):
    """Short calls go to CUDA graphs sized by time (2000 calls here); a graph keeps every call's output,
    so the baseline's graph is held to the budget as the candidate's batch is (H100: softmax large)."""
    clock = FakeClock()
    eager_baseline(clock, per_call=1e-6)
    call_bytes = 3 * 300 * 4
    e = run(FakeBench(Right, clock, per_call=1e-6), clock, policy=CagedPolicy(**{
        **vars(SMALL), "armed_max_calls": 64, "max_calls": 2000, "graph_calls": 500,
        "input_budget_bytes": 300 * call_bytes}))
    assert e["decision"] == "accept", e["reason"]
    assert e["metrics"]["judge_clock"]["graph_calls"] == 500
    assert e["workload"]["calls_per_sample"] == {"candidate": 300, "baseline": 300}


def test_the_judges_own_memory_running_out_flags_for_review_not_the_submission(monkeypatch, eager_baseline):
    clock = FakeClock()

    def no_memory(inputs, opts):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 256.00 MiB.")
    monkeypatch.setitem(ADD.baselines, "eager", no_memory)
    e = run(FakeBench(Right, clock), clock)
    assert e["level"] == "flagged" and e["decision"] == "reject" and e["correct"]
    assert "judge's own work ran out of device memory" in e["reason"] and "timed call failed" not in e["reason"]
    assert len([n for n in e["workload"]["notes"] if "judge's own work" in n]) == 2
    assert [o["where"] for o in e["workload"]["out_of_memory"]] == ["judge"] * 3


def test_a_cage_that_runs_out_of_memory_at_every_size_is_rejected_with_the_error():
    clock = FakeClock()
    e = run(OutOfMemoryBench(Right, clock, fits=0), clock)
    assert e["decision"] == "reject" and "out of memory" in e["reason"] and e["level"] == "rejected by a check"


def test_a_batch_the_cage_released_itself_is_timed_again_unarmed_with_a_note(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    e = run(FakeBench(Right, clock, per_call=1e-3, host_per_call=3e-3, release_early=True), clock)
    assert e["metrics"]["judge_clock"]["armed"] is False
    assert e["metrics"]["candidate"]["median_ms"] == pytest.approx(3.0)  # the host's share now counts
    assert any(".item()" in note for note in e["workload"]["notes"])


def test_a_cage_that_cannot_arm_is_timed_unarmed(eager_baseline):
    clock = FakeClock()
    eager_baseline(clock)
    e = run(FakeBench(Right, clock, can_arm=False), clock)
    assert e["decision"] == "accept" and e["metrics"]["judge_clock"]["armed"] is False


def test_a_large_output_is_checked_at_indices_the_judge_draws_after_the_calls():
    """The cage's side (perf_ops.PerfOps.fetch) samples; the judge regenerates the indices."""
    import sys
    sys.path.insert(0, str(ROOT / "infralab" / "judge"))
    try:
        import perf_ops
    finally:
        sys.path.remove(str(ROOT / "infralab" / "judge"))
    from infralab.perf.run import check_outputs
    inputs = ADD.make_inputs({"N": 5000}, "float32", {}, 11, "cpu")
    right = inputs["x"] + inputs["y"]
    ops = perf_ops.PerfOps.__new__(perf_ops.PerfOps)
    sample = {"seed": 99, "count": 256, "whole_up_to": 1000}
    ops.kept = {0: (right,)}
    got = ops.fetch(sample)[0]
    assert isinstance(got[0], dict) and got[0]["values"].numel() == 256 and got[0]["shape"] == [5000]
    assert check_outputs(ADD, got, inputs, {}, sample) is None
    wrong = right.clone()
    wrong[::2] = 0.0  # half the elements: a sample of 256 misses them all with probability 2**-256
    ops.kept = {0: (wrong,)}
    assert "output" in check_outputs(ADD, ops.fetch(sample)[0], inputs, {}, sample)
    ops.kept = {0: (right[:4999],)}
    assert "shape" in check_outputs(ADD, ops.fetch(sample)[0], inputs, {}, sample)
    ops.kept = {0: (right,)}
    whole = ops.fetch({**sample, "whole_up_to": 10_000})[0][0]  # small outputs come back whole, copied
    assert torch.equal(whole, right) and whole.data_ptr() != right.data_ptr()
    ops.kept = {0: (right,), 1: (right,), 2: (wrong,)}  # every call of a batch: the others at 64 elements each
    got = ops.fetch({**sample, "whole_up_to": 10_000, "calls": [0], "every": 64})
    assert torch.equal(got[0][0], right) and got[1][0]["values"].numel() == 64
    for call, ok in ((1, True), (2, False)):
        drawn = {"seed": call_seed(sample["seed"], call), "count": 64}
        assert (check_outputs(ADD, got[call], inputs, {}, drawn) is None) is ok


def test_an_armed_batch_opens_its_gate_once_and_at_once_when_a_call_raises(monkeypatch):
    """The device side of arming (infralab/perf/device_gate.py) with a fake gate and fake events: the
    go opens the gate once; a call that raises while the batch is enqueued opens it before the error
    goes on (else the device would wait behind it until the watchdog, release_s later)."""
    from infralab.perf import device_gate

    class FakeGate:
        def __init__(self):
            self.opened, self.epoch = [], 1

        def close(self):
            self.epoch += 1
            return self.epoch

        def open(self, epoch):
            self.opened.append(epoch)

    class FakeEvent:
        def __init__(self, enable_timing=False):
            pass

        def record(self):
            pass

        def elapsed_time(self, other):
            return 2.0

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(device_gate, "_synchronize", lambda: None)
    gate = FakeGate()
    ran = []
    armed = device_gate.Armed(gate, lambda: ran.append(1), release_s=60.0)
    assert ran == [1] and gate.opened == []  # enqueued now, released only by the go
    batch_s, early, breakdown = armed.go()
    assert (batch_s, early, gate.opened) == (2e-3, False, [2]) and breakdown["events_s"] == 2e-3
    armed.release()
    assert gate.opened == [2]  # once

    def raising():
        raise ZeroDivisionError("a student's call")

    with pytest.raises(ZeroDivisionError):
        device_gate.Armed(gate, raising, release_s=60.0)
    assert gate.opened == [2, 3]


@pytest.mark.parametrize("per_call, level", [(0.25e-3, "flagged"), (1e-3, "below pass")])
def test_a_short_batch_below_the_bar_on_the_judges_clock_alone_is_flagged_not_tuned(eager_baseline, per_call, level):
    """1.5 ms of the cage's own handling on a batch of three 0.25 ms calls (the launch queue's cap, no
    graphs): the judge reads 0.33x the baseline, below the pass bar (0.6x), while the cage's timer reads
    1.0x (within the clocks' tolerance of each other); the judge cannot settle that alone, so the entry
    is flagged for review (never accepted). A kernel slow on both clocks (0.25x on the cage's) stays `tune`."""
    clock = FakeClock()
    eager_baseline(clock, per_call=0.25e-3)
    e = run(FakeBench(Right, clock, per_call=per_call, go_extra=1.5e-3), clock,
            policy=CagedPolicy(**{**vars(SMALL), "armed_max_calls": 3, "graphs": False}))
    assert e["level"] == level and e["decision"] in ("reject", "tune")
    assert e["metrics"]["ratio_to_baseline"] < 0.6
    if level == "flagged":
        assert e["decision"] == "reject" and "too short for the judge's clock alone" in e["reason"]
        assert "1.000x" in e["reason"]
    else:
        assert e["decision"] == "tune"
