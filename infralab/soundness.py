"""Soundness of an exercise's tests, proven by running them on known answers.

An exercise is sound when:
  1. the solution passes every test (visible and hidden) at every seed of the sweep: a test that
     fails a correct answer for some seed is a defect, so ``seeds`` > 1 runs each seed-dependent
     test at that many base seeds (infralab.seeds) and reports, per failing test, the first
     failing seed and how many failed;
  2. the stub fails every hidden test (and every visible one: a test the stub passes cannot fail);
  3. every known-wrong implementation (mutant) in fixtures/ fails at least one hidden test (with
     ``sweep_mutants``, at every seed of the sweep: a mutant only some draws of a property test catch
     escapes at the others, and ``mutant_escapes`` lists those seeds);
  4. there are at least MIN_MUTANTS mutants.

The mutants run on the visible tests too: the record reports how many each kind of test catches
(the visible kill rate is what a student's ``infralab check`` sees before grading). A mutant that
no visible test catches is listed, not (yet) a hole.

One pytest run in ``--soundness`` mode checks all targets of the chosen exercises (stub and mutants
at the first seed, the solution at every seed of the sweep); this module reads its record and
lists the holes.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infralab.course import Course, Exercise
from infralab.i18n import tr
from infralab.runner import TestRun, run_tests
from infralab.seeds import kit_id, own_nodeid

MIN_MUTANTS = 3
# A failure of the target itself (the module does not import, a function is missing), not of a test:
# a mutant built by editing the reference's source fails so when the reference changed under it, and
# every test then "catches" it. Such failures are not kills; the mutant is a hole until rebuilt.
BROKEN_TARGET = "TargetError:"


@dataclass
class SeedFailure:
    """A test the solution fails at some seeds of the sweep."""

    test: str
    first_seed: int
    failed: int  # seeds at which it failed
    seeds: int  # seeds it ran at (1 for a test that draws nothing random)
    message: str


@dataclass
class Soundness:
    exercise: str
    seeds: int = 1
    solution_passed: int = 0  # cases: a test at one seed
    solution_total: int = 0
    stub_failed: int = 0
    stub_total: int = 0
    mutants: dict[str, int] = field(default_factory=dict)  # mutant -> hidden tests it fails
    mutants_visible: dict[str, int] = field(default_factory=dict)  # mutant -> visible tests it fails
    solution_failures: list[SeedFailure] = field(default_factory=list)
    holes: list[str] = field(default_factory=list)
    broken_mutants: list[str] = field(default_factory=list)  # failed to load: their failures catch nothing
    mutant_escapes: dict[str, list[int]] = field(default_factory=dict)  # --sweep-mutants: mutant -> seeds it passed

    @property
    def sound(self) -> bool:
        return not self.holes

    @property
    def caught_hidden(self) -> int:
        return sum(1 for n in self.mutants.values() if n)

    @property
    def caught_visible(self) -> int:
        return sum(1 for n in self.mutants_visible.values() if n)

    @property
    def visible_escapes(self) -> list[str]:
        """Mutants that pass every visible test (a student's ``check`` shows them full points)."""
        return sorted(name for name in self.mutants if not self.mutants_visible.get(name))

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "solution_failures": [f.__dict__ for f in self.solution_failures],
                "sound": self.sound, "mutants_caught_hidden": self.caught_hidden,
                "mutants_caught_visible": self.caught_visible, "mutants_total": len(self.mutants),
                "visible_escapes": self.visible_escapes}


def _own_nodeid(t: dict[str, Any]) -> str:
    """A case's node id without the kit's target and sweep-seed ids: the test a plain run names."""
    base, target = t.get("base_seed"), t.get("target") or "solutions"
    added = [kit_id(target, base, True), kit_id(None, base, True)] if base is not None else []
    for kit in added + [target]:
        own = own_nodeid(t["nodeid"], kit)
        if own != t["nodeid"]:
            return own
    return t["nodeid"]


def _solution_failures(cases: list[dict[str, Any]]) -> list[SeedFailure]:
    """Per test of the solution, the first failing base seed and how many of its seeds failed."""
    by_test: dict[str, list[dict[str, Any]]] = {}
    for t in cases:
        if t["outcome"] != "skipped":
            by_test.setdefault(_own_nodeid(t), []).append(t)
    out = []
    for name, runs in by_test.items():
        failed = sorted((t for t in runs if t["outcome"] == "failed"), key=lambda t: t.get("base_seed") or 0)
        if failed:
            out.append(SeedFailure(name, failed[0].get("base_seed"), len(failed), len(runs), failed[0]["message"]))
    return out


def _escaped_seeds(cases: list[dict[str, Any]]) -> list[int]:
    """The base seeds of a sweep at which one mutant passed every hidden test (``cases``: its hidden
    cases). A test run once (it draws nothing random) that catches the mutant catches it at every seed."""
    by_test: dict[str, list[dict[str, Any]]] = {}
    for t in cases:
        by_test.setdefault(_own_nodeid(t), []).append(t)
    swept = [runs for runs in by_test.values() if len(runs) > 1]
    if not swept or any(runs[0]["outcome"] == "failed" for runs in by_test.values() if len(runs) == 1):
        return []
    caught = {t["base_seed"] for runs in swept for t in runs if t["outcome"] == "failed"}
    return sorted({t["base_seed"] for runs in swept for t in runs} - caught)


