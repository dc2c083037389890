"""Gradescope's autograder ``results.json`` for one student, rendered from the record.

Format: https://gradescope-autograders.readthedocs.io/en/latest/specs/ (score, execution_time,
tests[] with name, number, score, max_score, status, output, visibility; extra_data).
"""
from __future__ import annotations

from typing import Any

from infralab.i18n import tr
from infralab.record import score_tests
from infralab.uses import run_label

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


def test_points(ex: dict[str, Any]) -> list[tuple[dict, float, float]]:
    """(test, points won, points possible) for each test of an exercise: the record's one score
    (:func:`infralab.record.score_tests`), so the max scores sum exactly to the exercise's points."""
    scores = score_tests(ex["max_points"], ex["tests"], ex.get("reference_parts_points", 0.0))
    return [(t, won, possible) for t, (possible, won) in zip(ex["tests"], scores)]


def test_label(ex: dict[str, Any], t: dict[str, Any]) -> str:
    """``<exercise>: <test>``; a capstone's test names its run: ``<exercise>: [reference parts] <test>``."""
    return f"{ex['id']}: {run_label(t)}{t['name']}"


def results_json(record: dict[str, Any], hidden_visibility: str = "after_published") -> dict[str, Any]:
    tests = []
    for ex in record["exercises"]:
        for i, (t, won, possible) in enumerate(test_points(ex), start=1):
            output = t["message"] or ("passed" if t["outcome"] == "passed" else "")
            if t.get("diagnosis") and t["diagnosis"] not in output:
                output += "\n" + tr("core.looks_like", diagnosis=t["diagnosis"])
            tests.append({
                "name": test_label(ex, t),
                "number": f"{ex['part'][4:6].lstrip('0') or '0'}.{ex['name']}.{i}",
                "score": won,
                "max_score": possible,
                "status": "passed" if t["outcome"] == "passed" else "failed",
                "output": output[:5000],
                "visibility": "visible" if t["visibility"] == "visible" else hidden_visibility,
            })
        for line in ex.get("lines", []):  # a capstone's run that lost its tests: its points, 0 won
            if not line["total"] and line["max_points"]:
                tests.append({"name": f"{ex['id']}: [{tr('uses.parts_' + line['parts'])}] grading", "score": 0.0,
                              "max_score": line["max_points"], "status": "failed", "visibility": "visible",
                              "output": tr("uses.reference_run_failed", error="-")})
        if not ex["tests"] and ex["status"] == "error":
            tests.append({"name": f"{ex['id']}: grading", "score": 0.0, "max_score": ex["max_points"],
                          "status": "failed", "output": ex["first_failure"], "visibility": "visible"})
    from infralab.leaderboard import gradescope_leaderboard
    out = {
        "score": record["points"],
        "execution_time": int(round(record.get("duration_s", 0.0))),
        "output": f"{record['points']:g} / {record['max_points']:g} points",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"environment": record["environment"], "seed_mode": record["mode"],
                       "flags": record["flags"], "protections": record["protections"]},
    }
    leaderboard = gradescope_leaderboard(record)
    if leaderboard:  # GPU challenges only: a CPU record has no figure to rank
        out["leaderboard"] = leaderboard
    return out
