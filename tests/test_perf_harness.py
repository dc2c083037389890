"""The performance harness without a GPU: challenge specs, sampling with a fake timer, verdicts,
and the record entries of whole challenge runs (candidate on the CPU, fake timer). Nothing timed."""
from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from infralab.errors import CourseError
from infralab.perf import decision
from infralab.perf.harness import SamplingPolicy, calls_per_sample, sample_interleaved, wall_mismatch
from infralab.perf.profiles import load_profiles
from infralab.perf.run import run_challenge
from infralab.perf.spec import evaluate, validate_challenge, work_amount

ROOT = Path(__file__).resolve().parents[1]
PROFILES = load_profiles(ROOT / "hardware_profiles")
H200, L4 = PROFILES["h200"], PROFILES["l4"]


def spec(**over):
    raw = {"workload": "softmax", "shapes": [{"M": 4096, "N": 8192}], "dtype": "bfloat16", "metric": "bandwidth",
           "bytes": "2*M*N*s", "baseline": "eager", "pass": {"fraction": 0.55, "of": "copy_gbps"},
           "challenge": {"fraction": 0.8, "of": "copy_gbps"}}
    raw.update(over)
    return validate_challenge(Path("course.yml"), "parts[2].exercises[2].perf[0]", raw)


# --- specs -----------------------------------------------------------------------------------

def test_a_valid_challenge_is_normalised_with_defaults():
    c = spec()
    assert c["id"] == "default" and c["options"] == {} and c["profiles"] == []
    assert work_amount(c, {"M": 4096, "N": 8192}) == 2 * 4096 * 8192 * 2


def test_formulas_see_the_shape_the_element_size_and_numeric_options():
    c = spec(workload="flash_attention", shapes=[{"B": 1, "H": 2, "S": 8, "D": 4}], metric="throughput",
             bytes=None, flops="4*B*H*S*S*D * (1 - 0.5*causal)", baseline="sdpa_flash", options={"causal": True},
             **{"pass": {"fraction": 0.5, "of": "baseline"}, "challenge": {"fraction": 0.9, "of": "baseline"}})
    assert work_amount(c, c["shapes"][0]) == 4 * 2 * 64 * 4 * 0.5


@pytest.mark.parametrize("formula", ["__import__('os')", "M.real", "open('x')", "M if N else 1", "M *"])
def test_a_formula_is_arithmetic_only(formula):
    with pytest.raises(ValueError):
        evaluate(formula, {"M": 2.0, "N": 3.0})


@pytest.mark.parametrize("over, key", [
    ({"workload": "convolution"}, "workload"),
    ({"dtype": "int8"}, "dtype"),
    ({"metric": "latency"}, "metric"),
    ({"bytes": None}, "bytes"),
    ({"bytes": "2*M*N*Q"}, "bytes"),  # unknown name
    ({"baseline": "cudnn"}, "baseline"),
    ({"shapes": []}, "shapes"),
    ({"shapes": [{"M": 4096}]}, "shapes[0]"),
    ({"shapes": [{"M": 4096, "N": -1}]}, "shapes[0].N"),
    ({"pass": {"fraction": 0.55}}, "pass"),
    ({"pass": {"fraction": 0.55, "of": "speed_of_light"}}, "pass.of"),
    ({"challenge": {"fraction": 0.5, "of": "copy_gbps"}}, "challenge.fraction"),  # below the pass bar
    ({"options": {"causal": True}}, "options"),  # softmax takes no such option
    ({"seconds": 3}, "seconds"),
])
def test_a_malformed_challenge_is_rejected_naming_the_key(over, key):
    with pytest.raises(CourseError) as e:
        spec(**over)
    assert e.value.key == f"parts[2].exercises[2].perf[0].{key}"
    assert "course.yml" in str(e.value)


def test_the_part03_benchmark_challenges_are_valid():
    import yaml
    raw = yaml.safe_load((ROOT / "benchmarks" / "part03_perf.yml").read_text())
    for ex, challenges in raw.items():
        for i, c in enumerate(challenges):
            validate_challenge("benchmarks/part03_perf.yml", f"{ex}[{i}]", c)


# --- sampling ----------------------------------------------------------------------------------

