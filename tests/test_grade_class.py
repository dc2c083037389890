"""Grading a class: every sample submission in fixtures/submissions, hostile ones included.

One batch grades the whole sample class (a one-exercise copy of the course, so other
exercises' changes do not move these results). Each hostile sample must score 0 for what it
faked, be flagged where detectable, leave everything outside its tree unchanged, and not move
any other student's result; the batch must go on. A second grading of a few of them, on a local
Ray instance, must give identical records (durations aside): repeatable, and the same on Ray.
"""
from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from infralab.course import load_course
from infralab.grade import GradeOptions, RayStartFailed, grade, stable
from infralab.judge.cage import namespaces_unavailable
from infralab.judge.intake import discover
from infralab.judge.minicourse import EXERCISE, kit_root, rmsnorm_course
from tests.test_hostile_integrity import CASES as INTEGRITY_CASES
from tests.test_judge_hostile_samples import HOSTILE

pytestmark = pytest.mark.skipif(namespaces_unavailable() is not None,
                                reason=f"grading hostile code needs the cage: {namespaces_unavailable()}")

SAMPLES = kit_root() / "fixtures" / "submissions"
OPTIONS = dict(exercises=(EXERCISE,), seed=1234, call_timeout_s=5.0, budget_s=40.0, memory_bytes=2 << 30)

# sample -> (expected points of 5, flag kinds that must be present, words the first failure must hold)
EXPECTED = {
    "complete": (5.0, set(), ""),
    "partial": (2.9167, set(), "unbiased variance"),
    "stub": (0.0, set(), "NotImplementedError"),
    "no_import": (0.0, set(), "SyntaxError"),
    "hangs": (1.6666, {"timeout"}, "did not return within"),
    "memory_eater": (0.0, set(), "MemoryError"),
    "exit_at_import": (0.0, set(), "SystemExit"),
    "os_exit_at_import": (0.0, {"executor-died"}, "does not import"),
    "patch_torch": (0.0, {"tampering"}, ""),
    "patch_pytest": (0.0, {"harness-import"}, "Skipped"),
    "read_hidden": (0.0, {"read-hidden"}, ""),
    "import_solutions": (0.0, set(), "No module named 'solutions'"),
    "write_output": (0.0, {"write-outside"}, ""),
    "fork_bomb": (0.0, {"timeout"}, "does not import"),
    "big_output": (5.0, {"output"}, ""),
    "socket": (0.0, {"network"}, ""),
    "kill_parent": (0.0, {"signal"}, ""),
    "forged_eq": (0.0, {"forged-object"}, "expected a torch.Tensor"),
    "tensor_subclass": (0.0, {"tensor-subclass"}, ""),
    "conftest_trick": (0.0, {"ignored-file"}, ""),
    "symlink_to_solution": (0.0, {"ignored-file"}, "NotImplementedError"),
    # intake: a zero always says why; flat uploads are taken
    "misnamed_module": (0.0, {"misnamed-module"}, "NotImplementedError"),
    "flat_upload": (5.0, set(), ""),
    "corrupt_zip": (0.0, {"unreadable-submission"}, ""),
}
NOT_GRADED = {"corrupt_zip"}  # intake could not read it: no test ran, the record says why
# Graded where their target is (one batch each, not again here): samples aimed past one exercise, at the
# host or at the in-process route (tests/test_judge_hostile_samples.py), and issue 11's samples aimed at
# the verdict of attention, softmax and rmsnorm (tests/test_hostile_integrity.py).
ELSEWHERE = set(HOSTILE) | {sample for cases in INTEGRITY_CASES.values() for sample in cases}


def _tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink()
            else "link:" + str(p.readlink()) if p.is_symlink() else "dir"
            for p in sorted(root.rglob("*")) if ".hypothesis" not in p.parts}  # the judge's own cache


def _grade_sample_class(base: Path):
    course_root = rmsnorm_course(base / "course")
    klass = base / "class"
    klass.mkdir()
    for sample in SAMPLES.iterdir():
        if sample.name.removesuffix(".zip") in EXPECTED:
            (shutil.copytree(sample, klass / sample.name, symlinks=True) if sample.is_dir()
             else shutil.copy(sample, klass / sample.name))
    for link in klass.rglob("*"):  # the symlink sample points at the course's reference
        if link.is_symlink():
            link.unlink()
            link.symlink_to(course_root / "solutions/part01_transformer/rmsnorm.py")
    watched = {"course": course_root, "class": klass, "kit solutions": kit_root() / "solutions",
               "kit graders": kit_root() / "graders"}
    before = {k: _tree_digest(v) for k, v in watched.items()}
    course = load_course(course_root)
    out = base / "out"
    records = grade(course, discover([klass]), out, GradeOptions(**OPTIONS), jobs=2)
    after = {k: _tree_digest(v) for k, v in watched.items()}
    return {r["student"]: r for r in records}, out, before, after, course, klass


