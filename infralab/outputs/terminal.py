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


def progress(console: Console, title: str, total: int):
    """A context giving ``step(label, line)``, called once per finished item (a submission, an exercise).

    On a terminal: a rich progress bar (``label`` beside it). Piped: ``line`` and the count, one
    plain line per item, as it finishes.
    """
    from contextlib import contextmanager

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    @contextmanager
    def steps():
        if console.is_terminal:
            with Progress(TextColumn(title), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          TextColumn("{task.description}"), console=console) as bar:
                task = bar.add_task("", total=total)
                yield lambda label, line: bar.update(task, advance=1, description=label)
            return
        done = [0]

        def step(label: str, line: str) -> None:
            done[0] += 1
            console.print(f"{line} ({done[0]}/{total})", markup=False, highlight=False, soft_wrap=True)
        yield step

    return steps()


# Flags whose detail the class report prints below the table: they explain a zero by themselves.
EXPLAINING = {"misnamed-module", "ambiguous-module", "unreadable-submission", "empty-submission", "grading-error"}


def _by_part(exercise_ids: list[str]) -> list[tuple[str, list[str]]]:
    parts: dict[str, list[str]] = {}
    for e in exercise_ids:
        parts.setdefault(e.split(".", 1)[0], []).append(e)
    return [(part.split("_", 1)[0], ids) for part, ids in parts.items()]


def _cells(record: dict[str, Any], groups: list[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    """(text, style) of each point column: the points won in the group's exercises."""
    points = {ex["id"]: ex for ex in record["exercises"]}
    cells = []
    for _, ids in groups:
        found = [points[e] for e in ids if e in points]
        if not found:
            cells.append(("-", "dim"))
            continue
        statuses = {ex["status"] for ex in found}
        style = _STYLE.get(next(iter(statuses)), "red") if len(statuses) == 1 else "yellow"
        cells.append((_points(sum(ex["points"] for ex in found)), style))
    return cells


def _header(label: str, ids: list[str], maxima: dict[str, float]) -> str:
    return f"{label} ({_points(sum(maxima.get(e, 0) for e in ids))})"


def _kinds(record: dict[str, Any]) -> list[str]:
    return sorted({str(f["kind"]) for f in record["flags"]})


def _layout(records: list[dict[str, Any]], exercise_ids: list[str], maxima: dict[str, float],
            width: int) -> tuple[list[tuple[str, list[str]]], bool]:
    """The point columns (one per exercise, else one per part) and whether the flags column is in
    the table, for the first layout whose narrowest rendering fits in ``width`` (3 characters of
    border and padding per column; a student's name may fold to 12)."""
    name = min(12, max([7, *(len(str(r["student"])) for r in records)]))
    total = max([5, *(len(_points(r["points"])) for r in records)])
    flags = max([5, *(len(k) for r in records for k in _kinds(r))])

    def needed(groups: list[tuple[str, list[str]]], with_flags: bool) -> int:
        cells = [_cells(r, groups) for r in records]
        cols = [max(len(_header(label, ids, maxima)), *(len(row[k][0]) for row in cells))
                for k, (label, ids) in enumerate(groups)]
        return 1 + sum(w + 3 for w in [name, *cols, total, *([flags] if with_flags else [])])

    per_exercise = [(e.split(".", 1)[-1], [e]) for e in exercise_ids]
    candidates = [(per_exercise, True), (per_exercise, False), (_by_part(exercise_ids), True),
                  (_by_part(exercise_ids), False)]
    for groups, with_flags in candidates:
        if needed(groups, with_flags) <= width:
            return groups, with_flags
    return candidates[-1]


def class_table(records: list[dict[str, Any]], exercise_ids: list[str], width: int = 200,
                maxima: dict[str, float] | None = None) -> tuple[Table, bool]:
    """The instructor's view of a graded class: a row per student, points per exercise (or per part
    when the exercises do not fit in ``width``; the maximum in each header), the total, and the flag
    kinds when they fit too. Returns the table and whether the flags are in it. Nothing is cut to
    an ellipsis: names fold."""
    maxima = maxima or {ex["id"]: ex["max_points"] for r in records for ex in r["exercises"]}
    groups, with_flags = _layout(records, exercise_ids, maxima, width)
    from infralab.i18n import tr
    table = Table(title=tr("intake.grades"))
    table.add_column("student", overflow="fold", min_width=7)
    rows = [_cells(r, groups) for r in records]
    for k, (label, ids) in enumerate(groups):
        table.add_column(_header(label, ids, maxima), justify="right",
                         overflow="fold", min_width=max([len(label), *(len(row[k][0]) for row in rows)]))
    table.add_column("total", justify="right", no_wrap=True)
    if with_flags:
        table.add_column("flags", overflow="fold", min_width=max([5, *(len(k) for r in records for k in _kinds(r))]))
    for r, row in zip(records, rows):
        cells = [f"[{style}]{text}[/]" for text, style in row]
        table.add_row(_plain(r["student"]), *cells, _points(r["points"]),
                      *([_plain(", ".join(_kinds(r)))] if with_flags else []))
    return table, with_flags


def _plain(text: str) -> str:
    """Text shown as is (a student's folder name is not rich markup)."""
    from rich.markup import escape
    return escape(str(text))


def class_report(console: Console, records: list[dict[str, Any]], exercise_ids: list[str]) -> None:
    """The class table at the console's width, then, below it, the details of the flags that
    explain a zero (a misnamed module, an unreadable zip), one per line, wrapped, never cut."""
    from infralab.i18n import tr
    table, with_flags = class_table(records, exercise_ids, width=console.width)
    console.print(table)
    if len(table.columns) - 2 - with_flags != len(exercise_ids):
        console.print(tr("intake.parts_shown"), markup=False, highlight=False)
    lines = [] if with_flags else [f"{r['student']}: {', '.join(_kinds(r))}" for r in records if r["flags"]]
    lines += [f"{r['student']}: {f['kind']}: {f.get('detail', '')}"
              for r in records for f in r["flags"] if f.get("kind") in EXPLAINING]
    if lines:
        console.print(tr("intake.details") + ":", markup=False, highlight=False)
        for line in lines:
            console.print("  " + line.splitlines()[0][:500], markup=False, highlight=False)