class ScriptedTimer:
    """Returns scripted seconds per call, records the order of the runners it timed."""

    def __init__(self, times: dict[str, "itertools.cycle"], wall_factor: float = 1.0):
        self.times, self.order, self.wall_factor = times, [], wall_factor
        self.l2_bytes, self.flush_bytes = 50 * 2**20, 100 * 2**20

    def time_batch(self, runner, calls, start):
        for i in range(calls):
            runner(start + i)
        name = runner.label
        self.order.append(name)
        return next(self.times[name])

    def wall_check(self, runner, calls):
        for i in range(calls):
            runner(i)
        return 1e-3 * calls, 1e-3 * calls * self.wall_factor


def labelled(name, fn=lambda i: None):
    def run(i):
        return fn(i)
    run.label = name
    return run


def test_sampling_stops_once_the_standard_error_is_small_but_not_before_the_minimum():
    t = ScriptedTimer({"a": itertools.cycle([1.00e-3, 1.01e-3]), "b": itertools.cycle([2e-3])})
    res = sample_interleaved({"a": labelled("a"), "b": labelled("b")}, t, SamplingPolicy(min_samples=30),
                             {"a": 1, "b": 1})
    assert res.stopped == "converged"
    assert len(res.timings["a"].samples) == len(res.timings["b"].samples) == 30
    assert res.timings["b"].median == 2e-3


def test_noisy_samples_run_to_the_maximum():
    t = ScriptedTimer({"a": itertools.cycle([1e-3, 3e-3, 0.5e-3, 2e-3]), "b": itertools.cycle([1e-3])})
    res = sample_interleaved({"a": labelled("a"), "b": labelled("b")}, t,
                             SamplingPolicy(min_samples=30, max_samples=50), {"a": 1, "b": 1})
    assert res.stopped == "max_samples" and len(res.timings["a"].samples) == 50


def test_the_time_cap_ends_sampling_and_says_how_many_samples_it_got():
    clock = itertools.count(0.0, 1.0)  # one second per look at the clock
    t = ScriptedTimer({"a": itertools.cycle([1e-3, 2e-3])})
    res = sample_interleaved({"a": labelled("a")}, t, SamplingPolicy(time_cap_s=5.0), {"a": 1},
                             clock=lambda: next(clock))
    assert res.stopped == "time_cap" and len(res.timings["a"].samples) < 30 and res.notes


def test_candidate_and_baseline_are_interleaved_in_alternating_order():
    t = ScriptedTimer({"c": itertools.cycle([1e-3]), "b": itertools.cycle([1e-3])})
    sample_interleaved({"c": labelled("c"), "b": labelled("b")}, t, SamplingPolicy(min_samples=4, max_samples=4),
                       {"c": 1, "b": 1})
    assert t.order[:8] == ["c", "b", "b", "c", "c", "b", "b", "c"]


def test_short_kernels_get_several_calls_per_event_pair_on_distinct_inputs():
    policy = SamplingPolicy()
    assert calls_per_sample(1e-3, policy) == 1
    assert calls_per_sample(5e-6, policy) == 40
    assert calls_per_sample(1e-9, policy) == policy.max_calls
    seen = []
    t = ScriptedTimer({"a": itertools.cycle([1e-6])})
    sample_interleaved({"a": labelled("a", seen.append)}, t, SamplingPolicy(min_samples=2, max_samples=2), {"a": 4})
    assert seen == list(range(8))  # each call of a batch on the next input set


def test_wall_time_far_above_event_time_is_a_mismatch():
    assert not wall_mismatch(10e-3, 10.5e-3)
    assert wall_mismatch(10e-3, 20e-3)
    assert not wall_mismatch(10e-6, 400e-6)  # launch overhead of a tiny batch is no mismatch


# --- verdicts ----------------------------------------------------------------------------------

BIG = 64 * 2**30


def judge(achieved, ratio=1.0, profile=H200, ws=BIG, correct=True, **kw):
    return decision.judge(challenge=spec(), profile=profile, achieved=achieved, unit="GB/s", ratio=ratio,
                          working_set_bytes=ws, l2_bytes=60 * 2**20, correct=correct, **kw)


def test_the_bars_are_fractions_of_the_profiles_measured_ceiling():
    copy = H200.ceilings["copy_gbps"]
    assert (v := judge(0.85 * copy)).level == "challenge" and v.decision == "accept"
    assert (v := judge(0.60 * copy)).level == "pass" and v.decision == "accept"
    assert (v := judge(0.40 * copy)).level == "below pass" and v.decision == "tune"
    assert v.fraction_of_ceiling == pytest.approx(0.40)


