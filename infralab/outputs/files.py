"""Writing one student's outputs: record.json, results.json (Gradescope), junit.xml, feedback.html, and
the roofline PNG of a record with GPU measurements (record.roofline.png)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infralab.course import Course
from infralab.outputs.gradescope import results_json
from infralab.outputs.html import feedback_html
from infralab.outputs.junit import junit_xml
from infralab.record import write_record


def write_outputs(record: dict[str, Any], course: Course, folder: Path) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _draw_roofline(record, course, folder / "record.json")
    write_record(record, folder / "record.json")
    (folder / "results.json").write_text(json.dumps(results_json(record), indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    (folder / "junit.xml").write_text(junit_xml(record), encoding="utf-8")
    (folder / "feedback.html").write_text(feedback_html(record, folder), encoding="utf-8")


def _draw_roofline(record: dict[str, Any], course: Course, record_path: Path) -> None:
    """A record with GPU measurements gets its roofline beside it (named by ``record["roofline"]``, shown
    in the feedback page); without matplotlib, or without a GPU figure, the page goes without."""
    from infralab.perf.roofline import RooflineUnavailable, draw_beside, gpu_entries
    if gpu_entries(record.get("perf") or []):
        try:
            draw_beside(record, course, record_path)
        except RooflineUnavailable:
            pass
