"""One score whatever the route: the record's definition (infralab.record.score_tests) and the
sample class (fixtures/submissions: complete, partial, stub) graded through every route on
part01_transformer.rmsnorm: ``infralab grade`` (and its Gradescope results.json), ``nbgrader
autograde`` on the exported notebooks, and the secure ``infralab nbgrader grade``."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from infralab.course import load_course
from infralab.outputs.gradescope import results_json
from infralab.record import score_tests, split_points

ROOT = Path(__file__).resolve().parents[1]
COURSE = load_course(ROOT)
EXERCISE = "part01_transformer.rmsnorm"
CLASS = ("complete", "partial", "stub")


def _exact_sum(values) -> Decimal:
    return sum((Decimal(str(v)) for v in values), Decimal(0))


@pytest.mark.parametrize("total,weights", [(5, [1, 1, 1]), (10, [2, 1, 1, 1, 1, 1, 3]), (7.5, [1] * 7),
                                           (1, [1] * 3), (15, [0.5, 2, 2, 1, 1]), (0.0001, [1, 1])])
def test_split_points_sums_exactly_to_the_total_and_follows_the_weights(total, weights):
    shares = split_points(total, weights)
    assert _exact_sum(shares) == Decimal(str(total))
    assert all(Decimal(str(s)) % Decimal("0.0001") == 0 for s in shares)
    exact = [Decimal(str(total)) * Decimal(str(w)) / _exact_sum(weights) for w in weights]
    assert all(abs(Decimal(str(s)) - e) < Decimal("0.0001") for s, e in zip(shares, exact))


def _t(name, outcome, visibility="hidden", weight=1.0):
    return {"name": name, "outcome": outcome, "visibility": visibility, "weight": weight, "message": ""}


def test_score_counts_hidden_functions_by_weight_and_splits_cases_and_skips_nothing():
    tests = [_t("test_v", "passed", "visible"), _t("test_a", "passed", weight=2.0),
             _t("test_b[1]", "passed"), _t("test_b[2]", "failed"), _t("test_b[3]", "passed"),
             _t("test_gpu", "skipped", weight=5.0)]
    scores = score_tests(10, tests)
    assert scores[0] == (0.0, 0.0)  # visible tests carry no points when hidden ones ran
    assert scores[1] == (6.6667, 6.6667)  # test_a: weight 2 of 3
    assert [p for p, _ in scores[2:5]] == [1.1111, 1.1111, 1.1111]  # test_b's 3.3333 over its cases
    assert scores[5] == (0.0, 0.0)  # skipped: neither for nor against
    assert _exact_sum(p for p, _ in scores) == 10
    assert _exact_sum(w for _, w in scores) == Decimal("8.8889")
    # a student's check (no hidden test ran): the visible tests estimate progress
    assert score_tests(4, [_t("test_v", "passed", "visible"), _t("test_w", "failed", "visible")]) == \
        [(2.0, 2.0), (2.0, 0.0)]


def test_results_json_max_scores_sum_exactly_to_each_exercises_points():
    tests = [_t(f"test_{i}", "passed" if i % 2 else "failed", weight=1 + i % 3) for i in range(7)]
    record = {"points": 0.0, "max_points": 10.0, "environment": {}, "mode": "grade", "flags": [], "protections": {},
              "exercises": [{"id": EXERCISE, "part": "part01_transformer", "name": "rmsnorm", "max_points": 10.0,
                             "status": "partial", "first_failure": "", "tests": tests}]}
    out = results_json(record)
    assert _exact_sum(t["max_score"] for t in out["tests"]) == 10
    won = [w for _, w in score_tests(10, tests)]
    assert [t["score"] for t in out["tests"]] == won


# --- the routes, on the sample class ----------------------------------------------------------
def _sources() -> dict[str, str]:
    rel = Path("part01_transformer/rmsnorm.py")
    found = {}
    for student in CLASS:
        module = ROOT / "fixtures/submissions" / student / "exercises" / rel
        found[student] = (module if module.is_file() else ROOT / "exercises" / rel).read_text(encoding="utf-8")
    return found


@pytest.mark.timeout(900)
def test_every_route_gives_the_sample_class_the_same_points(tmp_path):
    pytest.importorskip("nbgrader")
    nbformat = pytest.importorskip("nbformat")
    from nbgrader.api import Gradebook

    from infralab.grade import GradeOptions, grade
    from infralab.judge.intake import discover
    from infralab.nbgrader.export import export_course
    from infralab.nbgrader.extract import fill_answer
    from infralab.nbgrader.grade import grade_submissions
    from infralab.nbgrader.tool import run_nbgrader

    part, name = EXERCISE.split(".")
    records = grade(COURSE, discover([ROOT / "fixtures/submissions" / s for s in CLASS]), tmp_path / "grades",
                    GradeOptions(exercises=(EXERCISE,), call_timeout_s=10), jobs=2)
    by_grade = {r["student"]: r["points"] for r in records}
    gradescope = {r["student"]: results_json(r)["score"] for r in records}

    course_dir = tmp_path / "nb"
    export_course(COURSE, course_dir, exercises=[name])
    assert run_nbgrader(course_dir, "generate_assignment", part, "--force", capture=True).returncode == 0
    release = nbformat.read(course_dir / "release" / part / f"{name}.ipynb", as_version=4)
    for student, code in _sources().items():
        folder = course_dir / "submitted" / student / part
        folder.mkdir(parents=True)
        nbformat.write(fill_answer(release, code), folder / f"{name}.ipynb")
    proc = run_nbgrader(course_dir, "autograde", part, "--force", capture=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        by_autograde = {s: round(gb.find_submission(part, s).score, 4) for s in CLASS}
    by_secure = {r.student: r.points for r in grade_submissions(COURSE, course_dir / "submitted", jobs=2)}

    assert by_grade["complete"] == 5.0 and by_grade["stub"] == 0.0 and 0 < by_grade["partial"] < 5.0
    assert by_grade == gradescope == by_autograde == by_secure, (by_grade, gradescope, by_autograde, by_secure)
