"""Soundness of an exercise's tests, proven by running them on known answers.

An exercise is sound when:
  1. the solution passes every test (visible and hidden);
  2. the stub fails every hidden test (and every visible one: a test the stub passes cannot fail);
  3. every known-wrong implementation (mutant) in fixtures/ fails at least one hidden test;
  4. there are at least MIN_MUTANTS mutants.

One pytest run in ``--soundness`` mode checks all targets of the chosen exercises; this module
reads its record and lists the holes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from infralab.course import Course, Exercise
from infralab.runner import TestRun, run_tests

MIN_MUTANTS = 3


@dataclass
class Soundness:
    exercise: str
    solution_passed: int = 0
    solution_total: int = 0
    stub_failed: int = 0
    stub_total: int = 0
    mutants: dict[str, int] = field(default_factory=dict)  # mutant -> hidden tests it fails
    holes: list[str] = field(default_factory=list)

    @property
    def sound(self) -> bool:
        return not self.holes


def analyze(course: Course, exercises: tuple[Exercise, ...], record: dict[str, Any]) -> list[Soundness]:
    tests = [t for ex in record["exercises"] for t in ex["tests"]]
    out = []
    for ex in exercises:
        s = Soundness(exercise=ex.id)
        mine = [t for t in tests if t["exercise"] == ex.id and t["outcome"] != "skipped"]
        for t in mine:
            target = t["target"] or ""
            failed = t["outcome"] == "failed"
            if target == "solutions":
                s.solution_total += 1
                s.solution_passed += not failed
                if failed:
                    s.holes.append(f"solution fails {t['name']}: {t['message'][:300]}")
            elif target == "exercises":
                s.stub_total += 1
                s.stub_failed += failed
                if not failed:
                    s.holes.append(f"the stub passes {t['visibility']} test {t['name']}")
            elif target.startswith("mutant:") and t["visibility"] == "hidden":
                name = target.rsplit(":", 1)[-1]
                s.mutants[name] = s.mutants.get(name, 0) + failed
        if s.solution_total == 0:
            s.holes.append("no test ran on the solution")
        for name, caught in sorted(s.mutants.items()):
            if caught == 0:
                s.holes.append(f"mutant {name} passes every hidden test")
        if len(s.mutants) < MIN_MUTANTS:
            s.holes.append(f"only {len(s.mutants)} mutants in {ex.mutants_dir} (at least {MIN_MUTANTS} wanted)")
        out.append(s)
    return out


def check_soundness(course: Course, exercises: tuple[Exercise, ...], jobs: int = 1,
                    extra_args: list[str] | None = None) -> tuple[list[Soundness], dict[str, Any]]:
    run = TestRun(target="solutions", exercises=exercises, visible=True, hidden=True, mode="validate",
                  soundness=True, jobs=jobs, seed=None, extra_args=list(extra_args or []))
    record = run_tests(course, run)
    return analyze(course, exercises, record), record