def _check_sample(sample: str, record: dict) -> list[str]:
    points, kinds, words = EXPECTED[sample]
    problems = []
    if record["points"] != pytest.approx(points):
        problems.append(f"{sample}: {record['points']} points, expected {points} "
                        f"({record['exercises'][0]['first_failure'][:300] if record['exercises'] else ''})")
    flagged = {f["kind"] for f in record["flags"]}
    if not kinds <= flagged:
        problems.append(f"{sample}: expected flags {sorted(kinds)}, got {record['flags']}")
    if sample in ("complete", "partial", "stub", "flat_upload") and record["flags"]:
        problems.append(f"{sample}: a clean submission was flagged: {record['flags']}")
    messages = " ".join(t["message"] for ex in record["exercises"] for t in ex["tests"])
    if words and words not in messages:
        problems.append(f"{sample}: {words!r} not in the messages: {messages[:300]}")
    if any(t["outcome"] == "skipped" for ex in record["exercises"] for t in ex["tests"]):
        problems.append(f"{sample}: a student's code made a test skip")
    if "grading-error" in flagged:
        problems.append(f"{sample}: grading error {record['flags']}")
    if sample in NOT_GRADED:
        return problems + ([] if record["exercises"][0]["status"] == "error" else [f"{sample}: {record['exercises']}"])
    if not record["protections"].get("isolated") or not record["protections"]["network"].startswith("none"):
        problems.append(f"{sample}: protections {record['protections']}")
    return problems


def _check_outputs(student: str, record: dict, folder: Path, secret_lines: list[str]) -> list[str]:
    problems = []
    gs = json.loads((folder / "results.json").read_text())
    if gs["score"] != pytest.approx(record["points"]) or sum(t["score"] for t in gs["tests"]) != pytest.approx(record["points"]):
        problems.append(f"{student}: Gradescope score {gs['score']} != {record['points']}")
    if sum(t["max_score"] for t in gs["tests"]) != pytest.approx(5.0):
        problems.append(f"{student}: Gradescope max_score adds up to {sum(t['max_score'] for t in gs['tests'])}")
    if not {"name", "number", "score", "max_score", "status", "output", "visibility"} <= set(gs["tests"][0]):
        problems.append(f"{student}: Gradescope test keys {sorted(gs['tests'][0])}")
    if not gs["extra_data"]["environment"].get("torch"):
        problems.append(f"{student}: no environment in Gradescope extra_data")
    suites = ET.parse(folder / "junit.xml").getroot()
    if int(suites.get("tests")) != sum(ex["total"] + ex["skipped"] for ex in record["exercises"]):
        problems.append(f"{student}: JUnit test count {suites.get('tests')}")
    page = (folder / "feedback.html").read_text()
    if student not in page or f"{record['points']:g} / 5" not in page:
        problems.append(f"{student}: feedback page lacks the name or the points")
    leaked = [ln for ln in secret_lines if ln in page]
    if leaked:
        problems.append(f"{student}: hidden test source in the feedback page: {leaked[:2]}")
    return problems


def test_every_sample_submission_is_graded_by_one_batch():
    samples = {p.name.removesuffix(".zip") for p in SAMPLES.iterdir() if p.is_dir() or p.suffix == ".zip"}
    assert samples == set(EXPECTED) | ELSEWHERE, f"not graded anywhere: {sorted(samples - set(EXPECTED) - ELSEWHERE)}"
    assert not set(EXPECTED) & ELSEWHERE, f"graded twice: {sorted(set(EXPECTED) & ELSEWHERE)}"


@pytest.mark.timeout(2400)  # about 3 minutes on an idle 2-core machine; far more when it is shared
def test_the_sample_class_is_graded_safely(tmp_path):
    """One batch (so `make test -n 2` grades it once): every check, then one regrade on Ray."""
    records, out, before, after, course, klass = _grade_sample_class(tmp_path)
    assert set(records) == set(EXPECTED), "the batch must go on past every hostile sample"
    problems = [p for sample in sorted(EXPECTED) for p in _check_sample(sample, records[sample])]

    # nothing outside a submission's tree changed; the results folder holds only what we wrote
    problems += [f"{k} changed during grading" for k in before if before[k] != after[k]]
    if list(out.rglob("PWNED*")):
        problems.append("a submission wrote into the results folder")
    rows = list(csv.reader((out / "gradebook.csv").open()))
    book = {row[0]: row for row in rows[1:]}
    if rows[0] != ["student", f"{EXERCISE} (5)", "total (5)", "graded", "flags"] or set(book) != set(EXPECTED) \
            or book["complete"][1] != "5" or book["write_output"][1] != "0":
        problems.append(f"gradebook: {rows[:3]}")

    hidden_source = (kit_root() / "graders/part01_transformer/test_rmsnorm.py").read_text()
    secret_lines = [ln.strip() for ln in hidden_source.splitlines() if len(ln.strip()) > 30]
    for student, record in records.items():
        if student not in NOT_GRADED:
            problems += _check_outputs(student, record, out / student, secret_lines)

    assert not problems, "\n".join(problems)

    # graded again (Ray when installed, else the local pool), with other neighbours: identical
    ray = importlib.util.find_spec("ray") is not None
    subs = [s for s in discover([klass]) if s.student in ("complete", "partial", "tensor_subclass")]
    try:
        again = grade(course, subs, tmp_path / "again", GradeOptions(**OPTIONS), jobs=2,
                      backend="ray" if ray else "local")
    except RayStartFailed as e:
        pytest.skip(f"a local Ray instance did not start (machine overloaded?): {e}")
    for r in again:
        assert stable(r) == stable(records[r["student"]]), \
            f"{r['student']}: regraded{' on Ray' if ray else ''}, the record differs"
