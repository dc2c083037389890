"""Grading speed: the Part 01 hidden suite isolated vs in-process, and a class with --jobs 1 vs 2.

    .venv/bin/python benchmarks/bench_grading.py [--repeats 2] [--class-size 10]

Prints the environment first (CPU count and load: other work on the machine skews every
figure), then wall times (best of --repeats) and the ratios against the targets: isolated at
most 1.5x in-process; --jobs 2 at least 1.6x faster than --jobs 1 on two cores.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infralab.course import load_course  # noqa: E402
from infralab.grade import GradeOptions, grade  # noqa: E402
from infralab.judge.intake import discover  # noqa: E402
from infralab.judge.minicourse import EXERCISE, kit_root, rmsnorm_course  # noqa: E402
from infralab.record import environment  # noqa: E402
from infralab.runner import TestRun, run_tests  # noqa: E402


def best_of(repeats: int, fn) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def bench_isolation(repeats: int) -> None:
    course = load_course(kit_root())
    part = [ex for ex in course.exercises if ex.part == "part01_transformer"]
    print(f"\n[1] Part 01 hidden suite on the solutions ({len(part)} exercises: {', '.join(ex.name for ex in part)})")
    times = {}
    for isolated in (False, True):
        run = TestRun(target="solutions", exercises=tuple(part), visible=False, hidden=True, seed=0,
                      isolated=isolated, mode="grade")
        wall, record = best_of(repeats, lambda: run_tests(course, run))
        n = sum(ex["total"] for ex in record["exercises"])
        ok = sum(ex["passed"] for ex in record["exercises"])
        label = "isolated" if isolated else "in-process"
        times[label] = wall
        print(f"    {label:<11} {wall:7.2f} s wall (pytest child, start-up included), {ok}/{n} tests passed")
    ratio = times["isolated"] / times["in-process"]
    print(f"    isolated / in-process = {ratio:.2f}x   (target <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})")


def bench_jobs(repeats: int, size: int) -> None:
    print(f"\n[2] a class of {size} submissions ({EXERCISE}, hidden tests, isolated)")
    with tempfile.TemporaryDirectory(prefix="infralab-bench-") as tmp:
        root = rmsnorm_course(Path(tmp) / "course")
        klass = Path(tmp) / "class"
        samples = kit_root() / "fixtures" / "submissions"
        for i in range(size):
            shutil.copytree(samples / ("complete" if i % 2 == 0 else "partial"), klass / f"student{i:02d}")
        course = load_course(root)
        times = {}
        for jobs in (1, 2):
            def once():
                out = Path(tmp) / f"out-{jobs}"
                shutil.rmtree(out, ignore_errors=True)
                return grade(course, discover([klass]), out, GradeOptions(exercises=(EXERCISE,)), jobs=jobs)
            wall, records = best_of(repeats, once)
            times[jobs] = wall
            total = sum(r["points"] for r in records)
            print(f"    --jobs {jobs}  {wall:7.2f} s wall, {len(records)} graded, {total:g} points in all")
        speedup = times[1] / times[2]
        print(f"    speed-up --jobs 2 vs --jobs 1 = {speedup:.2f}x   (target >= 1.6x: {'met' if speedup >= 1.6 else 'NOT met'})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--class-size", type=int, default=10)
    p.add_argument("--skip-isolation", action="store_true")
    args = p.parse_args()
    env = environment()
    print("environment:", ", ".join(f"{k}={v}" for k, v in env.items()))
    print(f"cpus={os.cpu_count()}, load average before={os.getloadavg()}, processor={platform.processor() or '?'}")
    if not args.skip_isolation:
        bench_isolation(args.repeats)
    bench_jobs(args.repeats, args.class_size)
    print(f"\nload average after={os.getloadavg()} (other processes on the machine share these cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
