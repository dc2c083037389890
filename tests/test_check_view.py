"""The student's loop on a mini course: what a failing test shows (first failure, diagnosis,
falsifying example, no kit frames) and what `infralab check` prints (80 columns, piped)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from infralab.course import load_course
from infralab.runner import TestRun, run_tests

# Two distinct failures for hypothesis: a wrong shape for odd n (raised in check_tensor), wrong
# values for even n (raised in assert_close, with a known mistake); explicit examples hit both.
# The second test's own settings ask for every distinct bug, as a course author may write.
HYPOTHESIS_TESTS = '''
import pytest
import torch
from hypothesis import example, given, settings, strategies as st
from infralab.testing import assert_close

MISTAKES = lambda x: {("returned x + 1", "返回了 x + 1"): lambda: x + 1}


@given(n=st.integers(1, 6))
@example(n=1)
@example(n=2)
def test_double_of_ones(impl, n):
    x = torch.arange(n, dtype=torch.float32)
    assert_close(impl("part01_demo.double").double(x), 2 * x, mistakes=MISTAKES(x))


@settings(report_multiple_bugs=True)
@given(n=st.integers(1, 6))
@example(n=1)
@example(n=2)
def test_double_with_its_own_settings(impl, n):
    x = torch.arange(n, dtype=torch.float32)
    assert_close(impl("part01_demo.double").double(x), 2 * x, mistakes=MISTAKES(x))


@pytest.mark.gpu
def test_double_on_the_gpu(impl):
    pass
'''

TWO_BUGS = '''
import torch


def double(x):
    if x.numel() % 2:
        return torch.zeros(x.numel() + 1)
    return x + 1
'''


def _submission(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "submission" / "part01_demo"
    folder.mkdir(parents=True)
    (folder / "double.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return folder.parent


def _check(course: Path, *args: str, lang: str = "en") -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("INFRALAB_LANG", None)
    return subprocess.run([sys.executable, "-m", "infralab.cli", "--lang", lang, "check", "--course", str(course),
                           *args], capture_output=True, text=True, env=env, timeout=300)


def test_a_failing_hypothesis_test_shows_its_first_failure_diagnosis_and_example_without_kit_frames(
        mini_course, tmp_path):
    (mini_course / "exercises/part01_demo/tests/test_double.py").write_text(HYPOTHESIS_TESTS, encoding="utf-8")
    course = load_course(mini_course)
    record = run_tests(course, TestRun(target=str(_submission(tmp_path, TWO_BUGS)),
                                       exercises=(course.exercise("part01_demo.double"),), extra_args=["--lang", "zh"]))
    tests = {t["name"]: t for t in record["exercises"][0]["tests"]}
    for name in ("test_double_of_ones", "test_double_with_its_own_settings"):
        t = tests[name]
        assert t["outcome"] == "failed"
        assert "ExceptionGroup" not in t["message"] and "distinct failures" not in t["message"], t["message"]
        assert t["message"].startswith("Mismatch: "), t["message"]
        assert "反例" in t["message"] and "n=" in t["message"], t["message"]  # the falsifying example, in Chinese
    # the profile's report_multiple_bugs=False stops at the first bug found; the group's first
    # failure with a diagnosis is the one reported
    assert tests["test_double_with_its_own_settings"]["diagnosis"] == "返回了 x + 1"
    output = record["output_tail"]
    assert "ExceptionGroup" not in output and "distinct failures" not in output
    assert "infralab/testing.py" not in output and "def assert_close" not in output, output


def test_check_at_80_columns_piped_shows_failure_diagnosis_skips_and_seed(mini_course, tmp_path):
    (mini_course / "exercises/part01_demo/tests/test_double.py").write_text(HYPOTHESIS_TESTS, encoding="utf-8")
    wrong = _submission(tmp_path, "def double(x):\n    return x + 1\n")
    done = _check(mini_course, "--target", str(wrong))
    out = done.stdout
    assert done.returncode == 1, out + done.stderr  # a wrong answer
    assert "points at grading come from the hidden tests" in out.replace("\n", " ").replace("  ", " "), out
    assert any(line.strip() == "This looks like: returned x + 1" for line in out.splitlines()), out  # own line
    assert "--seed" in out
    if not torch.cuda.is_available():
        assert "Skipped 1 tests" in out and "needs a CUDA GPU" in out, out
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80, out
    assert "\x1b[" not in out  # no colour codes when piped


def test_check_of_an_unfinished_course_exits_zero_and_says_so_in_chinese(mini_course):
    done = _check(mini_course, lang="zh")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "尚未实现（2 个）" in done.stdout and "隐藏测试" in done.stdout, done.stdout
