"""Caged performance challenges through the real executor on a CPU (Triton interpreter, a small
vector_add): the wire protocol of infralab/judge/perf_ops.py and a timer patched in the cage. One
executor start and the gate's ragged shape under the interpreter cost most of its seconds; the
judge's logic for every other hostile case is tested with a fake executor (test_caged_perf.py).
The figures are meaningless here (a CPU, the interpreter); the decisions and their reasons are not."""
from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from infralab.course import load_course
from infralab.judge.cage import CageLimits
from infralab.judge.config import JudgeConfig
from infralab.judge.isolated import IsolatedTarget
from infralab.perf.caged import CagedPolicy, RemoteBench, run_caged_challenge, submitted_kernels
from infralab.perf.profiles import load_profiles
from infralab.perf.spec import validate_challenge
from infralab.targets import submission_target

ROOT = Path(__file__).resolve().parents[1]
COURSE = load_course(ROOT)
H200 = load_profiles(ROOT / "hardware_profiles")["h200"]
EXERCISE = "part03_kernels.vector_add"
POLICY = CagedPolicy(min_samples=4, max_samples=4, time_cap_s=30.0, batch_target_s=0.02, warmup_s=0.0, null_trips=3)
CHALLENGE = validate_challenge(Path("course.yml"), "perf[0]", {
    "workload": "vector_add", "shapes": [{"N": 3000}], "dtype": "float32", "metric": "bandwidth",
    "bytes": "3*N*s", "baseline": "eager", "pass": {"fraction": 0.01, "of": "baseline"},
    "challenge": {"fraction": 0.02, "of": "baseline"}})

# the honest kernel, then the cage's clock slowed tenfold: what the cage times is a tenth of the truth
SLOW_CLOCK = '''
import time

import torch
import triton
import triton.language as tl

_real = time.perf_counter
time.perf_counter = lambda: _real() / 10


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''

# the honest kernel once per pair of input addresses, then the cached answer (with a do-nothing launch of
# its own kernel, as a Triton exercise's timed call must launch one): a memo that timed batches with
# reused inputs would turn into free calls
MEMO = SLOW_CLOCK.replace("time.perf_counter = lambda: _real() / 10\n", "_answers = {}\n").replace(
    """def vector_add(x, y):
    out = torch.empty_like(x)""", """def vector_add(x, y):
    key = (x.data_ptr(), y.data_ptr(), x.numel())
    if key in _answers:
        add_kernel[(1,)](x, y, _answers[key], 0, BLOCK=1024)
        return _answers[key]
    out = _answers[key] = torch.empty_like(x)""")


def caged_entry(submission: Path) -> dict:
    target = IsolatedTarget(submission_target(submission, ROOT), JudgeConfig.from_course(COURSE),
                            CageLimits(call_timeout_s=60.0, budget_s=240.0, gpu=True))  # perf_ops is loaded
    try:
        module = target.load(EXERCISE)
        own, problem = submitted_kernels(module)
        assert own == {"add_kernel"} and problem is None
        return run_caged_challenge(RemoteBench(module), CHALLENGE, CHALLENGE["shapes"][0], H200, exercise=EXERCISE,
                                   target=submission.name, own_kernels=own, triton=True, device="cpu",
                                   policy=POLICY, rng=random.Random(3), l2_bytes=0)
    finally:
        target.close()


def test_a_timer_patched_in_the_cage_neither_changes_the_judges_clock_nor_passes(tmp_path):
    (tmp_path / "slow_clock" / "part03_kernels").mkdir(parents=True)
    (tmp_path / "slow_clock" / "part03_kernels" / "vector_add.py").write_text(textwrap.dedent(SLOW_CLOCK))
    e = caged_entry(tmp_path / "slow_clock")
    assert e["decision"] == "reject", e["reason"]
    assert "time.perf_counter" in e["reason"] and "disagrees with the judge's clock" in e["reason"]
    clocks = e["metrics"]["judge_clock"]
    assert clocks["cage_timer_ms"] < 0.2 * clocks["batch_ms"]  # the cage's lie stayed in the cross-check
    assert e["metrics"]["candidate"]["median_ms"] * e["workload"]["calls_per_sample"]["candidate"] == \
        pytest.approx(clocks["batch_ms"], rel=0.5)  # the figure is the judge's batch time
    assert e["metrics"]["rechecks"] and set(e["metrics"]["rechecks"]) == {"ok"}  # timed outputs came back, checked
    assert len(e["workload"]["seeds"]) >= 4  # the gate's and the timing's sets, every seed the judge's


def test_a_module_that_caches_its_answers_meets_fresh_inputs_and_is_rejected(tmp_path):
    """The cage's sets are rewritten in place from new seeds before every timed batch, one per call:
    the memo keyed by address answers the previous batch's sums, and the judge's check catches it."""
    assert "_answers[key]" in MEMO and "_real() / 10" not in MEMO
    (tmp_path / "memo" / "part03_kernels").mkdir(parents=True)
    (tmp_path / "memo" / "part03_kernels" / "vector_add.py").write_text(textwrap.dedent(MEMO))
    e = caged_entry(tmp_path / "memo")
    assert e["decision"] == "reject" and "timed batch's output was wrong" in e["reason"], e["reason"]
