"""The result record: one per submission and run; every output (tables, CSV, Gradescope, JUnit,
HTML, nbgrader) is rendered from it.

Shape (JSON)::

    {"schema": "infralab.record/1", "course": ..., "target": ..., "mode": "check|grade|validate|bench",
     "environment": {...}, "started": ISO-8601, "duration_s": float,
     "exercises": [{"id", "part", "name", "points", "max_points", "passed", "failed", "total",
                    "status", "first_failure", "tests": [TestResult...]}],
     "perf": [...], "flags": [...], "protections": {...}}

A test's ``target`` is set when one run checks several targets (soundness mode).
"""
from __future__ import annotations

import json
import platform
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from infralab.course import Course

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
    base_seed: int | None = None  # the run's base seed this case ran at (one of a sweep's, see infralab.seeds)


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


def _status(ex: ExerciseResult) -> str:
    if ex.total == 0:
        return "not run"
    if ex.failed == 0:
        return "passed"
    if ex.passed == 0 and ex.tests and all("NotImplementedError" in t.message for t in ex.tests if t.outcome == "failed"):
        return "not implemented"
    return "partial" if ex.passed else "failed"


def summarize(course: Course, tests: list[TestResult], exercise_ids: list[str] | None = None) -> list[ExerciseResult]:
    """Per-exercise totals and points: partial credit is the weighted share of tests passed.

    Skipped tests (a GPU test on a CPU machine, say) count neither for nor against.
    """
    by_id = {ex.id: ExerciseResult(id=ex.id, part=ex.part, name=ex.name, max_points=ex.points)
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
        weights = [t.weight for t in r.tests if t.outcome != "skipped"]
        won = [t.weight for t in r.tests if t.outcome == "passed"]
        r.points = round(r.max_points * sum(won) / sum(weights), 4) if weights else 0.0
        r.status = _status(r)
    return list(by_id.values())


def build_record(course: Course, target: str, mode: str, tests: list[TestResult], *, started: str,
                 duration_s: float, exercise_ids: list[str] | None = None,
                 perf: list[dict] | None = None, flags: list[dict] | None = None,
                 protections: dict | None = None) -> dict[str, Any]:
    exercises = summarize(course, tests, exercise_ids)
    return {
        "schema": SCHEMA,
        "course": course.id,
        "target": target,
        "mode": mode,
        "started": started,
        "duration_s": round(duration_s, 3),
        "environment": environment(),
        "points": round(sum(e.points for e in exercises), 4),
        "max_points": round(sum(e.max_points for e in exercises if e.total), 4),
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