def test_a_wrong_answer_is_rejected_whatever_its_speed():
    v = judge(0.9 * H200.ceilings["copy_gbps"], correct=False, correctness_message="output: 3 elements differ")
    assert (v.level, v.decision) == ("incorrect", "reject") and "3 elements differ" in v.reason


@pytest.mark.parametrize("achieved, ratio, what", [
    (1.06 * 4800, 1.0, "datasheet peak"),
    (3000, 11.0, "10x the reference"),
])
def test_impossible_results_are_flagged_not_rewarded(achieved, ratio, what):
    v = judge(achieved, ratio=ratio)
    assert v.decision == "reject" and v.flags and what in v.reason


def test_work_outside_the_timed_stream_is_flagged():
    v = judge(3000, wall_mismatch=True)
    assert v.decision == "reject" and "timed stream" in v.reason


def test_small_working_sets_get_the_relative_check_only():
    v = judge(100.0, ratio=1.02, ws=3 * 60 * 2**20)  # under 4x L2: 100 GB/s is fine if not slower than eager
    assert v.level == "pass" and v.challenge_at is None
    assert judge(100.0, ratio=0.5, ws=3 * 60 * 2**20).decision == "tune"


def test_ratio_thresholds_grade_the_same_run_baseline():
    c = spec(workload="matmul", shapes=[{"M": 64, "N": 64, "K": 64}], metric="throughput", bytes=None,
             flops="2*M*N*K", baseline="cublas",
             **{"pass": {"fraction": 0.6, "of": "baseline"}, "challenge": {"fraction": 0.9, "of": "baseline"}})
    kw = dict(challenge=c, profile=H200, unit="TFLOP/s", working_set_bytes=1e6, l2_bytes=60 * 2**20, correct=True)
    assert decision.judge(achieved=600, ratio=0.95, **kw).level == "challenge"
    assert decision.judge(achieved=400, ratio=0.7, **kw).level == "pass"
    assert decision.judge(achieved=200, ratio=0.3, **kw).decision == "tune"
    assert decision.judge(achieved=200, ratio=0.3, **kw).fraction_of_ceiling is None


def test_a_provisional_profile_says_so_in_the_verdict_and_the_evidence():
    v = judge(0.9 * L4.ceilings["copy_gbps"], profile=L4)
    assert "provisional" in v.reason
    ev = decision.evidence(L4, on_gpu=True)
    assert ev == {"kind": "gpu-benchmark", "performance_result": True, "profile": "l4",
                  "profile_status": "provisional", "thresholds": "provisional"}
    assert decision.evidence(None, on_gpu=False)["performance_result"] is False


# --- whole challenge runs on the CPU with a fake timer -----------------------------------------

class SoftmaxModule:
    @staticmethod
    def softmax(x):
        return torch.softmax(x.float(), dim=-1).to(x.dtype)


class WrongSoftmax:
    @staticmethod
    def softmax(x):
        return torch.exp(x)  # forgot to normalise


class CrashingSoftmax:
    @staticmethod
    def softmax(x):
        raise NotImplementedError("softmax")


class WrongAfterWarmUp:
    """Right on the gate (its first calls), wrong on timed runs: caught by the re-checks."""
    calls = 0

    @classmethod
    def softmax(cls, x):
        from infralab.perf.workloads import WORKLOADS
        cls.calls += 1
        out = torch.softmax(x.float(), dim=-1).to(x.dtype)
        return out if cls.calls <= 1 + len(WORKLOADS["softmax"].gate_shapes) else out * 0


class MemoSoftmax:
    """Computes once per input address, then answers from its cache: rewritten inputs expose it."""
    answers: dict = {}

    @classmethod
    def softmax(cls, x):
        key = (x.data_ptr(), tuple(x.shape))
        if key not in cls.answers:
            cls.answers[key] = torch.softmax(x.float(), dim=-1).to(x.dtype)
        return cls.answers[key]


