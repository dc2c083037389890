"""Judging one measurement: thresholds, flags and the course's decision (accept / tune / reject).

Pure functions over numbers; no timing, no GPU. PERF.md, "Student thresholds":
- a threshold is a fraction of a profile ceiling (``of: copy_gbps``) or of the same-run
  baseline's speed (``of: baseline``), never raw milliseconds;
- absolute (ceiling) thresholds apply only to working sets >= 4x L2; smaller shapes get the
  relative check "not slower than the baseline";
- a result above 1.05x a datasheet peak, or more than 10x faster than the reference, is a flag;
- figures judged against a provisional (datasheet) profile say so.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from infralab.i18n import tr
from infralab.perf.profiles import Profile

SMALL_SET_FACTOR = 4  # absolute thresholds only on working sets >= 4x L2
SMALL_SET_RATIO = 0.9  # ... there: not slower than the baseline, within run-to-run noise
PEAK_FLAG = 1.05
REFERENCE_FLAG = 10.0
_PEAK_FOR_DTYPE = {"bfloat16": "bf16_tflops", "float16": "fp16_tflops", "float32": "tf32_tflops"}


@dataclass
class Verdict:
    level: str  # challenge | pass | below pass | incorrect
    decision: str  # accept | tune | reject
    reason: str
    pass_at: dict[str, Any]
    challenge_at: dict[str, Any] | None
    fraction_of_ceiling: float | None
    flags: list[str] = field(default_factory=list)


def peak_for(profile: Profile, unit: str, dtype: str) -> float | None:
    key = "bandwidth_gbps" if unit == "GB/s" else _PEAK_FOR_DTYPE.get(dtype, "bf16_tflops")
    return profile.peaks.get(key, profile.peaks.get("bf16_tflops"))


def _bar(threshold: dict[str, Any], profile: Profile, unit: str) -> dict[str, Any]:
    if threshold["of"] == "baseline":
        return {"kind": "ratio", "value": threshold["fraction"],
                "text": tr("perf.bar.ratio", fraction=threshold["fraction"])}
    value = threshold["fraction"] * profile.ceiling(threshold["of"])
    return {"kind": "absolute", "value": value,
            "text": tr("perf.bar.absolute", value=value, unit=unit, fraction=threshold["fraction"],
                       ceiling=threshold["of"])}


def _met(bar: dict[str, Any], achieved: float, ratio: float) -> bool:
    return (ratio if bar["kind"] == "ratio" else achieved) >= bar["value"]


def judge(*, challenge: dict[str, Any], profile: Profile, achieved: float, unit: str, ratio: float,
          working_set_bytes: float, l2_bytes: int, correct: bool, wall_mismatch: bool = False,
          correctness_message: str = "") -> Verdict:
    """The verdict for a candidate reaching ``achieved`` (GB/s or TFLOP/s), ``ratio`` x the baseline."""
    if not correct:
        return Verdict("incorrect", "reject", tr("perf.verdict.incorrect", message=correctness_message).strip(),
                       {}, None, None)
    flags = []
    peak = peak_for(profile, unit, challenge["dtype"])
    if peak and achieved > PEAK_FLAG * peak:
        flags.append(tr("perf.flag.above_peak", achieved=achieved, unit=unit, factor=PEAK_FLAG, peak=peak))
    if ratio > REFERENCE_FLAG:
        flags.append(tr("perf.flag.above_reference", ratio=ratio, factor=REFERENCE_FLAG))
    if wall_mismatch:
        flags.append(tr("perf.flag.wall_mismatch"))
    small = working_set_bytes < SMALL_SET_FACTOR * l2_bytes
    uses_ceiling = any(challenge[k]["of"] != "baseline" for k in ("pass", "challenge"))
    if small and uses_ceiling:
        pass_bar = {"kind": "ratio", "value": SMALL_SET_RATIO,
                    "text": tr("perf.bar.small_set", ratio=SMALL_SET_RATIO, factor=SMALL_SET_FACTOR)}
        challenge_bar = None
    else:
        pass_bar = _bar(challenge["pass"], profile, unit)
        challenge_bar = _bar(challenge["challenge"], profile, unit)
    ceiling_key = next((challenge[k]["of"] for k in ("challenge", "pass") if challenge[k]["of"] != "baseline"), None)
    fraction = achieved / profile.ceiling(ceiling_key) if ceiling_key else None
    if flags:
        return Verdict("flagged", "reject", tr("perf.verdict.flagged", flags="; ".join(flags)),
                       pass_bar, challenge_bar, fraction, flags)
    provisional = "" if profile.calibrated else tr("perf.verdict.provisional")
    if challenge_bar and _met(challenge_bar, achieved, ratio):
        return Verdict("challenge", "accept",
                       tr("perf.verdict.challenge", bar=challenge_bar["text"], provisional=provisional),
                       pass_bar, challenge_bar, fraction)
    if _met(pass_bar, achieved, ratio):
        return Verdict("pass", "accept", tr("perf.verdict.pass", bar=pass_bar["text"], provisional=provisional),
                       pass_bar, challenge_bar, fraction)
    return Verdict("below pass", "tune", tr("perf.verdict.below_pass", bar=pass_bar["text"], provisional=provisional),
                   pass_bar, challenge_bar, fraction)


def evidence(profile: Profile | None, on_gpu: bool) -> dict[str, Any]:
    """The evidence kind in the course's terms (统一证据): a CPU run is a logic check only."""
    if not on_gpu or profile is None:
        return {"kind": "cpu-logic-check", "performance_result": False,
                "note": "CPU / Triton interpreter: correctness only, never a performance result"}
    return {"kind": "gpu-benchmark", "performance_result": True, "profile": profile.name,
            "profile_status": profile.status,
            "thresholds": "calibrated" if profile.calibrated else "provisional"}
