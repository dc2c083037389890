"""Hostile samples that aim past one exercise: at the other exercises' points, at the host, at the
in-process route. Graded in one batch on a two-exercise course (rmsnorm, then ffn).

- one exercise's failure (os._exit in a call, an exhausted descriptor table, threads that spin
  holding the GIL) costs the next exercise nothing: each exercise has an executor and a budget;
- what the cage makes does not outlive it (System V shared memory: an IPC namespace), what it
  reads names no host folder (/proc/self/mountinfo: a root of its own), and its process tree
  holds no more memory than the limit, however many processes it forks (a memory cgroup);
- a submission that patches the loaded test modules scores nothing in the cage, and a record made
  in-process with a submission as the target is a check, never a grade.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import sys
from pathlib import Path

import pytest

from infralab.course import load_course
from infralab.grade import GradeOptions, grade
from infralab.i18n import tr
from infralab.judge.cage import namespaces_unavailable
from infralab.judge.cgroup import memory_cgroup_unavailable
from infralab.judge.intake import discover
from infralab.judge.minicourse import EXERCISE, SECOND, kit_root, rmsnorm_course
from infralab.runner import TestRun, run_tests

pytestmark = pytest.mark.skipif(namespaces_unavailable() is not None,
                                reason=f"grading hostile code needs the cage: {namespaces_unavailable()}")

SAMPLES = kit_root() / "fixtures" / "submissions"
HOSTILE = ("os_exit_in_call", "fd_exhaustion", "spinning_threads", "sysv_shm", "mountinfo_leak", "tree_memory",
           "patch_tests_in_process")
# a spinning call times out twice (12 s): with one budget for the whole submission, ffn would get none
OPTIONS = dict(exercises=(EXERCISE, SECOND), seed=0, call_timeout_s=6.0, budget_s=12.5, memory_bytes=2 << 30)
SHM_KEY = 0x1F2E3D4C  # the sysv_shm sample's segment


def _shm_keys() -> set[int]:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[0]) for line in lines if line.strip()}


def _remove_shm(key: int) -> None:
    libc = ctypes.CDLL(None)
    shmid = libc.shmget(key, 0, 0)
    if shmid >= 0:
        libc.shmctl(shmid, 0, None)  # IPC_RMID


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    course = load_course(rmsnorm_course(base / "course", second=True))
    for sample in HOSTILE:
        shutil.copytree(SAMPLES / sample, base / "class" / sample)
    _remove_shm(SHM_KEY)
    records = grade(course, discover([base / "class"]), base / "out", GradeOptions(**OPTIONS), jobs=2)
    leftover = SHM_KEY in _shm_keys()
    _remove_shm(SHM_KEY)
    yield {r["student"]: r for r in records}, base, course, leftover


def _points(record: dict) -> dict[str, float]:
    return {ex["id"]: ex["points"] for ex in record["exercises"]}


def _kinds(record: dict) -> set[str]:
    return {f["kind"] for f in record["flags"]}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("sample, flag", [("os_exit_in_call", "executor-died"), ("fd_exhaustion", None),
                                          ("spinning_threads", "timeout")])
def test_one_exercises_failure_costs_the_next_exercise_nothing(graded, sample, flag):
    record = graded[0][sample]
    points = _points(record)
    assert points[SECOND] == 5.0, f"{sample}: ffn is correct, got {points} ({record['flags']})"
    assert points[EXERCISE] <= 5.0
    assert flag is None or flag in _kinds(record), record["flags"]
    assert record["protections"]["executors"] == tr("cage.executors_per_exercise")


@pytest.mark.timeout(900)
def test_system_v_shared_memory_does_not_outlive_the_cage(graded):
    records, _, _, leftover = graded
    assert _points(records["sysv_shm"])[EXERCISE] == 5.0  # correct answers: the segment is its only trick
    assert not leftover, "a System V segment made in the cage outlived grading (no IPC namespace)"
    assert records["sysv_shm"]["protections"]["ipc_namespace"] == tr("cage.ipc_namespace")


@pytest.mark.timeout(900)
def test_mount_points_name_no_host_folder(graded):
    records, base, _, _ = graded
    record = records["mountinfo_leak"]
    assert record["points"] == 0.0
    messages = " ".join(t["message"] for ex in record["exercises"] for t in ex["tests"])
    python = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    allowed = {"/", "/usr", "/etc", "/opt", "/dev", "/dev/shm", "/sys", "/proc", *python}
    seen = {word for word in messages.split() if word.startswith("/")}
    assert seen and seen <= allowed, f"host folders in the messages: {sorted(seen - allowed)}"
    for page in ("feedback.html", "results.json", "record.json"):
        text = (base / "out" / "mountinfo_leak" / page).read_text()
        assert str(base) not in text and "/tmp " not in text, page


@pytest.mark.timeout(900)
def test_a_process_tree_holds_no_more_than_the_memory_limit(graded):
    record = graded[0]["tree_memory"]
    protection = record["protections"]["memory_tree"]
    if memory_cgroup_unavailable() is not None:  # the record must say the protection is missing, and why
        assert protection == tr("cage.memory_tree_missing", reason=memory_cgroup_unavailable())
        pytest.skip(f"this machine offers no memory cgroup: {memory_cgroup_unavailable()}")
    assert protection == tr("cage.memory_tree", limit=2 << 30)
    rms = [t for ex in record["exercises"] for t in ex["tests"] if "rms_norm" in t["name"]]
    assert rms and not any(t["outcome"] == "passed" for t in rms), \
        "children under the per-process limit held 1.5x the limit together"
    assert _kinds(record) & {"process", "timeout"}, record["flags"]  # fork is flagged (unless the call timed out)


@pytest.mark.timeout(900)
def test_patching_the_test_modules_scores_nothing_in_the_cage_and_in_process_is_no_grade(graded):
    records, base, course, _ = graded
    caged = records["patch_tests_in_process"]
    assert caged["points"] == 0.0 and "harness-import" in _kinds(caged)
    run = TestRun(target=str(base / "class" / "patch_tests_in_process"), exercises=(course.exercise(EXERCISE),),
                  visible=False, hidden=True, seed=0, mode="grade")
    in_process = run_tests(course, run)
    assert in_process["mode"] == "check" and in_process["trusted"] is False, \
        "a record made in-process with a submission as the target must never be a grade"
    assert in_process["protections"]["note"] == tr("cage.in_process_note")
