"""Hardware profiles: how to recognise a device, its datasheet peaks and its measured ceilings.

One YAML file per device under ``hardware_profiles/`` (see docs/performance.md for the format).
A profile is *calibrated* when its ceilings were measured on a real card (``infralab profile
calibrate``), *provisional* when they were estimated from a datasheet; every report says which.
A malformed file is rejected with its path and the key that is wrong (:class:`CourseError`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from infralab.course import load_yaml
from infralab.errors import CourseError
from infralab.i18n import tr

# Ceilings a profile that runs performance challenges must give; what each means: the catalogue's
# perf.ceiling.<name>.
CEILINGS = ("copy_gbps", "read_gbps", "matmul_bf16_tflops", "matmul_fp16_tflops")
PEAKS = {"bandwidth_gbps", "bf16_tflops", "fp16_tflops", "tf32_tflops", "fp32_tflops"}
# Which datasheet peak bounds each ceiling (a result above 1.05x of it is flagged).
PEAK_OF_METRIC = {"GB/s": "bandwidth_gbps", "TFLOP/s": "bf16_tflops"}
_KEYS = {"name", "title", "runs_perf", "identity", "l2_mb", "peaks", "calibrated", "ceilings", "measured"}
_IDENTITY_KEYS = {"name_patterns", "compute_capability", "memory_gib", "form_factor", "device"}
_FORM_FACTORS = {"sxm", "pcie", "oam", "cpu"}


@dataclass(frozen=True)
class DeviceInfo:
    """What detection looks at: from ``torch.cuda.get_device_properties`` (or a fake, in tests)."""

    name: str
    capability: tuple[int, int]
    memory_gib: float
    l2_bytes: int = 0
    sm_count: int = 0


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    file: Path
    runs_perf: bool
    calibrated: bool
    name_patterns: tuple[str, ...] = ()
    capability: tuple[int, int] | None = None
    memory_gib: tuple[float, float] | None = None
    form_factor: str | None = None
    l2_mb: float | None = None
    peaks: dict[str, float] = field(default_factory=dict)
    ceilings: dict[str, float] = field(default_factory=dict)
    measured: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``calibrated`` or ``provisional``: printed next to every figure judged against it."""
        if not self.runs_perf:
            return "no perf"
        return "calibrated" if self.calibrated else "provisional"

    def ceiling(self, key: str) -> float:
        if key not in self.ceilings:
            raise CourseError(self.file, f"ceilings.{key}", tr("perf.profile.ceiling_referred"))
        return self.ceilings[key]

    def matches(self, dev: DeviceInfo) -> bool:
        if not self.runs_perf:
            return False
        if not any(re.search(p, dev.name, re.IGNORECASE) for p in self.name_patterns):
            return False
        if self.capability is not None and tuple(dev.capability) != self.capability:
            return False
        if self.memory_gib is not None and not (self.memory_gib[0] <= dev.memory_gib <= self.memory_gib[1]):
            return False
        return True


