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
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import nbformat

from infralab.course import Course, Exercise
from infralab.errors import InfralabError
from infralab.i18n import tr
from infralab.nbgrader.extract import write_module
from infralab.nbgrader.gradebook import (
    autograded_notebook, cell_verdicts, ensure_submission, grade_cells, write_scores,
)
from infralab.runner import TestRun, run_tests
from infralab.uses import with_reference_parts


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
    raise NotebookGradingError(tr("notebook.not_submitted_folder", path=path))


def _timestamp(folder: Path):
    stamp = folder / "timestamp.txt"
    if not stamp.is_file():
        return None
    from nbgrader.utils import parse_utc
    return parse_utc(stamp.read_text(encoding="utf-8").strip())


def grade_submissions(course: Course, submitted: Path, *, db_url: str | None = None,
                      assignments: list[str] | None = None, students: list[str] | None = None,
                      isolated: bool | None = None, jobs: int | None = None) -> list[NotebookResult]:
    """Grade every submitted notebook of the course's exercises; write the gradebook.

    Submissions (one per student and assignment) are judged ``jobs`` at a time (default: one per
    core); the gradebook is written from this thread only.
    """
    from nbgrader.api import Gradebook, MissingEntry
    course_dir, submitted = course_folders(submitted)
    db_url = db_url or f"sqlite:///{course_dir / 'gradebook.db'}"
    isolated = judge_available() if isolated is None else isolated
    tasks = []
    for student_dir in sorted(p for p in submitted.iterdir() if p.is_dir()):
        if students and student_dir.name not in students:
            continue
        for folder in sorted(p for p in student_dir.iterdir() if p.is_dir()):
            if assignments and folder.name not in assignments:
                continue
            notebooks = _exercise_notebooks(course, folder)
            if notebooks:
                tasks.append((student_dir.name, folder, notebooks))
    results: list[NotebookResult] = []
    with Gradebook(db_url) as gb:
        for name in sorted({folder.name for _, folder, _ in tasks}):
            try:
                gb.find_assignment(name)
            except MissingEntry:
                raise NotebookGradingError(tr("notebook.not_in_gradebook", name=name, db=db_url)) from None
        with ThreadPoolExecutor(max_workers=max(1, jobs or os.cpu_count() or 1)) as pool:
            futures = {pool.submit(_judge, course, notebooks, isolated): (student, folder, notebooks)
                       for student, folder, notebooks in tasks}
            for future in as_completed(futures):
                student, folder, notebooks = futures[future]
                results += _write_results(course_dir, gb, student, folder, notebooks, future.result())
    return sorted(results, key=lambda r: (r.student, r.assignment, r.notebook))


def _exercise_notebooks(course: Course, folder: Path) -> dict[Path, Exercise]:
    """The notebooks of an assignment folder that are infralab exercises (others are left alone)."""
    found = {}
    for path in sorted(folder.glob("*.ipynb")):
        try:
            found[path] = course.exercise(f"{folder.name}.{path.stem}")
        except KeyError:
            continue
    return found


def _judge(course: Course, notebooks: dict[Path, Exercise], isolated: bool) -> dict:
    """Extract the answers into a fresh folder and grade it (visible and hidden tests, seed 0). A capstone's
    parts come from the student's notebooks of the exercises it uses, in their other assignments; it is
    graded on those and again on the reference parts (infralab.uses)."""
    with tempfile.TemporaryDirectory(prefix="infralab-nb-grade-") as tmp:
        tree = Path(tmp) / "submission"
        for path, ex in notebooks.items():
            write_module(path, tree, ex.module_path)
        student = next(iter(notebooks)).parent.parent  # submitted/<student>/<assignment>/<exercise>.ipynb
        for ex in notebooks.values():
            for used in map(course.exercise, ex.uses):
                notebook = student / used.part / f"{used.name}.ipynb"
                if notebook.is_file() and not (tree / used.module_path).exists():
                    write_module(notebook, tree, used.module_path)
        run = TestRun(target=str(tree), exercises=tuple(notebooks.values()), hidden=True, isolated=isolated,
                      seed=0, mode="grade")
        return with_reference_parts(course, run, run_tests(course, run), lambda again: run_tests(course, again))


def _write_results(course_dir: Path, gb, student: str, folder: Path, notebooks: dict[Path, Exercise],
                   record: dict) -> list[NotebookResult]:
    assignment = folder.name
    ensure_submission(gb, assignment, student, _timestamp(folder))
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
