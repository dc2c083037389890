"""The result record: one per submission and run; every output (tables, CSV, Gradescope, JUnit,
HTML, nbgrader) is rendered from it.

Shape (JSON)::

    {"schema": "infralab.record/1", "course": ..., "target": ..., "mode": "check|grade|validate|bench",
     "environment": {...}, "started": ISO-8601, "duration_s": float,
     "exercises": [{"id", "part", "name", "points", "max_points", "passed", "failed", "total",
                    "status", "first_failure", "tests": [TestResult...]}],
     "perf": [...], "flags": [...], "protections": {...}}

A test's ``target`` is set when one run checks several targets (soundness mode). A capstone
(course.yml ``uses:``) also has ``uses``, ``reference_parts_points`` and ``lines`` (a score line per
run, with ``whose`` parts it ran on), and each of its tests ``parts`` (``own`` or ``reference``).
"""
from __future__ import annotations

import json
import platform
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from importlib import metadata
from pathlib import Path
from typing import Any

from infralab.course import Course
from infralab.i18n import tr

SCHEMA = "infralab.record/1"


@dataclass
class TestResult:

    __test__ = False  # not a pytest test class
    nodeid: str
    name: str
    exercise: str
    visibility: str  # visible | hidden
    outcome: str  # passed | failed | skipped
    weight: float = 1.0
    duration_s: float = 0.0
    message: str = ""
    diagnosis: str | None = None
    seed: int | None = None  # the test's own seed
    target: str | None = None
    points: float = 0.0  # what this test won (see score_tests)
    max_points: float = 0.0  # what it could win: 0 for a skipped or an ungraded (visible) test
    base_seed: int | None = None  # the run's base seed this case ran at (one of a sweep's, see infralab.seeds)
    parts: str | None = None  # a capstone's test: run on the student's "own" parts or the "reference" parts


