"""``gradebook.csv``: one row per student, in a layout an LMS imports.

Columns: ``student``, one per exercise headed with its maximum (``part01_transformer.rope (10)``),
``total (N)``, ``graded`` (when that student was last graded, UTC), ``flags`` (flag kinds). No
pseudo-student row: the maxima are in the header. Points are shown rounded to two decimals and
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


def header(course: Course, exercise_ids: list[str]) -> list[str]:
    maximum = {ex.id: ex.points for ex in course.exercises}
    total = sum(shown(maximum[e]) for e in exercise_ids)
    return ["student", *(f"{e} ({_number(shown(maximum[e]))})" for e in exercise_ids),
            f"total ({_number(total)})", "graded", "flags"]


def row(record: dict[str, Any], exercise_ids: list[str]) -> list[str]:
    points = {ex["id"]: shown(ex["points"]) for ex in record["exercises"]}
    cells = [_number(points[e]) if e in points else "" for e in exercise_ids]
    total = sum(points[e] for e in exercise_ids if e in points)
    kinds = sorted({str(fl.get("kind", "?")) for fl in record.get("flags", [])})
    graded = str(record.get("started", "")).replace("+00:00", "Z")
    return [record["student"], *cells, _number(round(total, DECIMALS)), graded, " ".join(kinds)]


def write_gradebook(records: list[dict[str, Any]], course: Course, exercise_ids: list[str], path: Path) -> None:
    write_csv(path, [header(course, exercise_ids), *(row(r, exercise_ids) for r in records)])
