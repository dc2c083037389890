"""``infralab gradescope --out autograder.zip``: the course's autograder for Gradescope.

Gradescope's autograder specification (gradescope-autograders.readthedocs.io, "Autograder
Specifications"): a zip with ``setup.sh`` and ``run_autograder`` at its root; the zip's contents
land in ``/autograder/source``; ``run_autograder`` runs with ``/autograder`` as working folder,
finds the student's files in ``/autograder/submission`` and must write
``/autograder/results/results.json``.

The bundle holds what the judge needs and nothing more: the engine (``infralab/``), the stubs
and visible tests (``exercises/``), the hidden tests of the chosen exercises (``graders/``),
the hardware profiles, ``pyproject.toml`` and a course.yml of the chosen exercises marked
``solutions: false``. Never ``solutions/`` (grading a submission does not read them) nor
``fixtures/``, except, for a capstone graded on the reference parts too (course.yml ``uses:``,
docs/grading.md), the reference modules of exactly the parts it uses. ``setup.sh`` makes a virtual environment in ``/autograder/venv`` and installs
the kit with its pinned dependencies, torch from ``--torch`` (default: the CPU build, as the
Makefile's TORCH). ``run_autograder`` grades the submission with the hidden tests in the isolated
judge (:func:`infralab.grade.grade`) and copies its ``results.json``
(:mod:`infralab.outputs.gradescope`): the same record and score as ``infralab grade``.

``INFRALAB_AUTOGRADER_ROOT`` (default ``/autograder``) and ``INFRALAB_PYTHON`` (default
``$ROOT/venv/bin/python``) let a test run the bundle in a temporary folder.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

import yaml

from infralab.course import Course, load_course
from infralab.errors import InfralabError
from infralab.i18n import tr

ROOT_ENV, PYTHON_ENV = "INFRALAB_AUTOGRADER_ROOT", "INFRALAB_PYTHON"
DEFAULT_TORCH = "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
SHIPPED_DIRS = ("infralab", "exercises", "hardware_profiles")
SHIPPED_FILES = ("pyproject.toml", "README.md", "LICENSE")

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (written by infralab gradescope).
set -euo pipefail
ROOT="${{{root_env}:-/autograder}}"
TORCH="${{TORCH:-{torch}}}"   # the torch requirement; TORCH=skip keeps the one already installed
if ! python3 -m venv --help >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q python3 python3-venv python3-pip
fi
test -x "$ROOT/venv/bin/python" || python3 -m venv "$ROOT/venv"
"$ROOT/venv/bin/python" -m pip install -q --upgrade pip
if [ "$TORCH" != "skip" ]; then "$ROOT/venv/bin/python" -m pip install -q $TORCH; fi
"$ROOT/venv/bin/python" -m pip install -q "$ROOT/source"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission (written by infralab gradescope).
ROOT="${{{root_env}:-/autograder}}"
PYTHON="${{{python_env}:-$ROOT/venv/bin/python}}"
cd "$ROOT/source" && exec "$PYTHON" -m infralab.gradescope --run --root "$ROOT"
"""


def _bundle_course_yml(course: Course, exercise_ids: set[str]) -> str:
    data = yaml.safe_load((course.root / "course.yml").read_text(encoding="utf-8"))
    parts = []
    for part in data["parts"]:
        kept = [ex for ex in part["exercises"] if f"{part['id']}.{ex['id']}" in exercise_ids]
        for ex in kept:
            ex.pop("mutants", None)
        if kept:
            parts.append({**part, "exercises": kept})
    data["parts"], data["solutions"] = parts, False
    data.pop("release", None)
    return "# Gradescope autograder bundle: hidden tests, no solutions.\n" + \
        yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def _add_tree(zf: zipfile.ZipFile, root: Path, rel: str) -> None:
    for file in sorted((root / rel).rglob("*")):
        if file.is_file() and "__pycache__" not in file.parts and not file.name.endswith(".pyc"):
            zf.write(file, file.relative_to(root).as_posix())


