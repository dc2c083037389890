"""The ``infralab`` command. Each sub-command lives in its own module with
``add_arguments(parser)`` and ``run(args) -> int``; they are imported only when used."""
from __future__ import annotations

import importlib
import sys

from infralab.errors import InfralabError
from infralab.i18n import LANGS, set_language, tr
from infralab.options import OneLineParser

# name -> module; each command's one-line help is the catalogue's help.command.<name>
COMMANDS: dict[str, str] = {
    "check": "infralab.check",
    "validate": "infralab.validate",
    "grade": "infralab.grade",
    "release": "infralab.release",
    "bench": "infralab.perf.bench",
    "leaderboard": "infralab.leaderboard",
    "profile": "infralab.perf.profile_cmd",
    "gradescope": "infralab.gradescope",
    "nbgrader": "infralab.nbgrader.cli",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    early = OneLineParser(prog="infralab", add_help=False)  # --lang first: option errors and the help speak it too
    early.add_argument("--lang", choices=LANGS, default=None)
    lang = early.parse_known_args(argv)[0].lang
    if lang:
        set_language(lang)  # sets INFRALAB_LANG: child pytest runs and the judge inherit it
    parser = OneLineParser(prog="infralab", description=tr("help.cli.description"))
    parser.add_argument("--lang", choices=LANGS, default=None, help=tr("help.cli.lang"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((a for a in argv if not a.startswith("-") and a not in LANGS), None)
    for name, module in COMMANDS.items():
        help_text = tr(f"help.command.{name}")
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(p)
    args = parser.parse_args(argv)
    try:
        return int(importlib.import_module(COMMANDS[args.command]).run(args) or 0)
    except InfralabError as e:
        print(tr("core.cli_error", command=args.command, error=e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
