"""infralab.golden: visible tests replay recorded expectations and diagnoses in a release that holds no
reference (infralab/mistakes stays behind); stale goldens refuse the release; fingerprints and recordings."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from infralab.course import load_course
from infralab.golden import _decode, _encode, _evaluate, _fingerprints_agree, fingerprint
from infralab.judge.minicourse import kit_root, rmsnorm_course
from infralab.release import release

RMSNORM = "exercises/part01_transformer/rmsnorm.py"
VISIBLE = "exercises/part01_transformer/tests/test_rmsnorm.py"


@pytest.fixture
def course_with_engine(tmp_path):
    """The one-exercise course with a copy of the engine, so that its release ships infralab/ too."""
    root = rmsnorm_course(tmp_path / "course")
    shutil.copytree(kit_root() / "infralab", root / "infralab", ignore=shutil.ignore_patterns("__pycache__"))
    return load_course(root)


# The kit's editable install adds a finder that maps infralab.* to the kit's tree even when `infralab` itself
# comes from another folder: drop it, as a student's environment (installed from the release) has none.
STUDENT_PYTHON = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'Editable' not in repr(f)]; "
                  "sys.argv[0] = 'python'; ")


def _python_in(release_dir, code):
    env = dict(os.environ, PYTHONPATH=str(release_dir))  # the release's own engine, not the kit's
    return subprocess.run([sys.executable, "-c", STUDENT_PYTHON + code], cwd=release_dir, env=env,
                          capture_output=True, text=True, timeout=300)


def _pytest_in(release_dir):
    return _python_in(release_dir, f"import pytest; sys.exit(pytest.main(['{VISIBLE}', '-q', '-n', '0', "
                                   "'-p', 'no:cacheprovider']))")


def test_release_visible_tests_fail_stubs_pass_solutions_and_diagnose_a_mutant_without_references(
        course_with_engine, tmp_path):
    course = course_with_engine
    report = release(course, tmp_path / "release", check_stubs=False)  # the stubs run below, without references
    out = report.out
    assert report.ok, (report.leaks, report.golden_problems)
    assert not (out / "infralab/mistakes").exists()
    probe = _python_in(out, "import infralab, importlib.util as u; print(infralab.__file__, u.find_spec('infralab.mistakes'))")
    assert probe.stdout.startswith(str(out)) and probe.stdout.split()[-1] == "None", probe.stdout + probe.stderr

    stubs = _pytest_in(out)
    assert "5 failed" in stubs.stdout and "NotImplementedError" in stubs.stdout, stubs.stdout[-2000:]

    solution = (course.root / "solutions/part01_transformer/rmsnorm.py").read_text()
    (out / RMSNORM).write_text(solution)
    solved = _pytest_in(out)
    assert "5 passed" in solved.stdout, solved.stdout[-2000:]

    mutant = (course.root / "fixtures/mutants/part01_transformer/rmsnorm/eps_outside_sqrt.py").read_text()
    mutant = "\n".join(line for line in mutant.splitlines() if not line.startswith("from solutions"))
    (out / RMSNORM).write_text(solution + "\n\n" + mutant + "\n")  # the mutant's rms_norm replaces the solution's
    wrong = _pytest_in(out)
    assert "1 failed, 4 passed" in wrong.stdout, wrong.stdout[-2000:]
    assert "This looks like: eps added outside the square root" in wrong.stdout


def test_a_stale_golden_refuses_the_release_naming_the_exercise(course_with_engine, tmp_path):
    course = course_with_engine
    golden = course.root / "exercises/part01_transformer/tests/golden/rmsnorm.json"
    data = json.loads(golden.read_text())
    data["tests"]["test_rms_norm_eps_goes_inside_the_square_root"]["seed"] += 1  # other inputs than recorded
    golden.write_text(json.dumps(data))
    report = release(course, tmp_path / "release", check_stubs=False)
    assert not report.ok
    assert len(report.golden_problems) == 1, report.golden_problems
    problem = report.golden_problems[0]
    assert problem.startswith("part01_transformer.rmsnorm: stale golden (test_rms_norm_eps_goes_inside_the_square_root)")
    assert "GoldenStale" in problem and "differ from the recorded ones" in problem


def test_fingerprints_pass_one_ulp_noise_and_catch_other_inputs():
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(0))
    ulp = torch.nextafter(x, torch.full_like(x, float("inf")))
    assert _fingerprints_agree(fingerprint(x), fingerprint(ulp))
    changed = x.clone()
    changed[2, 3] += 1e-3
    assert not _fingerprints_agree(fingerprint(x), fingerprint(changed))
    assert not _fingerprints_agree(fingerprint(x), fingerprint(x.flip(0)))  # same values, other order
    assert not _fingerprints_agree(fingerprint(x), fingerprint(x.reshape(16, 4)))
    ids = torch.tensor([1, 2, 3])
    assert not _fingerprints_agree(fingerprint(ids), fingerprint(torch.tensor([1, 3, 2])))
    inf = torch.tensor([0.0, float("-inf"), 1.0])
    assert not _fingerprints_agree(fingerprint(inf), fingerprint(torch.tensor([float("-inf"), 0.0, 1.0])))


def test_recording_keeps_order_and_types_and_evaluates_known_mistakes():
    def broken():
        raise ValueError("cannot be formed")

    value = {"b first": lambda: torch.ones(2), "a second": torch.zeros(2), "broken": broken, "passes": lambda: None}
    shape = (3, (1, 2), [4])
    tensors: dict = {}
    got = _decode(_encode(_evaluate(value), "t/0", tensors), tensors)
    assert list(got) == ["b first", "a second"] and torch.equal(got["b first"], torch.ones(2))
    assert _decode(_encode(_evaluate(shape), "t/1", tensors), tensors) == shape