def _add_script(zf: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFREG | 0o755) << 16
    zf.writestr(info, text)


def build_bundle(course: Course, out: Path, exercise_ids: list[str], torch: str = DEFAULT_TORCH) -> list[str]:
    """Write the autograder zip; returns its member names."""
    out = Path(out)
    if out.exists() and out.is_dir():
        raise InfralabError(tr("routes.bundle_out_is_dir", path=out))
    out.parent.mkdir(parents=True, exist_ok=True)
    chosen = [course.exercise(e) for e in exercise_ids]
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        _add_script(zf, "setup.sh", SETUP_SH.format(root_env=ROOT_ENV, torch=torch))
        _add_script(zf, "run_autograder", RUN_AUTOGRADER.format(root_env=ROOT_ENV, python_env=PYTHON_ENV))
        for name in SHIPPED_FILES:
            if (course.root / name).is_file():
                zf.write(course.root / name, name)
        for rel in SHIPPED_DIRS:
            _add_tree(zf, course.root, rel)
        for ex in chosen:
            zf.write(course.root / ex.hidden_tests, Path(ex.hidden_tests).as_posix())
        for module in sorted({m for ex in chosen if ex.reference_parts_points > 0 for m in ex.uses}):
            rel = Path("solutions", *module.split(".")).with_suffix(".py")  # a capstone's reference-parts run
            zf.write(course.root / rel, rel.as_posix())
        zf.writestr("course.yml", _bundle_course_yml(course, {ex.id for ex in chosen}))
        return zf.namelist()


def _failure_results(message: str) -> dict:
    return {"score": 0.0, "output": message, "visibility": "visible", "stdout_visibility": "hidden", "tests": []}


def run_in_autograder(root: Path) -> int:
    """Grade ``root/submission`` with the bundle's course; write ``root/results/results.json``."""
    from infralab.grade import GradeOptions, grade
    from infralab.judge.intake import discover
    results = Path(root) / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    try:
        course = load_course(Path.cwd())
        submissions = discover([Path(root) / "submission"])
        if len(submissions) != 1:
            raise InfralabError(tr("routes.bundle_no_submission", found=len(submissions)))
        with tempfile.TemporaryDirectory(prefix="infralab-gradescope-") as tmp:
            records = grade(course, submissions, Path(tmp), GradeOptions(), jobs=1)
            shutil.copyfile(Path(tmp) / records[0]["student"] / "results.json", results)
    except Exception as e:  # noqa: BLE001 - fail closed: Gradescope shows this line, the score is 0
        message = str(e) if isinstance(e, InfralabError) else f"{type(e).__name__}: {e}"
        results.write_text(json.dumps(_failure_results(tr("routes.bundle_failed", error=message))), encoding="utf-8")
        print(message, file=sys.stderr)
        return 1
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help=tr("help.gradescope.out"))
    p.add_argument("--part", action="append", default=[], help=tr("help.common.grade_part"))
    p.add_argument("--exercise", action="append", default=[], help=tr("help.common.grade_exercise"))
    p.add_argument("--torch", default=DEFAULT_TORCH,
                   help=tr("help.gradescope.torch", torch=DEFAULT_TORCH))


def run(args: argparse.Namespace) -> int:
    if args.out is None:
        raise InfralabError(tr("routes.bundle_needs_out"))
    course = load_course()
    chosen = course.select(args.part or None, args.exercise or None)
    if not chosen:
        raise InfralabError(tr("routes.bundle_no_exercise"))
    names = build_bundle(course, args.out, [ex.id for ex in chosen], args.torch)
    print(tr("routes.bundle_written", path=args.out, files=len(names), exercises=len(chosen),
             points=f"{sum(ex.points for ex in chosen):g}"))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=tr("help.gradescope.autograder"))
    p.add_argument("--run", action="store_true", required=True)
    p.add_argument("--root", type=Path, default=Path(os.environ.get(ROOT_ENV, "/autograder")))
    return run_in_autograder(p.parse_args(argv).root)


if __name__ == "__main__":
    sys.exit(main())