class TailIgnored:
    """Right when rows are whole blocks of 1024, wrong on the ragged tail (a missing mask)."""

    @staticmethod
    def softmax(x):
        whole = x.shape[-1] // 1024 * 1024
        out = torch.zeros_like(x)
        out[..., :whole] = torch.softmax(x[..., :whole].float(), dim=-1).to(x.dtype)
        return out


class Fake:
    l2_bytes, flush_bytes = 4096, 8192

    def __init__(self, seconds):
        self.seconds = seconds

    def time_batch(self, runner, calls, start):
        self._run(runner, calls, start)
        return self.seconds.pop(0) if len(self.seconds) > 1 else self.seconds[0]

    def wall_check(self, runner, calls):
        self._run(runner, calls, 0)
        return 1e-3 * calls, 1e-3 * calls

    @staticmethod
    def _run(runner, calls, start):
        if hasattr(runner, "replay"):  # a GraphBatch: its batch is a replay, as CudaTimer times it
            runner.replay()
            return
        for i in range(calls):
            runner(start + i)


SMALL = SamplingPolicy(min_samples=4, max_samples=6)


def run_on_cpu(module, seconds=(1e-3,), n=300, policy=SMALL):
    c = spec(dtype="float32", shapes=[{"M": 8, "N": n}])
    return run_challenge(module, c, c["shapes"][0], H200, timer=Fake(list(seconds)), target="test",
                         exercise="part03_kernels.softmax", device="cpu", policy=policy)


def test_a_correct_candidate_gets_a_record_entry_in_the_course_evidence_terms():
    e = run_on_cpu(SoftmaxModule)
    assert set(e) >= {"workload", "candidate", "environment", "metrics", "evidence", "decision", "level", "flags"}
    assert e["correct"] and e["metrics"]["rechecks"] == ["ok", "ok"]
    assert e["workload"]["shape"] == {"M": 8, "N": 300} and e["workload"]["dtype"] == "float32"
    assert e["workload"]["samples"] >= 4 and e["workload"]["l2_flush_bytes"] == 8192
    assert e["metrics"]["unit"] == "GB/s" and e["metrics"]["ratio_to_baseline"] == pytest.approx(1.0)
    assert e["metrics"]["achieved"] == pytest.approx(2 * 8 * 300 * 4 / 1e-3 / 1e9, rel=1e-2)
    assert e["evidence"]["kind"] == "cpu-logic-check"  # never a performance result off the GPU
    assert e["decision"] in ("accept", "tune", "reject")


def test_a_record_entry_carries_bytes_and_flops_when_the_challenge_declares_both():
    c = spec(dtype="float32", shapes=[{"M": 8, "N": 300}], flops="5*M*N")  # flops: for the roofline
    e = run_challenge(SoftmaxModule, c, c["shapes"][0], H200, timer=Fake([1e-3]), target="test",
                      exercise="part03_kernels.softmax", device="cpu", policy=SMALL)
    assert e["workload"]["bytes"] == 2 * 8 * 300 * 4 and e["workload"]["flops"] == 5 * 8 * 300
    assert e["metrics"]["unit"] == "GB/s"  # the metric still counts the bytes


@pytest.mark.parametrize("module, words", [(WrongSoftmax, "differ"), (CrashingSoftmax, "NotImplementedError")])
def test_a_wrong_or_crashing_candidate_is_rejected_at_the_gate_and_not_timed(module, words):
    e = run_on_cpu(module)
    assert not e["correct"] and e["decision"] == "reject" and e["metrics"] == {}
    assert words in e["reason"]


def test_a_kernel_right_only_on_round_sizes_fails_the_gate_at_a_ragged_shape():
    e = run_on_cpu(TailIgnored, n=2048)
    assert not e["correct"] and e["decision"] == "reject" and "ragged shape" in e["reason"]


def test_a_candidate_wrong_on_timed_runs_is_caught_by_the_rechecks():
    WrongAfterWarmUp.calls = 0
    e = run_on_cpu(WrongAfterWarmUp)
    assert not e["correct"] and e["decision"] == "reject"
    assert any(r != "ok" for r in e["metrics"]["rechecks"])


def test_a_candidate_that_caches_its_answers_meets_rewritten_inputs_and_is_caught():
    MemoSoftmax.answers = {}
    e = run_on_cpu(MemoSoftmax, policy=SamplingPolicy(min_samples=8, max_samples=8))  # sets come round again
    assert not e["correct"] and e["decision"] == "reject", e["reason"]
    assert e["workload"]["calls_per_sample"]["candidate"] <= e["workload"]["input_sets"]  # no set twice a batch