def analyze(course: Course, exercises: tuple[Exercise, ...], record: dict[str, Any], seeds: int = 1) -> list[Soundness]:
    tests = [t for ex in record["exercises"] for t in ex["tests"]]
    out = []
    for ex in exercises:
        s = Soundness(exercise=ex.id, seeds=seeds)
        mine = [t for t in tests if t["exercise"] == ex.id and t["outcome"] != "skipped"]
        solution = []
        for t in mine:
            target = t["target"] or ""
            failed = t["outcome"] == "failed"
            if target == "solutions":
                solution.append(t)
                s.solution_total += 1
                s.solution_passed += not failed
            elif target in ("exercises", f"stub:{ex.id}"):  # a capstone's stub runs on the reference parts
                s.stub_total += 1
                s.stub_failed += failed
                if not failed:
                    s.holes.append(tr("seeds.stub_passes", visibility=tr(f"seeds.kind_{t['visibility']}"),
                                          test=t["name"]))
            elif target.startswith("mutant:"):
                name = target.rsplit(":", 1)[-1]
                kills = s.mutants if t["visibility"] == "hidden" else s.mutants_visible
                s.mutants.setdefault(name, 0)
                broken = failed and t["message"].startswith(BROKEN_TARGET)  # does not import, lacks a function
                if broken and name not in s.broken_mutants:
                    s.broken_mutants.append(name)
                    s.holes.append(tr("seeds.mutant_broken", mutant=name, message=t["message"][:300]))
                kills[name] = kills.get(name, 0) + (failed and not broken)
        s.solution_failures = _solution_failures(solution)
        for f in s.solution_failures:
            s.holes.append(tr("seeds.solution_fails", test=f.test, first=f.first_seed, failed=f.failed,
                              seeds=f.seeds, message=f.message[:300]))
        if s.solution_total == 0:
            s.holes.append(tr("seeds.no_solution_test"))
        for name, caught in sorted(s.mutants.items()):
            if caught == 0:
                s.holes.append(tr("seeds.mutant_survives", mutant=name))
                continue
            escaped = _escaped_seeds([t for t in mine if t["target"] == f"mutant:{ex.id}:{name}"
                                      and t["visibility"] == "hidden"])
            if escaped:
                s.mutant_escapes[name] = escaped
                s.holes.append(tr("seeds.mutant_escapes", mutant=name, escaped=len(escaped), seeds=seeds,
                                  exercise=ex.id, first=escaped[0]))
        if len(s.mutants) < MIN_MUTANTS:
            s.holes.append(tr("seeds.few_mutants", count=len(s.mutants), folder=str(ex.mutants_dir), least=MIN_MUTANTS))
        out.append(s)
    return out


def sweep_solution(course: Course, exercises: tuple[Exercise, ...], seeds: int, seed: int, jobs: int = 1
                   ) -> tuple[list[SeedFailure], dict[str, Any]]:
    """The solution alone, every test (visible and hidden) at ``seeds`` base seeds from ``seed``, in one
    session: the failures per test. (:func:`check_soundness` does this within the whole matrix.)"""
    run = TestRun(target="solutions", exercises=exercises, visible=True, hidden=True, mode="validate",
                  jobs=jobs, seed=seed, seeds=seeds)
    record = run_tests(course, run)
    return _solution_failures([t for ex in record["exercises"] for t in ex["tests"]]), record


def check_soundness(course: Course, exercises: tuple[Exercise, ...], jobs: int = 1, seeds: int = 1,
                    seed: int | None = None, extra_args: list[str] | None = None, sweep_mutants: bool = False
                    ) -> tuple[list[Soundness], dict[str, Any]]:
    """The matrix of ``exercises``: stub and mutants at ``seed`` (default: fresh), the solution at
    ``seeds`` consecutive base seeds from it (the mutants too with ``sweep_mutants``: a mutant that
    passes every hidden test at one of them is a hole), all in one pytest session."""
    run = TestRun(target="solutions", exercises=exercises, visible=True, hidden=True, mode="validate",
                  soundness=True, jobs=jobs, seed=seed, seeds=seeds, extra_args=list(extra_args or []),
                  sweep_mutants=sweep_mutants)
    record = run_tests(course, run)
    return analyze(course, exercises, record, seeds), record


KIT_ID = re.compile(r"(?:\[|-)((?:solutions-)?seed\d+|solutions)\]$")  # the ids the kit appends: target, sweep seed


def closest_calls(log: Path, solution_only: bool = True) -> list[dict[str, Any]]:
    """The tolerance checks in a margin log (``INFRALAB_MARGIN_LOG``, see infralab/testing.py), one
    row per (test, check name), worst first: the most of its tolerance any seed used, the median and
    99th percentile over its checks, how many, and whether the tolerance was the dtype table's.
    ``solution_only``: keep the solution's cases of a soundness run (its ids name the target) and
    drop the stub's and the mutants'; False for a run of one target (benchmarks/margin_tail.py)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
        entry = json.loads(line)
        kit = KIT_ID.search(entry["test"])
        if solution_only and not (kit and kit.group(1).startswith("solutions")):
            continue
        test = own_nodeid(entry["test"], kit.group(1)) if kit else entry["test"]
        row = rows.setdefault((test, entry["name"]), {"test": test, "check": entry["name"], "values": [],
                                                      "tolerance": "table" if entry["table"] else "the test's own"})
        row["values"].append(entry["used"])
    for row in rows.values():
        values = sorted(row.pop("values"))
        row.update(used=values[-1], p99=values[int(0.99 * (len(values) - 1))],
                   median=values[(len(values) - 1) // 2], checks=len(values))
    return sorted(rows.values(), key=lambda r: -r["used"])
