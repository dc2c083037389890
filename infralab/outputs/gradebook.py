"""``gradebook.csv``: one row per student, one column per exercise (points), the total."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from infralab.course import Course


def write_gradebook(records: list[dict[str, Any]], course: Course, exercise_ids: list[str], path: Path) -> None:
    maximum = {ex.id: ex.points for ex in course.exercises}
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", *exercise_ids, "total", "max", "flags"])
        w.writerow(["(max)", *(f"{maximum[e]:g}" for e in exercise_ids), f"{sum(maximum[e] for e in exercise_ids):g}", "", ""])
        for r in records:
            points = {ex["id"]: ex["points"] for ex in r["exercises"]}
            row = [f"{points.get(e, 0.0):g}" for e in exercise_ids]
            total = sum(points.get(e, 0.0) for e in exercise_ids)
            kinds = sorted({fl["kind"] for fl in r["flags"]})
            w.writerow([r["student"], *row, f"{total:g}", f"{sum(maximum[e] for e in exercise_ids):g}", " ".join(kinds)])