@dataclass
class ExerciseResult:
    id: str
    part: str
    name: str
    max_points: float
    points: float = 0.0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    total: int = 0
    status: str = "not run"  # passed | partial | failed | not implemented | not run
    first_failure: str = ""
    tests: list[TestResult] = field(default_factory=list)
    # a capstone (course.yml uses:): the modules it uses, the points of its reference-parts run, and one
    # score line per run: {"parts", "whose": {module: student|reference|stub}, "points", "max_points", ...}
    uses: list[str] = field(default_factory=list)
    reference_parts_points: float = 0.0
    lines: list[dict[str, Any]] = field(default_factory=list)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Where a run happened: enough to reproduce it, and to tell a logic check from a GPU figure."""
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "torch": _version("torch"),
        "triton": _version("triton"),
        "numpy": _version("numpy"),
        "infralab": _version("infralab"),
    }
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        env["device"] = torch.cuda.get_device_name(0)
        env["cuda"] = torch.version.cuda
    else:
        env["device"] = "cpu"
    return env


# -- the score: defined once, every route (grade, Gradescope, nbgrader) reads it from the record --
PLACES = 4  # points are multiples of 10**-PLACES


def split_points(total: float, weights: Sequence[float], places: int = PLACES) -> list[float]:
    """``total`` over ``weights`` in multiples of ``10**-places`` that sum exactly to ``total``.

    Largest remainder: each share is the exact share rounded down, and the units left over go,
    one each, to the largest remainders (the earlier one first on a tie). The one rounding
    function of the kit's points.
    """
    if not weights:
        return []
    scale = 10 ** places
    units = round(Fraction(str(total)) * scale)
    whole = sum(Fraction(str(w)) for w in weights)
    if whole <= 0:
        raise ValueError(tr("course.weights_positive", weights=list(weights)))
    exact = [units * Fraction(str(w)) / whole for w in weights]
    shares = [int(e) for e in exact]  # floor: every weight is >= 0
    for i in sorted(range(len(exact)), key=lambda i: (-(exact[i] - shares[i]), i))[:units - sum(shares)]:
        shares[i] += 1
    return [s / scale for s in shares]


def function_name(name: str) -> str:
    """The test function a result belongs to: ``test_x[case-1]`` -> ``test_x``."""
    return name.split("[", 1)[0]


def _field(t: object, key: str):
    return t[key] if isinstance(t, dict) else getattr(t, key)


def score_tests(max_points: float, tests: Sequence[TestResult | dict],
                reference_points: float = 0.0) -> list[tuple[float, float]]:
    """(points possible, points won) of each test of one exercise: the score's one definition.

    - A graded capstone ran twice, on the student's own parts and on the reference parts (its tests'
      ``parts``): each run is a score line of its own, ``reference_points`` (> 0 only in a record of
      both runs) for the reference-parts run and the rest for the own-parts run, each split over its
      tests as below; a run that lost its tests loses its points (fail closed).

    - The graded tests are the hidden ones; a run without hidden tests (a student's check) grades
      its visible tests instead, as a progress estimate.
    - The exercise's points (course.yml) are split over its graded test *functions* by
      ``@pytest.mark.weight``; a parametrized function's share is split equally over its cases.
    - A skipped test (a GPU test on a CPU machine) counts neither for nor against: the points go
      to the tests that ran. Every split is :func:`split_points` (exact sums).
    - A test won its possible points if it passed, else 0.
    """
    graded = "hidden" if any(_field(t, "visibility") == "hidden" for t in tests) else "visible"
    counted = [_field(t, "visibility") == graded and _field(t, "outcome") != "skipped" for t in tests]
    reference = [_part(t) == "reference" for t in tests]
    runs = [[i for i in range(len(tests)) if reference[i] == r] for r in (False, True)]
    possible = [0.0] * len(tests)
    if reference_points > 0:
        for run, points in zip(runs, split_run_points(max_points, reference_points)):
            _share(points, tests, [i for i in run if counted[i]], possible)
    else:
        _share(max_points, tests, [i for i in range(len(tests)) if counted[i]], possible)
    return [(p, p if _field(t, "outcome") == "passed" else 0.0) for p, t in zip(possible, tests)]


def split_run_points(max_points: float, reference_points: float) -> tuple[float, float]:
    """(own-parts run, reference-parts run) points of a capstone: exact, summing to ``max_points``."""
    reference = round(min(float(reference_points), float(max_points)), PLACES)
    return total_points([max_points, -reference]), reference


def _part(t: object) -> str | None:
    return t.get("parts") if isinstance(t, dict) else getattr(t, "parts", None)


def _share(max_points: float, tests: Sequence[TestResult | dict], graded: list[int], possible: list[float]) -> None:
    """``max_points`` over the ``graded`` tests by weight (into ``possible``)."""
    functions: dict[str, list[int]] = {}
    for i in graded:
        functions.setdefault(function_name(_field(tests[i], "name")), []).append(i)
    if functions:
        names = list(functions)
        shares = split_points(max_points, [float(_field(tests[functions[n][0]], "weight")) for n in names])
        for name, share in zip(names, shares):
            for i, case in zip(functions[name], split_points(share, [1.0] * len(functions[name]))):
                possible[i] = case


def total_points(values: Sequence[float]) -> float:
    """A sum of point values (multiples of 10**-PLACES) without float drift."""
    return round(sum(values), PLACES)


def _status(ex: ExerciseResult) -> str:
    if ex.total == 0:
        return "not run"
    if ex.failed == 0:
        return "passed"
    if ex.passed == 0 and ex.tests and all("NotImplementedError" in t.message for t in ex.tests if t.outcome == "failed"):
        return "not implemented"
    return "partial" if ex.passed else "failed"


def summarize(course: Course, tests: list[TestResult], exercise_ids: list[str] | None = None,
              whose: dict[str, dict[str, dict[str, str]]] | None = None, both_runs: bool = False) -> list[ExerciseResult]:
    """Per-exercise totals and points (:func:`score_tests`); each test gets its own points too.
    ``whose``: capstone -> parts run -> {module: whose}, for the capstones' score lines; ``both_runs``:
    the capstones ran on their own and on the reference parts (a grading), each run credited apart."""
    by_id = {ex.id: ExerciseResult(id=ex.id, part=ex.part, name=ex.name, max_points=ex.points, uses=list(ex.uses),
                                   reference_parts_points=ex.reference_parts_points if both_runs else 0.0)
             for ex in course.exercises if exercise_ids is None or ex.id in exercise_ids}
    for t in tests:
        if t.exercise not in by_id:
            continue
        r = by_id[t.exercise]
        r.tests.append(t)
        if t.outcome == "skipped":
            r.skipped += 1
            continue
        r.total += 1
        if t.outcome == "passed":
            r.passed += 1
        else:
            r.failed += 1
            if not r.first_failure:
                r.first_failure = f"{t.name}: {t.message}"
    for r in by_id.values():
        for t, (possible, won) in zip(r.tests, score_tests(r.max_points, r.tests, r.reference_parts_points)):
            t.max_points, t.points = possible, won
        r.points = total_points([t.points for t in r.tests])
        r.status = _status(r)
        if r.uses:
            r.lines = score_lines(r, (whose or {}).get(r.id, {}))
    return list(by_id.values())


def score_lines(r: ExerciseResult, whose: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """A capstone's runs as score lines (the own parts', the reference parts'), each naming whose parts it
    ran on: the runs that happened, and in a record of both runs both (a lost run scores 0)."""
    lines = []
    for parts in ("own", "reference"):
        mine = [t for t in r.tests if (t.parts or "own") == parts and t.outcome != "skipped"]
        expected = r.reference_parts_points > 0 and (parts == "reference" or r.reference_parts_points < r.max_points)
        if not mine and not expected:
            continue
        lines.append({"parts": parts, "whose": dict(whose.get(parts, {})),
                      "points": total_points([t.points for t in mine]),
                      "max_points": split_run_points(r.max_points, r.reference_parts_points)[parts == "reference"]
                      if r.reference_parts_points > 0 else total_points([t.max_points for t in mine]),
                      "passed": sum(t.outcome == "passed" for t in mine),
                      "failed": sum(t.outcome == "failed" for t in mine), "total": len(mine)})
    return lines


def build_record(course: Course, target: str, mode: str, tests: list[TestResult], *, started: str,
                 duration_s: float, exercise_ids: list[str] | None = None,
                 perf: list[dict] | None = None, flags: list[dict] | None = None,
                 protections: dict | None = None,
                 whose: dict[str, dict[str, dict[str, str]]] | None = None, both_runs: bool = False) -> dict[str, Any]:
    exercises = summarize(course, tests, exercise_ids, whose, both_runs)
    return {
        "schema": SCHEMA,
        "course": course.id,
        "target": target,
        "mode": mode,
        "started": started,
        "duration_s": round(duration_s, 3),
        "environment": environment(),
        "points": total_points([e.points for e in exercises]),
        "max_points": total_points([e.max_points for e in exercises if e.total]),
        "exercises": [asdict(e) for e in exercises],
        "perf": perf or [],
        "flags": flags or [],
        "protections": protections or {"mode": "in-process", "isolated": False},
    }


def write_record(record: dict[str, Any], path: Path | str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_record(path: Path | str) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))
