"""Every mutant in fixtures/ fails at least one visible test (the tests a student runs before grading),
unless course.yml's ``hidden_only`` names it with a reason (docs/authoring.md, "Visible and hidden tests").

One soundness-mode run of the visible tests (solution, stub and every mutant as targets; infralab.soundness's
machinery). Part 03 (Triton kernels under the CPU interpreter) runs in its own test at one fixed seed to keep
the cost down.
"""
from pathlib import Path

import pytest
import yaml

from infralab.course import load_course
from infralab.errors import CourseError
from infralab.runner import TestRun, run_tests

ROOT = Path(__file__).parents[1]

def visible_survivors(exercises, seed=None):
    """{exercise id: mutants that pass every visible test}, after checking the solution passes them all."""
    course = load_course(ROOT)
    run = TestRun(target="solutions", exercises=exercises, visible=True, hidden=False, mode="validate",
                  soundness=True, seed=seed)
    record = run_tests(course, run)
    caught: dict[str, dict[str, bool]] = {ex.id: {} for ex in exercises}
    for ex in record["exercises"]:
        for t in ex["tests"]:
            target, failed = t["target"] or "", t["outcome"] == "failed"
            assert not (target == "solutions" and failed), f"the solution fails {t['name']}: {t['message'][:300]}"
            if target.startswith("mutant:"):
                name = target.rsplit(":", 1)[-1]
                caught[t["exercise"]][name] = caught[t["exercise"]].get(name, False) or failed
    for ex in exercises:  # every mutant ran: an empty record must not pass
        files = {m.stem for m in (ROOT / ex.mutants_dir).glob("*.py") if m.name != "__init__.py"}
        assert set(caught[ex.id]) == files, f"{ex.id}: mutants run {sorted(caught[ex.id])}, in fixtures {sorted(files)}"
    return {ex: {m for m, c in mutants.items() if not c} for ex, mutants in caught.items()}


def check_visible_rate(triton: bool, seed=None):
    course = load_course(ROOT)
    exercises = tuple(ex for ex in course.exercises if ex.triton == triton)
    survivors = visible_survivors(exercises, seed)
    unexplained = {ex.id: sorted(survivors[ex.id] - set(ex.hidden_only))
                   for ex in exercises}
    unexplained = {k: v for k, v in unexplained.items() if v}
    assert not unexplained, f"mutants that pass every visible test (add a visible test, or a hidden_only reason): " \
                            f"{unexplained}"


def test_every_mutant_fails_a_visible_test_unless_hidden_only():
    check_visible_rate(triton=False)


def test_every_triton_mutant_fails_a_visible_test_at_one_seed():
    check_visible_rate(triton=True, seed=1)


@pytest.mark.parametrize("value, expected", [
    ({"no_such_mutant": "a reason"}, "the name of a mutant"),
    ({"wrong": ""}, "a non-empty string"),
    (["wrong"], "a mapping of mutant name"),
])
def test_hidden_only_names_existing_mutants_with_a_reason(mini_course, value, expected):
    data = yaml.safe_load((mini_course / "course.yml").read_text())
    data["parts"][0]["exercises"][0]["hidden_only"] = value
    (mini_course / "course.yml").write_text(yaml.safe_dump(data, allow_unicode=True))
    with pytest.raises(CourseError) as err:
        load_course(mini_course)
    assert err.value.key.startswith("parts[0].exercises[0].hidden_only") and expected in err.value.expected


def test_hidden_only_loads_as_a_mapping_of_reasons(mini_course):
    data = yaml.safe_load((mini_course / "course.yml").read_text())
    data["parts"][0]["exercises"][0]["hidden_only"] = {"wrong": "needs 10^6 draws"}
    (mini_course / "course.yml").write_text(yaml.safe_dump(data, allow_unicode=True))
    assert load_course(mini_course).exercise("part01_demo.double").hidden_only == {"wrong": "needs 10^6 draws"}
