"""``infralab check``: the student's progress table (visible tests; ``--hidden`` where graders/ exist)."""
from __future__ import annotations

import argparse
import json
import os
import sys

from infralab.course import load_course
from infralab.i18n import tr, use_course_language
from infralab.options import seed_int
from infralab.outputs.progress import print_progress, wrong_answers
from infralab.plugin import SEED_ENV, session_seed_value
from infralab.runner import TestRun, run_tests
from infralab.targets import parse_target


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default="exercises",
                   help=tr("help.common.target"))
    p.add_argument("--part", action="append", help=tr("help.common.part"))
    p.add_argument("--exercise", action="append", help=tr("help.check.exercise"))
    p.add_argument("--hidden", action="store_true", help=tr("help.common.hidden"))
    p.add_argument("--json", action="store_true", help=tr("help.check.json"))
    p.add_argument("--seed", type=seed_int, default=None, help=tr("help.check.seed"))
    p.add_argument("--course", default=None, help=tr("help.common.course"))


def run(args: argparse.Namespace) -> int:
    course = load_course(args.course)
    use_course_language(course.language)
    exercises = course.select(args.part, args.exercise)
    parse_target(args.target, course.root)  # a bad --target is one line (TargetError), before pytest starts
    hidden = args.hidden
    if hidden and not (course.root / "graders").is_dir():
        print(tr("loop.check_hidden_needs_graders"), file=sys.stderr)
        return 2
    # A fresh base seed drawn here (not --seed, which also makes hypothesis repeatable) so that the
    # view can say which seed repeats the run's inputs.
    seed = args.seed if args.seed is not None else session_seed_value()
    env = {**os.environ, SEED_ENV: str(seed)}
    record = run_tests(course, TestRun(target=args.target, exercises=exercises, hidden=hidden, seed=args.seed), env=env)
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        print_progress(record, hidden=hidden, seed=seed)
    # Unfinished exercises (a stub's NotImplementedError) are progress, not an error: exit 1 only
    # for wrong answers and code that does not run, or when nothing ran.
    return 1 if wrong_answers(record) or not record["max_points"] else 0
