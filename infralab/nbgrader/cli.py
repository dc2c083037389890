"""``infralab nbgrader export|grade``: the course as nbgrader notebooks, and their secure grading."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from infralab.course import load_course
from infralab.i18n import tr
from infralab.nbgrader.tool import printed_command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--course", default=None, help=tr("help.common.course"))
    sub = p.add_subparsers(dest="nbgrader_command", required=True, metavar="ACTION")
    ex = sub.add_parser("export", help=tr("help.nbgrader.export"))
    ex.add_argument("--out", required=True, help=tr("help.nbgrader.export.out"))
    ex.add_argument("--part", action="append", help=tr("help.nbgrader.export.part"))
    ex.add_argument("--exercise", action="append", help=tr("help.nbgrader.export.exercise"))
    ex.add_argument("--student", action="store_true",
                    help=tr("help.nbgrader.export.student"))
    ex.add_argument("--force", action="store_true", help=tr("help.nbgrader.export.force"))
    ex.add_argument("--db", default=None, help=tr("help.nbgrader.export.db"))
    ck = sub.add_parser("check", help=tr("help.nbgrader.check"))
    ck.add_argument("notebooks", help=tr("help.nbgrader.check.notebooks"))
    ck.add_argument("--hidden", action="store_true", help=tr("help.common.hidden"))
    for action, what in (("generate", "nbgrader generate_assignment"), ("autograde", "nbgrader autograde")):
        g = sub.add_parser(action, help=tr("help.nbgrader.step", what=what))
        g.add_argument("assignment", nargs="+", help=tr("help.nbgrader.step.assignment"))
        g.add_argument("--course-dir", default=".", help=tr("help.nbgrader.step.course_dir"))
        g.add_argument("--student", action="append", help=tr("help.nbgrader.step.student"))
    gr = sub.add_parser("grade", help=tr("help.nbgrader.grade"))
    add_grade_arguments(gr)


def add_grade_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("submitted", help=tr("help.nbgrader.grade.submitted"))
    p.add_argument("--db", default=None, help=tr("help.nbgrader.grade.db"))
    p.add_argument("--assignment", action="append", help=tr("help.nbgrader.grade.assignment"))
    p.add_argument("--student", action="append", help=tr("help.nbgrader.grade.student"))
    p.add_argument("--jobs", type=int, default=None, help=tr("help.nbgrader.grade.jobs"))
    p.add_argument("--in-process", action="store_true",
                   help=tr("help.nbgrader.grade.in_process"))


def run(args: argparse.Namespace) -> int:
    if args.nbgrader_command in ("generate", "autograde"):  # nbgrader's own steps: no course needed
        return _nbgrader_step(args)
    course = load_course(args.course)
    if args.nbgrader_command == "export":
        return _export(course, args)
    if args.nbgrader_command == "check":
        return _check(course, Path(args.notebooks), args.hidden)
    return run_grade(course, Path(args.submitted), args)


def _check(course, folder: Path, hidden: bool) -> int:
    import tempfile

    from infralab.nbgrader.extract import write_module
    from infralab.outputs.terminal import print_record
    from infralab.runner import TestRun, run_tests
    found = [(nb, ex) for ex in course.exercises for nb in [folder / ex.part / f"{ex.name}.ipynb"] if nb.is_file()]
    if not found:
        print(tr("notebook.none_found", folder=folder), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="infralab-nb-check-") as tmp:
        for nb, ex in found:
            write_module(nb, Path(tmp), ex.module_path)
        record = run_tests(course, TestRun(target=tmp, exercises=tuple(ex for _, ex in found), hidden=hidden))
    print_record(record)
    return 0 if record["points"] == record["max_points"] and record["max_points"] > 0 else 1


def _export(course, args) -> int:
    from infralab.nbgrader.export import export_course
    if args.part:
        unknown = set(args.part) - {p.id for p in course.parts}
        if unknown:
            print(tr("notebook.no_part", parts=", ".join(sorted(unknown)),
                     known=", ".join(p.id for p in course.parts)), file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    written = export_course(course, Path(args.out), parts=args.part, exercises=args.exercise, student=args.student,
                            force=args.force, db_url=args.db)
    for e in written:
        print(tr("notebook.exported", notebook=e.notebook, points=f"{e.points:g}", tests=e.tests))
    print(tr("notebook.exported_total", count=len(written), seconds=f"{time.perf_counter() - t0:.1f}"))
    if not args.student and written:
        parts = sorted({e.assignment for e in written})
        command = printed_command("nbgrader", "generate", *parts, "--course-dir", str(Path(args.out).resolve()))
        print(tr("routes.nbgrader_next", command=command))
    return 0


def _nbgrader_step(args) -> int:
    """``infralab nbgrader generate|autograde``: nbgrader's command, run so that it finds alembic."""
    from infralab.nbgrader.tool import run_nbgrader
    action = {"generate": "generate_assignment", "autograde": "autograde"}[args.nbgrader_command]
    for assignment in args.assignment:
        extra = [a for s in (args.student or []) for a in ("--student", s)] if action == "autograde" else []
        proc = run_nbgrader(Path(args.course_dir), action, assignment, "--force", *extra)
        if proc.returncode != 0:
            print(tr("routes.nbgrader_failed", action=action, status=proc.returncode), file=sys.stderr)
            return proc.returncode
    return 0


def grade_notebooks_command(args: argparse.Namespace) -> int:
    """``infralab grade --notebooks SUBMITTED_DIR [--part P] [--jobs N] [--db URL]``."""
    course = load_course(getattr(args, "course", None))
    args.assignment = getattr(args, "part", None) or None
    args.student = None
    args.in_process = False
    return run_grade(course, Path(args.notebooks), args)


def run_grade(course, submitted: Path, args) -> int:
    from infralab.nbgrader.grade import grade_submissions
    results = grade_submissions(course, submitted, db_url=args.db, assignments=args.assignment,
                                students=args.student, isolated=None if not args.in_process else False,
                                jobs=args.jobs)
    for r in results:
        print(f"{r.student:20s} {r.assignment:24s} {r.notebook:20s} {r.points:7.2f} / {r.max_points:g}  {r.status}")
    return 0
