"""``gradebook.csv``: one row per student, in a layout an LMS imports.

Columns: ``student``, one per exercise headed with its maximum (``part01_transformer.rope (10)``),
``total (N)``, ``graded`` (when that student was last graded, UTC), ``flags`` (flag kinds). No
pseudo-student row: the maxima are in the header. A capstone graded on its own parts and on the
reference parts (course.yml ``uses:``) has a column per run, credited separately:
``part04_serving.engine:own_parts (20)`` and ``part04_serving.engine:reference_parts (20)``. Points are shown rounded to two decimals and
the total is the sum of the shown parts, so a spreadsheet's sum agrees with the file. A cell is
empty where that student's grading did not include the exercise.

Every cell a spreadsheet would evaluate (one starting with ``= + - @``, a tab or a carriage
return: a student named ``=HYPERLINK(...)``, a forged flag kind) is written with a leading
apostrophe: :func:`write_csv` is the one way the kit writes a CSV file.
"""
from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from infralab.course import Course

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
DECIMALS = 2


def safe_cell(value: object) -> str:
    """The cell's text, with a leading apostrophe if a spreadsheet would evaluate it."""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def write_csv(path: Path, rows: Iterable[Iterable[object]]) -> None:
    """A CSV file whose every cell passed :func:`safe_cell`."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        for row in rows:
            w.writerow([safe_cell(c) for c in row])


def shown(points: float) -> float:
    """Points as the gradebook shows them."""
    return round(float(points) + 0.0, DECIMALS)


def _number(value: float) -> str:
    return f"{value:.{DECIMALS}f}".rstrip("0").rstrip(".")


def columns(course: Course, exercise_ids: list[str]) -> list[tuple[str, str | None, float]]:
    """(exercise, run or None, maximum) per column: a capstone with a reference-parts run has two."""
    out: list[tuple[str, str | None, float]] = []
    for e in exercise_ids:
        ex = course.exercise(e)
        if ex.reference_parts_points > 0:
            out += [(e, "own", ex.own_parts_points), (e, "reference", ex.reference_parts_points)]
        else:
            out.append((e, None, ex.points))
    return out


def header(course: Course, exercise_ids: list[str]) -> list[str]:
    cols = columns(course, exercise_ids)
    total = sum(shown(m) for _, _, m in cols)
    return ["student", *(f"{e}{f':{run}_parts' if run else ''} ({_number(shown(m))})" for e, run, m in cols),
            f"total ({_number(total)})", "graded", "flags"]


def _cell(ex: dict[str, Any], run: str | None) -> float:
    """An exercise's points, or one run's (its score line; a run that left no line scores 0)."""
    if run is None or not ex.get("lines"):
        return shown(ex["points"]) if run in (None, "own") else 0.0
    return shown(next((line["points"] for line in ex["lines"] if line["parts"] == run), 0.0))


def row(record: dict[str, Any], course: Course, exercise_ids: list[str]) -> list[str]:
    by_id = {ex["id"]: ex for ex in record["exercises"]}
    points = [(_cell(by_id[e], run) if e in by_id else None) for e, run, _ in columns(course, exercise_ids)]
    cells = [_number(p) if p is not None else "" for p in points]
    total = sum(p for p in points if p is not None)
    kinds = sorted({str(fl.get("kind", "?")) for fl in record.get("flags", [])})
    graded = str(record.get("started", "")).replace("+00:00", "Z")
    return [record["student"], *cells, _number(round(total, DECIMALS)), graded, " ".join(kinds)]


def write_gradebook(records: list[dict[str, Any]], course: Course, exercise_ids: list[str], path: Path) -> None:
    write_csv(path, [header(course, exercise_ids), *(row(r, course, exercise_ids) for r in records)])
