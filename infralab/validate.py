"""``infralab validate``: the soundness matrix of every exercise; exit 1 on any hole.

``--seeds N`` runs the solution's seed-dependent tests at N base seeds (``--seed S``, S+1, ...) in
the same pytest session (stub and mutants run once, at S; with ``--sweep-mutants`` the mutants at
every seed too, and a mutant that passes every hidden test at some seed is a hole); ``--seed S`` alone
gives the matrix at one seed. The report gives, per exercise, the mutants caught by hidden and by visible tests, and
lists those no visible test catches.
"""
from __future__ import annotations

import argparse
import json
import time

from rich.console import Console
from rich.table import Table

from infralab.course import load_course
from infralab.i18n import tr
from infralab.options import positive_int, seed_int
from infralab.outputs.terminal import progress
from infralab.seeds import fresh_seed
from infralab.soundness import check_soundness


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--part", action="append", help=tr("help.common.part"))
    p.add_argument("--exercise", action="append", help=tr("help.validate.exercise"))
    p.add_argument("--jobs", type=positive_int, default=1, help=tr("help.validate.jobs"))
    p.add_argument("--seed", type=seed_int, default=None, help=tr("help.validate.seed"))
    p.add_argument("--seeds", type=positive_int, default=1,
                   help=tr("help.validate.seeds"))
    p.add_argument("--sweep-mutants", action="store_true", help=tr("help.validate.sweep_mutants"))
    p.add_argument("--json", action="store_true", help=tr("help.validate.json"))
    p.add_argument("--course", default=None, help=tr("help.common.course"))
    from infralab.mutate import add_arguments as add_mutate_arguments
    add_mutate_arguments(p)  # --mutate and its options


def run(args: argparse.Namespace) -> int:
    course = load_course(args.course)
    exercises = course.select(args.part, args.exercise)
    if args.mutate:
        from infralab.mutate import command as mutate_command
        return mutate_command(course, exercises, args)
    base = fresh_seed() if args.seed is None else args.seed  # shown, so that --seed repeats the run
    t0 = time.perf_counter()
    results = []
    with progress(Console(stderr=True), tr("intake.validating"), len(exercises)) as step:  # stdout stays for --json
        for ex in exercises:  # one pytest run per exercise, so each finished one shows
            found, _ = check_soundness(course, (ex,), jobs=args.jobs, seeds=args.seeds, seed=base,
                                       sweep_mutants=args.sweep_mutants)
            results += found
            step(ex.id, tr("intake.validated_line", exercise=ex.id,
                           verdict="sound" if all(r.sound for r in found) else "holes"))
    elapsed = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"course": course.id, "seed": base, "seeds": args.seeds, "duration_s": round(elapsed, 1),
                          "exercises": [r.as_dict() for r in results]}, indent=2, ensure_ascii=False))
    else:
        _print_table(course.id, results, args.seeds, base, elapsed)
    return 0 if all(r.sound for r in results) else 1


def _print_table(course_id: str, results, seeds: int, base, elapsed: float) -> None:
    table = Table(title=tr("seeds.table_title", course=course_id, seeds=seeds, seed=base))
    table.add_column(tr("seeds.col_exercise"), no_wrap=True)
    for key in ("seeds.col_solution", "seeds.col_stub", "seeds.col_hidden", "seeds.col_visible", "seeds.col_verdict"):
        table.add_column(tr(key))
    for r in results:
        table.add_row(r.exercise, f"{r.solution_passed}/{r.solution_total}", f"{r.stub_failed}/{r.stub_total}",
                      f"{r.caught_hidden}/{len(r.mutants)}", f"{r.caught_visible}/{len(r.mutants)}",
                      f"[green]{tr('seeds.sound')}[/]" if r.sound else f"[red]{tr('seeds.holes')}[/]")
    console = Console()
    console.print(table)
    for r in results:
        for hole in r.holes:
            console.print(f"[red]{r.exercise}[/]: {hole}", markup=True, highlight=False)
    for r in results:
        if r.visible_escapes:
            console.print(tr("seeds.visible_escapes", exercise=r.exercise, mutants=", ".join(r.visible_escapes)),
                          markup=False, highlight=False)
    hidden = sum(r.caught_hidden for r in results)
    visible = sum(r.caught_visible for r in results)
    total = sum(len(r.mutants) for r in results)
    console.print(tr("seeds.summary", hidden=hidden, visible=visible, total=total, seconds=round(elapsed)),
                  markup=False, highlight=False)
