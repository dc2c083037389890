"""The student's progress view (``infralab check``): what ran, a row per exercise, then each
exercise's first failure in full (message, diagnosis and falsifying example on their own lines),
the skipped tests with their reasons, and the seed that repeats the run.

Readable at 80 columns and when piped: the table holds only short cells; long text is printed
below it and wraps (indented), never cut.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from infralab.i18n import tr

_STYLE = {"passed": "green", "partial": "yellow", "failed": "red", "not implemented": "dim", "not run": "dim"}


def _points(value: float) -> str:
    return f"{round(value, 2):g}"


def status_text(status: str) -> str:
    """An exercise's status (record.py's English word) in the run's language."""
    return tr("loop.status_" + status.replace(" ", "_"))


def is_unfinished(test: dict[str, Any]) -> bool:
    """A failure that only says the function is not written yet (a stub's NotImplementedError)."""
    return test["outcome"] == "failed" and test["message"].startswith("NotImplementedError")


def wrong_answers(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The failed tests that are not merely unfinished: wrong answers, errors, import failures."""
    return [t for ex in record["exercises"] for t in ex["tests"] if t["outcome"] == "failed" and not is_unfinished(t)]


def progress_table(record: dict[str, Any]) -> Table:
    table = Table(show_lines=False, box=None, pad_edge=False)
    table.add_column(tr("loop.col_exercise"), no_wrap=True)
    table.add_column(tr("loop.col_passed"), justify="right", no_wrap=True)
    table.add_column(tr("loop.col_points"), justify="right", no_wrap=True)
    table.add_column(tr("loop.col_status"), no_wrap=True)
    for ex in record["exercises"]:
        style = _STYLE.get(ex["status"], "")
        table.add_row(ex["id"], f"{ex['passed']}/{ex['total']}",
                      f"{_points(ex['points'])}/{_points(ex['max_points'])}",
                      Text(status_text(ex["status"]), style=style))
    table.add_row(tr("loop.total"), "", f"{_points(record['points'])}/{_points(record['max_points'])}", "")
    return table


def _block(console: Console, text: str, indent: int = 2, style: str = "") -> None:
    console.print(Padding(Text(text, style=style), (0, 0, 0, indent), expand=False))


def print_progress(record: dict[str, Any], *, hidden: bool = False, seed: int | None = None,
                   console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    console.print(Text(tr("loop.check_title", course=record["course"], target=record["target"]), style="bold"))
    console.print(Text(tr("loop.check_ran_hidden" if hidden else "loop.check_ran_visible")))
    console.print()
    console.print(progress_table(record))
    failures = [(ex, next(t for t in ex["tests"] if t["outcome"] == "failed"))
                for ex in record["exercises"] if ex["failed"]]
    unfinished = [(ex, t) for ex, t in failures if ex["status"] == "not implemented"]
    failures = [(ex, t) for ex, t in failures if ex["status"] != "not implemented"]
    if failures:
        console.print()
        console.print(Text(tr("loop.first_failures"), style="bold"))
        for ex, t in failures:
            console.print(Text(f"✗ {ex['id']} · {t['name']}", style="red"))
            _block(console, t["message"])
            if t.get("diagnosis") and t["diagnosis"] not in t["message"]:
                _block(console, tr("core.looks_like", diagnosis=t["diagnosis"]), style="yellow")
    if unfinished:
        console.print()
        console.print(Text(tr("loop.unfinished", count=len(unfinished)), style="bold"))
        for ex, t in unfinished:
            _block(console, f"{ex['id']}: {re.split('[:：]', t['message'], 1)[-1].strip()}", style="dim")
    skipped = Counter(t["message"].removeprefix("Skipped: ") or "-" for ex in record["exercises"] for t in ex["tests"]
                      if t["outcome"] == "skipped")
    if skipped:
        console.print()
        console.print(Text(tr("loop.skipped", count=sum(skipped.values())), style="bold"))
        for reason, count in skipped.most_common():
            _block(console, f"{count} × {reason}", style="dim")
    if seed is not None and wrong_answers(record):
        console.print()
        console.print(Text(tr("loop.check_seed", seed=seed)))
