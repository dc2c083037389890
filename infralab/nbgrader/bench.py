"""How long one part's notebooks take for one student: export, generate_assignment, autograde,
and the secure path. Prints the environment first (figures from a loaded machine mislead).

    python -m infralab.nbgrader.bench --part part01_transformer [--work DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from infralab.course import load_course
from infralab.i18n import tr
from infralab.nbgrader.export import export_course
from infralab.nbgrader.extract import fill_answer, reference_answer
from infralab.nbgrader.grade import grade_submissions, judge_available
from infralab.nbgrader.tool import run_nbgrader
from infralab.record import environment

STUDENT = "bench_student"


def _nbgrader(course_dir: Path, *args: str) -> None:
    proc = run_nbgrader(course_dir, *args, capture=True)
    if proc.returncode != 0:
        raise RuntimeError(tr("notebook.nbgrader_failed", command=" ".join(args), output=proc.stdout[-3000:]))


def bench(part: str, work: Path) -> dict[str, float]:
    course = load_course()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    written = export_course(course, work, parts=[part])
    timings["export_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _nbgrader(work, "generate_assignment", part, "--force")
    timings["generate_assignment_s"] = time.perf_counter() - t0
    folder = work / "submitted" / STUDENT / part
    folder.mkdir(parents=True, exist_ok=True)
    for e in written:  # the student hands in the reference answers
        release = nbformat.read(work / "release" / part / e.notebook.name, as_version=4)
        source = nbformat.read(e.notebook, as_version=4)
        nbformat.write(fill_answer(release, reference_answer(source)), folder / e.notebook.name)
    t0 = time.perf_counter()
    _nbgrader(work, "autograde", part, "--student", STUDENT, "--force")
    timings["autograde_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = grade_submissions(course, work / "submitted", students=[STUDENT])
    timings["secure_grade_s"] = time.perf_counter() - t0
    timings["secure_points"] = sum(r.points for r in results)
    timings["max_points"] = sum(r.max_points for r in results)
    timings["notebooks"] = len(written)
    return timings


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", default="part01_transformer")
    p.add_argument("--work", default=None, help="course directory to write (default: a temporary one)")
    args = p.parse_args(argv)
    env = environment() | {"cpus": os.cpu_count(), "load_average_1m": os.getloadavg()[0],
                           "isolated_judge": judge_available()}
    print(json.dumps(env, indent=2))
    with tempfile.TemporaryDirectory(prefix="infralab-nb-bench-") as tmp:
        timings = bench(args.part, Path(args.work) if args.work else Path(tmp))
    timings["load_average_1m_after"] = os.getloadavg()[0]
    print(json.dumps({k: round(v, 2) for k, v in timings.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
