"""Intake and the grading outputs: nothing scores 0 without saying why, nothing is lost.

Cheap: no submission here reaches pytest (unreadable and empty submissions are not graded, and
the rest only go through staging), so the whole file runs in a few seconds.
"""
from __future__ import annotations

import csv
import json
import os
import zipfile
from pathlib import Path

import pytest
from rich.console import Console

from infralab.course import load_course
from infralab.errors import InfralabError
from infralab.grade import GradeOptions, grade, results_folder
from infralab.judge.intake import Submission, discover, stage
from infralab.judge.minicourse import EXERCISE, kit_root
from infralab.outputs.gradebook import safe_cell, write_gradebook
from infralab.outputs.html import feedback_html
from infralab.outputs.terminal import class_report

COURSE = load_course(kit_root())
RMSNORM = (kit_root() / "solutions/part01_transformer/rmsnorm.py").read_text()


def staged(tmp_path: Path, files: dict[str, str], name: str = "student") -> Submission:
    """A folder submission made of ``files`` (path -> text), staged against the real course."""
    for rel, text in files.items():
        (tmp_path / name / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name / rel).write_text(text)
    return stage(Submission(name, tmp_path / name), tmp_path / "staging", COURSE)


def kinds(sub: Submission) -> set[str]:
    return {f["kind"] for f in sub.flags}


def test_a_module_under_a_wrong_name_says_what_was_found_and_expected(tmp_path):
    sub = staged(tmp_path, {"exercises/part01_transformer/rms_norm.py": RMSNORM})
    assert sub.taken == []
    assert kinds(sub) == {"misnamed-module"}
    assert sub.flags[0]["detail"] == ("rms_norm.py is not an exercise module of part01_transformer; "
                                      "did you mean rmsnorm.py?")
    wrong_part = staged(tmp_path, {"part01_transfomer/rmsnorm.py": RMSNORM}, "typo")
    assert "did you mean part01_transformer?" in wrong_part.flags[0]["detail"]


def test_flat_files_are_taken_when_their_name_is_unambiguous_else_the_folder_is_asked_for(tmp_path):
    sub = staged(tmp_path, {"rope.py": "x = 1\n", "rmsnorm.py": RMSNORM})
    assert sub.taken == ["part01_transformer/rope.py"]
    assert (sub.staged / "exercises/part01_transformer/rope.py").read_text() == "x = 1\n"
    assert any("rope.py" in n and "part01_transformer/rope.py" in n for n in sub.notes)
    assert kinds(sub) == {"ambiguous-module"}
    detail = sub.flags[0]["detail"]
    assert "part01_transformer" in detail and "part03_kernels" in detail and "folder" in detail


def test_the_files_the_released_tree_ships_are_no_flags(tmp_path):
    released = {rel: "" for rel in ("exercises/__init__.py", "exercises/part01_transformer/__init__.py",
                                    "exercises/part01_transformer/tests/test_rope.py")}
    sub = staged(tmp_path, {**released, "exercises/part01_transformer/rope.py": "x = 1\n"})
    assert sub.taken == ["part01_transformer/rope.py"] and sub.flags == []
    tricks = staged(tmp_path, {"exercises/conftest.py": "", "exercises/part01_transformer/x.pth": ""}, "tricks")
    assert kinds(tricks) == {"ignored-file"} and len(tricks.flags) == 2