# --- the CLI on a machine without a GPU --------------------------------------------------------

@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_bench_on_a_cpu_says_there_is_no_registered_gpu_and_exits_cleanly(tmp_path):
    from infralab.course import load_course
    with_perf = [ex for ex in load_course(ROOT).exercises if ex.perf]
    if not with_perf:
        pytest.skip("no exercise declares a performance challenge yet")
    record = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "infralab.cli", "bench", with_perf[0].id, "--target", "solutions",
                           "--record", str(record)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "no CUDA GPU" in proc.stdout and "never a performance result" in proc.stdout
    import json
    entry = json.loads(record.read_text())["perf"][0]
    assert entry["evidence"]["kind"] == "cpu-logic-check" and entry["decision"] is None


def test_profile_show_lists_every_profile_with_its_status():
    proc = subprocess.run([sys.executable, "-m", "infralab.cli", "profile", "show"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "h200" in proc.stdout and "calibrated" in proc.stdout and "provisional" in proc.stdout


def test_the_bench_table_shows_rate_ceiling_share_ratio_bar_decision_and_environment(capsys):
    from infralab.perf.bench import print_bench
    good, wrong = run_on_cpu(SoftmaxModule), run_on_cpu(WrongSoftmax)
    print_bench([good, wrong], H200)
    out = capsys.readouterr().out
    assert "GB/s" in out and "x eager" in out and "reject" in out and "environment: device=cpu" in out
    assert "profile h200 (calibrated)" in out


class Counting:
    """A correct softmax that counts its calls."""

    def __init__(self):
        self.calls = 0

    def softmax(self, x):
        self.calls += 1
        return torch.softmax(x.float(), dim=-1).to(x.dtype)


def test_the_gate_runs_the_guarded_module_and_the_timing_runs_the_timed_one():
    from infralab.perf.workloads import WORKLOADS
    gate, timed = Counting(), Counting()
    c = spec(dtype="float32", shapes=[{"M": 8, "N": 300}])
    e = run_challenge(gate, c, c["shapes"][0], H200, timer=Fake([1e-3]), target="test", exercise="softmax",
                      device="cpu", policy=SMALL, timed_module=timed)
    assert e["correct"]
    assert gate.calls == 1 + len(WORKLOADS["softmax"].gate_shapes)
    assert timed.calls >= e["workload"]["samples"]


def test_softmax_errors_in_tiny_probabilities_are_not_hidden_by_an_absolute_tolerance():
    from infralab.perf.run import check_outputs
    from infralab.perf.workloads import WORKLOADS
    wl = WORKLOADS["softmax"]
    x = torch.randn(4, 3001, generator=torch.Generator().manual_seed(0), dtype=torch.float32).to(torch.bfloat16)
    right = torch.softmax(x.float(), -1).to(torch.bfloat16)
    assert check_outputs(wl, right, {"x": x}, {}) is None
    padded_zeros = torch.softmax(torch.cat([x.float(), torch.zeros(4, 1095)], -1), -1)[:, :3001].to(torch.bfloat16)
    assert "differ" in check_outputs(wl, padded_zeros, {"x": x}, {})


class RmsNormSquaresInInputDtype:
    """Fused add + RMSNorm that keeps the squares in the input dtype: fine in bf16, inf in fp16."""

    @staticmethod
    def fused_add_rmsnorm(x, residual, weight, eps):
        h = (x.float() + residual.float()).to(x.dtype)
        mean_square = (h * h).sum(-1, keepdim=True).float() / h.shape[-1]
        return (h.float() * torch.rsqrt(mean_square + eps) * weight.float()).to(x.dtype), h


def test_the_gate_checks_a_second_dtype_where_a_mistake_only_shows_there():
    c = spec(workload="rmsnorm", dtype="bfloat16", shapes=[{"M": 8, "N": 256}], bytes="4*M*N*s + N*s")
    e = run_challenge(RmsNormSquaresInInputDtype, c, c["shapes"][0], H200, timer=Fake([1e-3]), target="test",
                      exercise="part03_kernels.rmsnorm", device="cpu", policy=SMALL)
    assert not e["correct"] and "in float16" in e["reason"], e["reason"]
