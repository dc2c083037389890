"""The ``infralab`` command. Each sub-command lives in its own module with
``add_arguments(parser)`` and ``run(args) -> int``; they are imported only when used."""
from __future__ import annotations

import importlib
import sys

from infralab.errors import InfralabError
from infralab.i18n import LANGS, set_language, tr
from infralab.options import OneLineParser

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("infralab.check", "run the tests of your exercises and show your progress"),
    "validate": ("infralab.validate", "prove every exercise's tests sound (solution passes, stub and mutants fail)"),
    "grade": ("infralab.grade", "grade submissions (folders, zips, a class) with the hidden tests, in isolation"),
    "release": ("infralab.release", "write the student version of the course (no solutions, no hidden tests)"),
    "bench": ("infralab.perf.bench", "run an exercise's GPU performance challenge against your card's profile"),
    "leaderboard": ("infralab.leaderboard", "rank the GPU performance figures of result records, per hardware profile"),
    "profile": ("infralab.perf.profile_cmd", "hardware profiles: show, detect this GPU, calibrate a new card"),
    "gradescope": ("infralab.gradescope", "build the Gradescope autograder zip (setup.sh, run_autograder, hidden tests)"),
    "nbgrader": ("infralab.nbgrader.cli", "export the course as nbgrader notebooks; grade submitted notebooks securely"),
}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="infralab", description="infralab: LLM-infrastructure course kit")
    parser.add_argument("--lang", choices=LANGS, default=None,
                        help="language of every message: zh or en (default: INFRALAB_LANG, course.yml "
                             "language:, the locale); exported to the pytest runs and the judge")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    argv = sys.argv[1:] if argv is None else argv
    early = OneLineParser(prog="infralab", add_help=False)  # --lang first: option errors speak it too
    early.add_argument("--lang", choices=LANGS, default=None)
    lang = early.parse_known_args(argv)[0].lang
    if lang:
        set_language(lang)  # sets INFRALAB_LANG: child pytest runs and the judge inherit it
    chosen = next((a for a in argv if not a.startswith("-") and a not in LANGS), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(p)
    args = parser.parse_args(argv)
    try:
        return int(importlib.import_module(COMMANDS[args.command][0]).run(args) or 0)
    except InfralabError as e:
        print(tr("core.cli_error", command=args.command, error=e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
