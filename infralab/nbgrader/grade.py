"""The secure path: nbgrader's submitted notebooks graded by the judge, scores in the gradebook.

``nbgrader autograde`` executes each student notebook in a kernel with the hidden tests in it:
the student's code and the tests share a process. Here the notebooks are never executed:

1. each ``submitted/<student>/<part>/<exercise>.ipynb`` gives up its answer cells, written as
   ``<part>/<exercise>.py`` in a fresh folder per student (:mod:`infralab.nbgrader.extract`);
2. that folder is graded like any submission, through :func:`infralab.runner.run_tests` with the
   hidden tests, the isolated judge when it is installed, seed 0, mode ``grade``;
3. the record's verdicts become the auto scores of the notebook's grade cells in nbgrader's
   gradebook, and ``autograded/<student>/<part>/<exercise>.ipynb`` is written with the verdicts
   as outputs, so formgrader, ``nbgrader generate_feedback`` and exports work as after autograde.
"""
from __future__ import annotations

import importlib.util
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from infralab.course import Course
from infralab.errors import InfralabError
from infralab.nbgrader.extract import write_module
from infralab.nbgrader.gradebook import (
    autograded_notebook, cell_verdicts, ensure_submission, grade_cells, write_scores,
)
from infralab.runner import TestRun, run_tests


class NotebookGradingError(InfralabError):
    """The submitted folder or the gradebook is not what nbgrader leaves behind."""


@dataclass
class NotebookResult:
    student: str
    assignment: str
    notebook: str
    points: float
    max_points: float
    status: str


def judge_available() -> bool:
    """Whether the isolated judge (infralab.judge.isolated) is installed."""
    try:
        return importlib.util.find_spec("infralab.judge.isolated") is not None
    except ImportError:
        return False


def course_folders(path: Path) -> tuple[Path, Path]:
    """(nbgrader course directory, its submitted/ folder) from either of them."""
    path = Path(path).resolve()
    if (path / "submitted").is_dir():
        return path, path / "submitted"
    if path.name == "submitted" and path.is_dir():
        return path.parent, path
    raise NotebookGradingError(f"{path}: expected nbgrader's submitted/ folder or the course directory holding it")


def _timestamp(folder: Path):
    stamp = folder / "timestamp.txt"
    if not stamp.is_file():
        return None
    from nbgrader.utils import parse_utc
    return parse_utc(stamp.read_text(encoding="utf-8").strip())


def grade_submissions(course: Course, submitted: Path, *, db_url: str | None = None,
                      assignments: list[str] | None = None, students: list[str] | None = None,
                      isolated: bool | None = None) -> list[NotebookResult]:
    """Grade every submitted notebook of the course's exercises; write the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry
    course_dir, submitted = course_folders(submitted)
    db_url = db_url or f"sqlite:///{course_dir / 'gradebook.db'}"
    isolated = judge_available() if isolated is None else isolated
    results: list[NotebookResult] = []
    with Gradebook(db_url) as gb:
        for student_dir in sorted(p for p in submitted.iterdir() if p.is_dir()):
            if students and student_dir.name not in students:
                continue
            for assignment_dir in sorted(p for p in student_dir.iterdir() if p.is_dir()):
                if assignments and assignment_dir.name not in assignments:
                    continue
                try:
                    gb.find_assignment(assignment_dir.name)
                except MissingEntry:
                    raise NotebookGradingError(
                        f"assignment {assignment_dir.name!r} is not in the gradebook {db_url}: "
                        f"run `nbgrader generate_assignment {assignment_dir.name}` first") from None
                results += _grade_assignment(course, course_dir, gb, student_dir.name, assignment_dir, isolated)
    return results


def _grade_assignment(course: Course, course_dir: Path, gb, student: str, folder: Path,
                      isolated: bool) -> list[NotebookResult]:
    assignment = folder.name
    ensure_submission(gb, assignment, student, _timestamp(folder))
    notebooks = {}
    for path in sorted(folder.glob("*.ipynb")):
        try:
            notebooks[path] = course.exercise(f"{assignment}.{path.stem}")
        except KeyError:
            continue  # a notebook of the assignment that is not an infralab exercise
    if not notebooks:
        return []
    with tempfile.TemporaryDirectory(prefix="infralab-nb-grade-") as tmp:
        tree = Path(tmp) / "submission"
        for path, ex in notebooks.items():
            write_module(path, tree, ex.module_path)
        record = run_tests(course, TestRun(target=str(tree), exercises=tuple(notebooks.values()),
                                           hidden=True, isolated=isolated, seed=0, mode="grade"))
    by_id = {e["id"]: e for e in record["exercises"]}
    out_dir = course_dir / "autograded" / student / assignment
    out_dir.mkdir(parents=True, exist_ok=True)
    if (folder / "timestamp.txt").is_file():
        shutil.copy2(folder / "timestamp.txt", out_dir / "timestamp.txt")
    results = []
    for path, ex in notebooks.items():
        cells = grade_cells(gb, assignment, path.stem)
        verdicts = cell_verdicts(by_id.get(ex.id, {}), ex.name, cells)
        total = write_scores(gb, assignment, student, path.stem, verdicts)
        nbformat.write(autograded_notebook(path, gb, assignment, path.stem, verdicts), out_dir / path.name)
        status = by_id.get(ex.id, {}).get("status", "not run")
        results.append(NotebookResult(student, assignment, path.stem, total, sum(cells.values()), status))
    return results
