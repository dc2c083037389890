"""The student's view of a result record: one row per exercise, with the first failure."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

_STYLE = {"passed": "green", "partial": "yellow", "failed": "red", "not implemented": "dim", "not run": "dim"}


def exercise_table(record: dict[str, Any], title: str | None = None) -> Table:
    table = Table(title=title or f"{record['course']} · target: {record['target']}", show_lines=False)
    table.add_column("exercise", no_wrap=True)
    table.add_column("passed", justify="right", no_wrap=True)
    table.add_column("points", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("first failure", overflow="fold", ratio=1)
    for ex in record["exercises"]:
        style = _STYLE.get(ex["status"], "")
        table.add_row(ex["id"], f"{ex['passed']}/{ex['total']}", f"{_points(ex['points'])}/{_points(ex['max_points'])}",
                      f"[{style}]{ex['status']}[/]", _first_line(ex["first_failure"], 160))
    table.add_section()
    table.add_row("total", "", f"{_points(record['points'])}/{_points(record['max_points'])}", "", "")
    return table


def _points(value: float) -> str:
    return f"{round(value, 2):g}"


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def print_record(record: dict[str, Any], console: Console | None = None) -> None:
    (console or Console()).print(exercise_table(record))


def class_table(records: list[dict[str, Any]], exercise_ids: list[str]) -> Table:
    """The instructor's view of a graded class: a row per student, points per exercise, flags."""
    table = Table(title="grades")
    table.add_column("student")
    short = {e: e.split(".", 1)[-1] for e in exercise_ids}
    for e in exercise_ids:
        table.add_column(short[e], justify="right")
    table.add_column("total", justify="right")
    table.add_column("flags", overflow="fold", max_width=40)
    for r in records:
        points = {ex["id"]: ex for ex in r["exercises"]}
        cells = []
        for e in exercise_ids:
            ex = points.get(e)
            if ex is None:
                cells.append("-")
                continue
            style = _STYLE.get(ex["status"], "red")
            cells.append(f"[{style}]{ex['points']:g}/{ex['max_points']:g}[/]")
        kinds = sorted({f["kind"] for f in r["flags"]})
        table.add_row(r["student"], *cells, f"{r['points']:g}", ", ".join(kinds))
    return table
