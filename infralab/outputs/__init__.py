"""Renderings of the result record: terminal tables, and the grading outputs."""
from __future__ import annotations

from typing import Any


def write_outputs(record: dict[str, Any], course: Any, folder: Any) -> None:
    """One student's record.json, results.json (Gradescope), junit.xml and feedback.html."""
    from infralab.outputs.files import write_outputs as _write
    _write(record, course, folder)


def write_gradebook(records: list[dict[str, Any]], course: Any, exercise_ids: list[str], path: Any) -> None:
    """The class's gradebook.csv."""
    from infralab.outputs.gradebook import write_gradebook as _write
    _write(records, course, exercise_ids, path)
