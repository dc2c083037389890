"""Writing one student's outputs: record.json, results.json (Gradescope), junit.xml, feedback.html."""
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
    write_record(record, folder / "record.json")
    (folder / "results.json").write_text(json.dumps(results_json(record), indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    (folder / "junit.xml").write_text(junit_xml(record), encoding="utf-8")
    (folder / "feedback.html").write_text(feedback_html(record), encoding="utf-8")
