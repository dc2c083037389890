"""The performance-challenge test shared by every part whose exercises declare ``perf:`` challenges.

``graders/<part>/test_perf.py`` holds one parametrized test per part, its cases from
:func:`challenge_cases`, its body :func:`run_case` (the node ids are what ``infralab grade --gpu``
selects: :func:`infralab.perf.caged.perf_cases`). Each case runs the correctness gate (poisoned
outputs, fresh random inputs, fp32 reference), then times the kernel interleaved with its baseline
and asks for the pass bar of the detected hardware profile; skipped, with the reason, on a CPU or
an unregistered GPU. The measurement goes into the run's result record (``--record``) in the
course's evidence terms. In the isolated judge with ``--gpu`` the module lives in the cage and the
challenge runs on the judge's clock (infralab.perf.caged); otherwise in this process, with one loaded
module serving the gate and the checked timed calls.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infralab.course import Course, find_course_root, load_course
from infralab.i18n import tr
from infralab.perf import checked  # noqa: F401 - snapshots the timer's functions before any student code loads
from infralab.perf.spec import case_id
from infralab.testing import expect


def challenge_cases(test_dir: Path) -> tuple[Course, list[Any]]:
    """The course and one pytest case per (exercise, challenge, shape) of the part ``test_dir`` tests."""
    course = load_course(find_course_root(test_dir))
    part = Path(test_dir).name
    cases = [pytest.param(ex.id, c, shape, id=case_id(ex.name, c, shape))
             for ex in course.exercises if ex.part == part for c in ex.perf for shape in c["shapes"]]
    return course, cases


@pytest.fixture(scope="module")
def gpu_profile(request):
    """The registered profile of this machine's GPU, or a skip that says why there is none."""
    from infralab.perf.profiles import current_device, detect, load_profiles
    course = load_course(find_course_root(Path(str(request.path)).parent))
    profile, reason = detect(load_profiles(course.root / course.profiles_dir), current_device())
    if profile is None or not profile.runs_perf:
        pytest.skip(reason)
    return profile


@pytest.fixture(scope="module")
def cuda_timer(gpu_profile):
    from infralab.perf.harness import CudaTimer
    return CudaTimer()


def run_case(course: Course, impl: Any, perf_record: Any, gpu_profile: Any, request: Any,
             exercise: str, challenge: dict[str, Any], shape: dict[str, int]) -> None:
    """One challenge shape: measure (caged or in-process), record, and hold it to the pass bar."""
    from infralab.perf.caged import is_caged, measure_in_cage
    from infralab.perf.run import run_challenge
    if challenge["profiles"] and gpu_profile.name not in challenge["profiles"]:
        pytest.skip(tr("perf.challenge_other_profiles", id=challenge["id"], profiles=challenge["profiles"],
                       profile=gpu_profile.name))
    target = request.config.getoption("infralab_target")
    module, triton = impl(exercise), course.exercise(exercise).triton
    if is_caged(module):  # grade --gpu: the judge's seeds, its own output checks, its own clock
        entry = measure_in_cage(module, challenge, shape, gpu_profile, exercise=exercise, target=target, triton=triton,
                                time_cap_s=request.config.getoption("infralab_perf_time_cap"),
                                one_block_gate=request.config.getoption("infralab_perf_one_block_gate"))
    else:  # one loaded module: the gate calls it with every guard of grading, the timed calls are checked calls
        entry = run_challenge(checked.checked_candidate(module, triton=triton), challenge, shape, gpu_profile,
                              timer=request.getfixturevalue("cuda_timer"), target=target, exercise=exercise,
                              seed=request.getfixturevalue("seed"))
    perf_record(entry)
    expect(entry["correct"], "part03.perf_gate", reason=entry["reason"])
    expect(entry["decision"] == "accept", "part03.perf_decision", level=entry["level"], decision=entry["decision"],
           reason=entry["reason"], measured=measured(entry))


def measured(entry: dict[str, Any]) -> str:
    """The entry's figure and its ratio to the baseline, as a failure message shows them."""
    m = entry.get("metrics") or {}
    if m.get("achieved") is None:
        return "-"
    return f"{m['achieved']:,} {m.get('unit', '')}, {m.get('ratio_to_baseline')}x {entry.get('workload', {}).get('baseline', '')}"
