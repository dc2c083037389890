"""Performance challenges of this part's exercises (course.yml `perf:`), on a GPU with a registered
hardware profile: the shared test of infralab.perf.challenge_tests (gate, timing, pass bar; caged and
on the judge's clock under ``infralab grade --gpu``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from infralab.perf.challenge_tests import challenge_cases, cuda_timer, gpu_profile, run_case  # noqa: F401 - fixtures

COURSE, CASES = challenge_cases(Path(__file__).parent)


@pytest.mark.gpu
@pytest.mark.parametrize("exercise, challenge, shape", CASES)
def test_kernel_is_correct_and_reaches_the_pass_bar(impl, perf_record, gpu_profile, request,
                                                    exercise, challenge, shape):
    run_case(COURSE, impl, perf_record, gpu_profile, request, exercise, challenge, shape)