def _number(file: Path, key: str, value: Any, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= minimum:
        raise CourseError(file, key, tr("perf.profile.number_above", minimum=minimum), value)
    return float(value)


def _mapping(file: Path, key: str, value: Any, allowed: set[str] | None = None) -> dict:
    if not isinstance(value, dict):
        raise CourseError(file, key, tr("course.a_mapping"), type(value).__name__)
    for k in value:
        if allowed is not None and k not in allowed:
            raise CourseError(file, f"{key}.{k}" if key else str(k), tr("course.one_of", names=sorted(allowed)), k)
    return value


def parse_profile(file: Path | str, data: Any) -> Profile:
    """Validate one profile's YAML data; raises CourseError naming the file and the key."""
    file = Path(file)
    d = _mapping(file, "", data, _KEYS)
    for k in ("name", "title", "runs_perf", "identity", "calibrated"):
        if k not in d:
            raise CourseError(file, k, tr("course.key_present"))
    name = d["name"]
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise CourseError(file, "name", tr("perf.profile.identifier"), name)
    if name != file.stem:
        raise CourseError(file, "name", tr("perf.profile.file_stem", stem=file.stem), name)
    for k in ("runs_perf", "calibrated"):
        if not isinstance(d[k], bool):
            raise CourseError(file, k, tr("course.true_or_false"), d[k])
    ident = _mapping(file, "identity", d["identity"], _IDENTITY_KEYS)
    if not d["runs_perf"]:
        return Profile(name=name, title=str(d["title"]), file=file, runs_perf=False, calibrated=d["calibrated"])
    patterns = ident.get("name_patterns")
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
        raise CourseError(file, "identity.name_patterns", tr("perf.profile.name_patterns"), patterns)
    for i, p in enumerate(patterns):
        try:
            re.compile(p)
        except re.error as e:
            raise CourseError(file, f"identity.name_patterns[{i}]", tr("perf.profile.valid_regex"), str(e)) from None
    cc = ident.get("compute_capability")
    if not (isinstance(cc, list) and len(cc) == 2 and all(isinstance(x, int) and x >= 0 for x in cc)):
        raise CourseError(file, "identity.compute_capability", tr("perf.profile.capability"), cc)
    mem = ident.get("memory_gib")
    if not (isinstance(mem, list) and len(mem) == 2):
        raise CourseError(file, "identity.memory_gib", tr("perf.profile.memory_range"), mem)
    lo = _number(file, "identity.memory_gib[0]", mem[0])
    hi = _number(file, "identity.memory_gib[1]", mem[1])
    if lo > hi:
        raise CourseError(file, "identity.memory_gib", tr("perf.profile.min_le_max"), mem)
    ff = ident.get("form_factor")
    if ff not in _FORM_FACTORS:
        raise CourseError(file, "identity.form_factor", tr("course.one_of", names=sorted(_FORM_FACTORS)), ff)
    l2 = _number(file, "l2_mb", d.get("l2_mb"))
    peaks = _mapping(file, "peaks", d.get("peaks"), PEAKS)
    for k in ("bandwidth_gbps", "bf16_tflops"):
        if k not in peaks:
            raise CourseError(file, f"peaks.{k}", tr("perf.profile.datasheet_peak"))
    peaks = {k: _number(file, f"peaks.{k}", v) for k, v in peaks.items()}
    ceilings = _mapping(file, "ceilings", d.get("ceilings"), None)
    for k in CEILINGS:
        if k not in ceilings:
            raise CourseError(file, f"ceilings.{k}",
                              tr("perf.profile.ceiling_missing", meaning=tr(f"perf.ceiling.{k}")))
    ceilings = {str(k): _number(file, f"ceilings.{k}", v) for k, v in ceilings.items()}
    for k, peak_key in (("copy_gbps", "bandwidth_gbps"), ("matmul_bf16_tflops", "bf16_tflops")):
        if ceilings[k] > 1.05 * peaks[peak_key]:
            raise CourseError(file, f"ceilings.{k}",
                              tr("perf.profile.ceiling_above_peak", peak=peak_key, value=peaks[peak_key]), ceilings[k])
    measured = _mapping(file, "measured", d.get("measured"), None)
    if "date" not in measured:
        raise CourseError(file, "measured.date", tr("perf.profile.measured_date"))
    if d["calibrated"]:
        for k in ("torch", "device_name"):
            if k not in measured:
                raise CourseError(file, f"measured.{k}", tr("perf.profile.calibrated_needs"))
    return Profile(
        name=name, title=str(d["title"]), file=file, runs_perf=True, calibrated=d["calibrated"],
        name_patterns=tuple(patterns), capability=(cc[0], cc[1]), memory_gib=(lo, hi), form_factor=ff,
        l2_mb=l2, peaks=peaks, ceilings=ceilings, measured=dict(measured),
    )


def load_profile(file: Path | str) -> Profile:
    file = Path(file)
    return parse_profile(file, load_yaml(file))


def load_profiles(folder: Path | str) -> dict[str, Profile]:
    """Every ``*.yml`` under ``folder``, validated, by name."""
    return {p.name: p for p in (load_profile(f) for f in sorted(Path(folder).glob("*.yml")))}


def current_device() -> DeviceInfo | None:
    """The first CUDA device, or None without one."""
    import torch
    if not torch.cuda.is_available():
        return None
    p = torch.cuda.get_device_properties(0)
    return DeviceInfo(name=p.name, capability=(p.major, p.minor), memory_gib=p.total_memory / 2**30,
                      l2_bytes=int(getattr(p, "L2_cache_size", 0)), sm_count=p.multi_processor_count)


def detect(profiles: dict[str, Profile], dev: DeviceInfo | None) -> tuple[Profile | None, str]:
    """The profile for ``dev`` and a one-line reason. ``None`` when no registered GPU profile fits.

    Without a device, the ``cpu`` profile (if registered), which runs no challenge. With several
    matches, the one whose matching name pattern is longest (the most specific) wins.
    """
    if dev is None:
        cpu = profiles.get("cpu")
        return cpu, tr("bench.no_gpu")
    found = []
    for prof in profiles.values():
        if prof.matches(dev):
            best = max(len(p) for p in prof.name_patterns if re.search(p, dev.name, re.IGNORECASE))
            found.append((best, prof.name, prof))
    if not found:
        return None, tr("bench.unregistered_gpu", device=dev.name, capability=f"{dev.capability[0]}{dev.capability[1]}",
                        memory=f"{dev.memory_gib:.0f}")
    found.sort(key=lambda t: (-t[0], t[1]))
    prof = found[0][2]
    return prof, tr("bench.profile_matched", device=dev.name, name=prof.name, status=prof.status)
