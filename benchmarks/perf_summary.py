"""One line per performance entry of grade records or bench records: what a run decided and why.

    python3 benchmarks/perf_summary.py FOLDER_OR_JSON [...]

FOLDER: every ``record.json`` below it (``infralab grade --out``); JSON: a record, or a list of records
(``h200_grade_gpu.sh bench``). Prints student, exercise, challenge, decision, achieved, ratio to the
baseline, and for caged entries the judge's batch time, the cage's own timer and the round trip.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def records(paths: list[str]) -> list[dict]:
    out: list[dict] = []
    for p in map(Path, paths):
        files = sorted(p.rglob("record.json")) if p.is_dir() else [p]
        for f in files:
            data = json.loads(f.read_text(encoding="utf-8"))
            out += data if isinstance(data, list) else [data]
    return out


def line(rec: dict, e: dict) -> str:
    m = e.get("metrics") or {}
    clock = m.get("judge_clock") or {}
    calls = (e.get("workload") or {}).get("calls_per_sample")
    caged = f" judge {clock.get('batch_ms')} ms cage {clock.get('cage_timer_ms')} ms trip {clock.get('round_trip_ms')} ms" \
        if clock else ""
    student = rec.get("student") or (e.get("candidate") or {}).get("target") or "-"
    return (f"{student[:28]:28} {e.get('exercise', '')[:34]:34} {str(e.get('challenge'))[:12]:12} {e.get('decision', ''):7}"
            f" {m.get('achieved')} {m.get('unit', '')} x{m.get('ratio_to_baseline')} calls {calls}{caged}"
            f" | {(e.get('reason') or '')[:160]}")


def main(argv: list[str]) -> int:
    for rec in records(argv):
        for e in rec.get("perf", []):
            print(line(rec, e))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
