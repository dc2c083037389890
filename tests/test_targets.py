"""The implementation under test: stubs, solutions, submissions (whole or partial), mutants;
a submission that does not import or lacks a function fails its own exercise only."""
import os
from pathlib import Path

import pytest

from infralab.course import load_course
from infralab.errors import TargetError
from infralab.runner import TestRun, run_tests
from infralab.targets import InProcessTarget, parse_target


def grade(root: Path, target: str) -> dict:
    course = load_course(root)
    record = run_tests(course, TestRun(target=target, exercises=course.exercises, hidden=True, seed=7))
    return {ex["name"]: ex for ex in record["exercises"]} | {"_record": record}


def submission(root: Path, files: dict[str, str]) -> Path:
    sub = root.parent / "alice"
    for rel, text in files.items():
        (sub / rel).parent.mkdir(parents=True, exist_ok=True)
        (sub / rel).write_text(text)
    return sub


def test_stubs_score_zero_and_say_not_implemented(mini_course):
    result = grade(mini_course, "exercises")
    assert result["double"]["points"] == 0 and result["double"]["status"] == "not implemented"
    assert "NotImplementedError" in result["double"]["first_failure"]


def test_solutions_score_full_points(mini_course):
    result = grade(mini_course, "solutions")
    assert result["_record"]["points"] == result["_record"]["max_points"] == 8


def test_partial_credit_is_the_weighted_share_of_passed_tests(mini_course):
    sub = submission(mini_course, {"exercises/part01_demo/double.py": "def double(x):\n    return x + x if x.sum() < 0 else x * 0\n"})
    double = grade(mini_course, str(sub))["double"]
    # passes only the negative-input test (weight 3); points are shared over the hidden tests' weights
    # (1 + 3: infralab.record.score_tests), the visible test counting for none when hidden tests ran
    assert double["passed"] == 1 and double["points"] == pytest.approx(4 * 3 / 4)


def test_a_module_that_does_not_import_fails_only_its_exercise(mini_course):
    sub = submission(mini_course, {
        "part01_demo/double.py": "def double(x)\n    return 2 * x\n",  # SyntaxError
        "part01_demo/negate.py": "def negate(x):\n    return -x\n",
    })
    result = grade(mini_course, str(sub))
    assert result["double"]["points"] == 0
    assert "does not import" in result["double"]["first_failure"] and "SyntaxError" in result["double"]["first_failure"]
    assert result["negate"]["points"] == 4


def test_a_missing_function_is_named(mini_course):
    sub = submission(mini_course, {"part01_demo/double.py": "def twice(x):\n    return 2 * x\n"})
    assert "has no `double`" in grade(mini_course, str(sub))["double"]["first_failure"]


def test_exit_at_import_is_an_import_failure_not_a_pass(mini_course):
    sub = submission(mini_course, {"part01_demo/double.py": "import sys\nsys.exit(0)\n"})
    result = grade(mini_course, str(sub))
    assert result["double"]["points"] == 0 and "SystemExit" in result["double"]["first_failure"]


def test_mutant_failure_names_the_known_mistake(mini_course):
    result = grade(mini_course, "mutant:part01_demo.double:wrong")
    assert result["double"]["points"] < 4
    diagnoses = [t["diagnosis"] for t in result["double"]["tests"] if t["diagnosis"]]
    assert diagnoses == ["returned x + 1"]


def test_unknown_target_is_a_clear_error(mini_course):
    with pytest.raises(TargetError, match="expected 'exercises', 'solutions'"):
        parse_target("nowhere/at/all", mini_course)


def test_targets_live_side_by_side_in_one_process(mini_course):
    stub = InProcessTarget(parse_target("exercises", mini_course))
    ref = InProcessTarget(parse_target("solutions", mini_course))
    try:
        import torch
        assert torch.equal(ref.load("part01_demo.double").double(torch.ones(2)), torch.full((2,), 2.0))
        with pytest.raises(NotImplementedError):
            stub.load("part01_demo.double").double(torch.ones(2))
    finally:
        stub.close()
        ref.close()


def test_the_kit_grades_when_pytest_loads_no_entry_point(mini_course):
    """A kit run from a checkout (no pip install, so no ``pytest11`` entry point; a GPU machine with its
    own torch) must still load the plugin in the child pytest, which otherwise rejects ``--course``."""
    course = load_course(mini_course)
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    record = run_tests(course, TestRun(target="solutions", exercises=course.exercises, hidden=True, seed=7),
                       env=env)
    assert record["points"] == record["max_points"] == 8
