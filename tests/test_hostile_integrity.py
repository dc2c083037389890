"""Hostile samples against the verdict's integrity (issue 11: writeback, guards within the student's
reach, silenced or forged flags, dummy kernels, torch.compile), each graded through the isolated
judge on the one exercise it attacks, next to its control: it must score at or below the control
and carry the flag kinds that name the trick."""
from __future__ import annotations

import pytest

from infralab.course import load_course
from infralab.grade import GradeOptions, grade
from infralab.judge.cage import namespaces_unavailable
from infralab.judge.intake import discover
from infralab.judge.minicourse import kit_root

pytestmark = pytest.mark.skipif(namespaces_unavailable() is not None,
                                reason=f"grading hostile code needs the cage: {namespaces_unavailable()}")

SAMPLES = kit_root() / "fixtures" / "submissions"
# exercise -> {sample: (its control, flag kinds it must carry)}
CASES = {
    "part01_transformer.attention": {
        "writeback_zeroing": ("stub", {"input-modified"}),
        "wrapper_replacement": ("stub", {"guard-disabled", "suspicious-source"}),
        "disable_torch_function": ("stub", {"banned-call", "suspicious-source"}),
    },
    "part03_kernels.softmax": {
        "triton_noop_launch": ("stub", {"not-kernel-output", "banned-call"}),
        "torch_compile_triton": ("stub", {"suspicious-source"}),
    },
    "part01_transformer.rmsnorm": {
        "flag_flooding": ("complete", {"tampering", "harness-import", "read-hidden", "flag-forged"}),
    },
}


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("exercise", sorted(CASES))
def test_hostile_samples_score_at_most_their_control_and_are_flagged(exercise, tmp_path):
    cases = CASES[exercise]
    names = set(cases) | {control for control, _ in cases.values()}
    subs = [s for s in discover([SAMPLES]) if s.student in names]
    records = {r["student"]: r for r in grade(load_course(kit_root()), subs, tmp_path,
                                              GradeOptions(exercises=(exercise,), seed=0, call_timeout_s=20.0,
                                                           budget_s=120.0), jobs=2)}
    problems = []
    for sample, (control, kinds) in sorted(cases.items()):
        record = records[sample]
        if record["points"] > records[control]["points"]:
            problems.append(f"{sample}: {record['points']} points > {control}'s {records[control]['points']}")
        flagged = {f["kind"] for f in record["flags"]}
        if not kinds <= flagged:
            problems.append(f"{sample}: missing flags {sorted(kinds - flagged)}; got {record['flags'][:8]}")
        if "grading-error" in flagged:
            problems.append(f"{sample}: grading error {record['flags']}")
    forged = [f for r in records.values() for f in r["flags"] if f["kind"] not in _known()]
    assert not forged, f"unknown flag kinds reached the record: {forged}"
    assert not problems, "\n".join(problems)


def _known():
    from infralab.judge.flags import known_kinds
    return known_kinds()
