"""``infralab validate``: the soundness matrix of every exercise; exit 1 on any hole."""
from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from infralab.course import load_course
from infralab.options import positive_int
from infralab.i18n import tr
from infralab.outputs.terminal import progress
from infralab.soundness import check_soundness


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--part", action="append", help="only this part (repeatable)")
    p.add_argument("--exercise", action="append", help="only this exercise")
    p.add_argument("--jobs", type=positive_int, default=1, help="pytest-xdist workers")
    p.add_argument("--json", action="store_true", help="print the matrix as JSON")
    p.add_argument("--course", default=None, help="course root (default: found from the current folder)")
    from infralab.mutate import add_arguments as add_mutate_arguments
    add_mutate_arguments(p)  # --mutate and its options


def run(args: argparse.Namespace) -> int:
    course = load_course(args.course)
    exercises = course.select(args.part, args.exercise)
    if args.mutate:
        from infralab.mutate import command as mutate_command
        return mutate_command(course, exercises, args)
    results = []
    with progress(Console(stderr=True), tr("intake.validating"), len(exercises)) as step:  # stdout stays for --json
        for ex in exercises:  # one pytest run per exercise, so each finished one shows
            found, _ = check_soundness(course, (ex,), jobs=args.jobs)
            results += found
            step(ex.id, tr("intake.validated_line", exercise=ex.id,
                           verdict="sound" if all(r.sound for r in found) else "holes"))
    if args.json:
        print(json.dumps([r.__dict__ | {"sound": r.sound} for r in results], indent=2))
    else:
        table = Table(title=f"soundness · {course.id}")
        table.add_column("exercise", no_wrap=True)
        for col in ("solution passes", "stub fails", "mutants caught", "verdict"):
            table.add_column(col)
        for r in results:
            caught = sum(1 for n in r.mutants.values() if n)
            table.add_row(r.exercise, f"{r.solution_passed}/{r.solution_total}", f"{r.stub_failed}/{r.stub_total}",
                          f"{caught}/{len(r.mutants)}", "[green]sound[/]" if r.sound else "[red]holes[/]")
        console = Console()
        console.print(table)
        for r in results:
            for hole in r.holes:
                console.print(f"[red]{r.exercise}[/]: {hole}", markup=True, highlight=False)
    return 0 if all(r.sound for r in results) else 1
