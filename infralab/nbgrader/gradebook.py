"""Scores from a result record into nbgrader's gradebook, and the autograded notebook for feedback.

Each autograded cell of an exported notebook runs one hidden test function; its ``grade_id`` is
``<exercise>_<v|h>_<test name>`` (see :func:`grade_id`). A cell's score is what the record's one
score (:func:`infralab.record.score_tests`) gives that test's results (its parametrize cases), so
a notebook's total equals the exercise's points in ``infralab grade``; a skipped test (a GPU test
on a CPU machine) counts neither way, as there; a test without a result scores 0 (fail closed). The gradebook's own grade cells are the authority on which cells
exist: nothing in the submitted notebook's metadata is trusted.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_output

from infralab.record import function_name, score_tests, total_points
from infralab.uses import run_label


def grade_id(exercise_name: str, visibility: str, test_name: str) -> str:
    """The nbgrader grade cell id of a test: ``rmsnorm_h_test_rms_norm_eps_is_inside_the_square_root``."""
    return f"{exercise_name}_{'h' if visibility == 'hidden' else 'v'}_{function_name(test_name)}"


@dataclass
class CellVerdict:
    grade_id: str
    score: float
    max_score: float
    passed: bool
    message: str


def cell_verdicts(exercise_record: dict[str, Any], exercise_name: str,
                  cells: dict[str, float]) -> dict[str, CellVerdict]:
    """``cells``: grade_id -> max points (from the gradebook). Returns a verdict per cell."""
    tests = exercise_record.get("tests", [])
    scores = score_tests(exercise_record.get("max_points", 0.0), tests, exercise_record.get("reference_parts_points", 0.0))
    by_cell: dict[str, list[tuple[dict[str, Any], float]]] = {}
    for t, (_, won) in zip(tests, scores):
        by_cell.setdefault(grade_id(exercise_name, t["visibility"], t["name"]), []).append((t, won))
    verdicts = {}
    for gid, max_score in cells.items():
        results = by_cell.get(gid, [])
        if not results:
            verdicts[gid] = CellVerdict(gid, 0.0, max_score, False, "no result for this test (it did not run)")
            continue
        counted = [(t, won) for t, won in results if t["outcome"] != "skipped"]
        if not counted:
            verdicts[gid] = CellVerdict(gid, 0.0, max_score, True, "skipped: " + results[0][0].get("message", ""))
            continue
        failures = [f"{run_label(t)}{t['name']}: {t['message']}" for t, _ in counted if t["outcome"] != "passed"]
        verdicts[gid] = CellVerdict(gid, total_points([won for _, won in counted]), max_score, not failures,
                                    "\n".join(failures))
    return verdicts


def write_scores(gb, assignment: str, student: str, notebook: str, verdicts: dict[str, CellVerdict]) -> float:
    """Set the auto scores of one submitted notebook's grade cells; returns the notebook's total."""
    for gid, v in verdicts.items():
        grade = gb.find_grade(gid, notebook, assignment, student)
        grade.auto_score = v.score
    gb.db.commit()
    return total_points([v.score for v in verdicts.values()])


def ensure_submission(gb, assignment: str, student: str, timestamp: _dt.datetime | None):
    """The gradebook's submission of ``student`` (created with its notebooks and grades if new)."""
    from nbgrader.api import MissingEntry
    gb.update_or_create_student(student)
    try:
        submission = gb.find_submission(assignment, student)
    except MissingEntry:
        return gb.add_submission(assignment, student, timestamp=timestamp)
    if timestamp is not None:
        submission.timestamp = timestamp
        gb.db.commit()
    return submission


def grade_cells(gb, assignment: str, notebook: str) -> dict[str, float]:
    """grade_id -> max points of the notebook's autograded test cells, as nbgrader recorded them."""
    nb = gb.find_notebook(notebook, assignment)
    return {c.name: float(c.max_score) for c in nb.grade_cells if c.cell_type == "code"}


def autograded_notebook(submitted: Path, gb, assignment: str, notebook: str,
                        verdicts: dict[str, CellVerdict]) -> nbformat.NotebookNode:
    """The submitted notebook as ``nbgrader autograde`` would leave it, without executing it.

    Locked cells get their source back from the gradebook (hidden tests included; the exported
    nbgrader_config clears them from feedback); each test cell gets one output: its verdict.
    """
    nb = nbformat.read(submitted, as_version=4)
    sources = {c.name: c for c in gb.find_notebook(notebook, assignment).source_cells}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        gid = meta.get("grade_id")
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if gid in sources and sources[gid].locked:
            cell.source = sources[gid].source
        if gid in verdicts and cell.cell_type == "code":
            v = verdicts[gid]
            if v.passed:
                cell.outputs = [new_output("stream", name="stdout", text=f"PASSED ({v.score:g} / {v.max_score:g})\n"
                                           + (v.message + "\n" if v.message else ""))]
            else:
                cell.outputs = [new_output("error", ename="TestFailed", evalue=v.message.splitlines()[0][:300],
                                           traceback=["FAILED " + line for line in v.message.splitlines()[:40]])]
    return nb
