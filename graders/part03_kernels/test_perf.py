"""Performance challenges of part03 (course.yml `perf:`), run on a GPU with a registered profile.

Each case runs the correctness gate (poisoned outputs, fresh random inputs, fp32 reference),
then times the kernel interleaved with its baseline (infralab.perf) and asks for the pass bar
of the detected hardware profile. Skipped, with the reason, on a CPU or an unregistered GPU.
The measurement goes into the run's result record (``--record``), in the course's evidence terms.
In the isolated judge with ``--gpu`` (``infralab grade --gpu``) the module lives in the cage and the
challenge runs on the judge's clock (infralab.perf.caged); otherwise in this process.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from infralab.course import find_course_root, load_course
from infralab.perf import checked  # noqa: F401 - snapshots the timer's functions before any student code loads
from infralab.perf.spec import case_id
from infralab.testing import expect

PART = "part03_kernels"
COURSE = load_course(find_course_root(Path(__file__).parent))
CASES = [pytest.param(ex.id, c, shape, id=case_id(ex.name, c, shape))
         for ex in COURSE.exercises if ex.part == PART for c in ex.perf for shape in c["shapes"]]


@pytest.fixture(scope="module")
def gpu_profile():
    """The registered profile of this machine's GPU, or a skip that says why there is none."""
    from infralab.perf.profiles import current_device, detect, load_profiles
    profile, reason = detect(load_profiles(COURSE.root / COURSE.profiles_dir), current_device())
    if profile is None or not profile.runs_perf:
        pytest.skip(reason)
    return profile


@pytest.fixture(scope="module")
def cuda_timer(gpu_profile):
    from infralab.perf.harness import CudaTimer
    return CudaTimer()


@pytest.mark.gpu
@pytest.mark.parametrize("exercise, challenge, shape", CASES)
def test_kernel_is_correct_and_reaches_the_pass_bar(impl, perf_record, gpu_profile, request,
                                                    exercise, challenge, shape):
    from infralab.perf.caged import is_caged, measure_in_cage
    from infralab.perf.checked import checked_candidate
    from infralab.perf.run import run_challenge
    if challenge["profiles"] and gpu_profile.name not in challenge["profiles"]:
        pytest.skip(f"challenge {challenge['id']} is declared for {challenge['profiles']}, not {gpu_profile.name}")
    target = request.config.getoption("infralab_target")
    module, triton = impl(exercise), COURSE.exercise(exercise).triton
    if is_caged(module):  # grade --gpu: the judge's seeds, its own output checks, its own clock
        entry = measure_in_cage(module, challenge, shape, gpu_profile, exercise=exercise, target=target, triton=triton,
                                time_cap_s=request.config.getoption("infralab_perf_time_cap"))
    else:  # one loaded module: the gate calls it with every guard of grading, the timed calls are checked calls
        entry = run_challenge(checked_candidate(module, triton=triton), challenge, shape, gpu_profile,
                              timer=request.getfixturevalue("cuda_timer"), target=target, exercise=exercise,
                              seed=request.getfixturevalue("seed"))
    perf_record(entry)
    expect(entry["correct"], "part03.perf_gate", reason=entry["reason"])
    expect(entry["decision"] == "accept", "part03.perf_decision", level=entry["level"], decision=entry["decision"],
           reason=entry["reason"])