def test_a_corrupt_zip_is_not_graded_and_says_so_everywhere(tmp_path):
    (tmp_path / "klass").mkdir()
    (tmp_path / "klass/broken.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    with zipfile.ZipFile(tmp_path / "klass/good.zip", "w") as zf:
        zf.writestr("good/exercises/part01_transformer/rmsnorm.py", RMSNORM)
    subs = discover([tmp_path / "klass"])
    [broken] = [s for s in subs if s.student == "broken"]
    out = tmp_path / "out"
    records = grade(COURSE, [broken], out, GradeOptions(exercises=(EXERCISE,)))
    record = records[0]
    assert [f["kind"] for f in record["flags"]] == ["unreadable-submission"]
    assert "BadZipFile" in record["flags"][0]["detail"] and "nothing was graded" in record["flags"][0]["detail"]
    assert record["points"] == 0 and record["exercises"][0]["status"] == "error"
    assert "broken.zip could not be read" in record["exercises"][0]["first_failure"]
    assert json.loads((out / "broken/record.json").read_text())["flags"] == record["flags"]
    rows = list(csv.reader((out / "gradebook.csv").open(encoding="utf-8")))
    assert rows[1][0] == "broken" and rows[1][-1] == "unreadable-submission"
    assert "broken.zip could not be read" in (out / "broken/feedback.html").read_text()
    console = Console(record=True, width=80)
    class_report(console, records, [EXERCISE])
    assert "broken: unreadable-submission: broken.zip could not be read" in console.export_text()
    [good] = [s for s in subs if s.student == "good"]
    assert stage(good, tmp_path / "staging", COURSE).taken == ["part01_transformer/rmsnorm.py"]


def test_an_empty_class_folder_is_refused_and_results_folders_are_never_submissions(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InfralabError, match="empty folder"):
        discover([tmp_path / "empty"])
    klass = tmp_path / "klass"
    (klass / "alice/exercises/part01_transformer").mkdir(parents=True)
    (klass / "alice/exercises/part01_transformer/rmsnorm.py").write_text(RMSNORM)
    (klass / "grades").mkdir()  # this run's --out, inside the class folder
    (klass / "old-grades").mkdir()  # an earlier run's results
    (klass / "old-grades/gradebook.csv").write_text("student\n")
    skipped: list[str] = []
    assert [s.student for s in discover([klass], exclude=klass / "grades", skipped=skipped)] == ["alice"]
    assert len(skipped) == 2 and all("results folder" in s for s in skipped)


def test_a_student_folder_with_nothing_in_it_is_not_graded_and_says_so(tmp_path):
    (tmp_path / "klass/bob").mkdir(parents=True)
    (tmp_path / "klass/carol").mkdir()
    (tmp_path / "klass/carol/notes.txt").write_text("hi")
    [bob, _] = discover([tmp_path / "klass"])
    record = grade(COURSE, [bob], tmp_path / "out", GradeOptions(exercises=(EXERCISE,)))[0]
    assert [f["kind"] for f in record["flags"]] == ["empty-submission"] and record["points"] == 0


def test_grading_again_into_the_same_out_merges_and_an_out_file_is_refused(tmp_path):
    out = tmp_path / "out"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a.zip").write_bytes(b"not a zip")
    options = GradeOptions(exercises=(EXERCISE,))
    grade(COURSE, [Submission("a", tmp_path / "a.zip")], out, options)
    (out / "a/stale.txt").write_text("from the first grading")
    grade(COURSE, [Submission("b", tmp_path / "b")], out, options)
    grade(COURSE, [Submission("a", tmp_path / "a")], out, options)  # a again: now an empty folder
    rows = list(csv.reader((out / "gradebook.csv").open(encoding="utf-8")))
    assert [r[0] for r in rows[1:]] == ["a", "b"]
    assert rows[1][-1] == "empty-submission" and rows[2][-1] == "empty-submission"
    assert rows[0][-2] == "graded" and all(r[-2].endswith("Z") for r in rows[1:])
    assert not (out / "a/stale.txt").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(InfralabError, match="--out .*file"):
        results_folder(tmp_path / "file")


def _record(student: str, points: dict[str, float], flags: tuple[str, ...] = ()) -> dict:
    return {"student": student, "started": "2026-12-03T10:00:00+00:00",
            "exercises": [{"id": e, "points": p} for e, p in points.items()],
            "flags": [{"kind": k} for k in flags]}


def test_the_gradebook_has_maxima_in_its_header_a_total_of_the_shown_parts_and_no_formulas(tmp_path):
    ids = ["part01_transformer.rope", "part01_transformer.rmsnorm", "part01_transformer.attention"]
    records = [_record("alice", {ids[0]: 3.335, ids[1]: 1.335, ids[2]: 2.3333}),
               _record("=HYPERLINK(\"http://x\")", {ids[0]: 1.0}, ("+forged", "@x", "-y", "\tz"))]
    write_gradebook(records, COURSE, ids, tmp_path / "g.csv")
    rows = list(csv.reader((tmp_path / "g.csv").open(encoding="utf-8")))
    maxima = {ex.id: ex.points for ex in COURSE.exercises}
    assert rows[0] == ["student", *(f"{e} ({maxima[e]:g})" for e in ids),
                       f"total ({sum(maxima[e] for e in ids):g})", "graded", "flags"]
    assert not any(r[0].startswith("(") for r in rows), "no pseudo-student row"
    alice = rows[1]
    assert float(alice[4]) == pytest.approx(sum(float(c) for c in alice[1:4]), abs=1e-9)
    assert rows[2][0].startswith("'=") and rows[2][2:4] == ["", ""]
    assert all(not cell.startswith(("=", "+", "-", "@", "\t", "\r")) for r in rows for cell in r)
    assert safe_cell("-1") == "'-1" and safe_cell("3.5") == "3.5"


@pytest.mark.parametrize("n_exercises", [1, 3, 30])
def test_the_class_table_stays_readable_when_piped_at_80_columns(n_exercises):
    ids = [ex.id for ex in COURSE.exercises][:n_exercises]
    records = []
    for name in ("a-student-with-a-long-name", "bob"):
        r = _record(name, {e: 1.25 for e in ids}, ("misnamed-module", "ignored-file"))
        r["points"] = 1.25 * len(ids)
        r["exercises"] = [{**ex, "max_points": 5.0, "status": "partial"} for ex in r["exercises"]]
        r["flags"][0]["detail"] = "rms_norm.py is not an exercise module of part01_transformer; did you mean rmsnorm.py?"
        records.append(r)
    console = Console(record=True, width=80, file=open(os.devnull, "w"))  # noqa: SIM115 - a sink
    class_report(console, records, ids)
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "…" not in text and "..." not in text
    assert "misnamed-module" in text and "ignored-file" in text, text  # flag kinds whole, in or below the table
    assert text.replace("\n", " ").count("did you mean rmsnorm.py?") == 2, text
    assert "".join(text.split()).count(_points_text(records[-1]["points"])) >= 2, text


def _points_text(value: float) -> str:
    return f"{round(value, 2):g}"


def test_feedback_shows_what_intake_found_and_the_notes():
    record = {"student": "s", "target": "s", "course": "c", "mode": "grade", "points": 0, "max_points": 5,
              "exercises": [], "environment": {}, "protections": {},
              "flags": [{"kind": "misnamed-module", "detail": "rms_norm.py is not ...", "source": "intake"}],
              "notes": ["rope.py (no folder) was taken as part01_transformer/rope.py"]}
    page = feedback_html(record)
    assert page.index("rms_norm.py is not") < page.index("<table>")
    assert "was taken as part01_transformer/rope.py" in page
