"""The roofline of measured kernels on their hardware profile: a PNG beside the result record.

For each GPU perf entry of a record (``infralab bench --record``, a graded record, a
benchmarks/h200_suite.py file), the kernel sits at its arithmetic intensity (FLOPs / bytes of one
call, from the challenge's ``flops`` and ``bytes`` formulas in course.yml) and its achieved
TFLOP/s (a bandwidth figure times the intensity); the baseline timed in the same run sits at the
same intensity. The profile's ceilings are drawn as the roof: the measured copy bandwidth and the
datasheet bandwidth, and per dtype the measured matmul rate and the datasheet peak.

matplotlib (the dev extra) draws it with the Agg backend; without it :class:`RooflineUnavailable`
says so in one line and nothing else changes. ``python -m infralab.perf.roofline RECORD --out PNG``
draws a committed record (docs/performance.md shows one).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infralab.course import Course
from infralab.i18n import language, tr
from infralab.options import OneLineParser
from infralab.perf.profiles import Profile, load_profiles
from infralab.perf.spec import METRICS, work_amounts

SUFFIX = ".roofline.png"
_MEASURED_MATMUL = {"bfloat16": "matmul_bf16_tflops", "float16": "matmul_fp16_tflops"}
# The datasheet compute roof per dtype. fp32 is the CUDA-core rate (the elementwise kernels'), not
# the tf32 tensor-core rate infralab.perf.decision bounds a flag with.
_PEAK = {"bfloat16": "bf16_tflops", "float16": "fp16_tflops", "float32": "fp32_tflops"}
_SHORT_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8_e4m3fn": "fp8"}
_CJK_FONTS = ("Noto Sans CJK SC", "Noto Serif CJK SC", "Noto Sans CJK JP", "WenQuanYi Zen Hei",
              "Source Han Sans SC", "SimHei", "Microsoft YaHei")


class RooflineUnavailable(Exception):
    """The roofline cannot be drawn; the message is the one line that says why."""


@dataclass(frozen=True)
class RooflinePoint:
    """One measured (challenge, shape): where the kernel and its baseline sit on the roofline."""

    label: str
    dtype: str
    intensity: float  # FLOP per byte
    achieved_tflops: float
    baseline_tflops: float
    baseline: str
    achieved: float  # in the challenge's own unit, as recorded
    unit: str
    ratio: float


def gpu_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries that are GPU measurements with figures (a CPU logic check never is one)."""
    return [e for e in entries if (e.get("evidence") or {}).get("performance_result")
            and (e.get("metrics") or {}).get("achieved") is not None]


def _amounts(entry: dict[str, Any], course: Course) -> dict[str, float]:
    """Bytes and FLOPs of one call: recorded in the entry, else from course.yml's formulas at its shape
    (records written before both were recorded)."""
    wl = entry.get("workload") or {}
    amounts = {k: float(wl[k]) for k, _ in METRICS.values() if isinstance(wl.get(k), (int, float))}
    if len(amounts) < len(METRICS):
        challenge = _challenge(entry, course)
        if challenge is not None and wl.get("shape"):
            amounts = {**work_amounts(challenge, wl["shape"]), **amounts}
    return amounts


def _challenge(entry: dict[str, Any], course: Course) -> dict[str, Any] | None:
    try:
        ex = course.exercise(str(entry.get("exercise")))
    except Exception:  # an exercise this course does not have: no formulas to read
        return None
    return next((c for c in ex.perf if c["id"] == entry.get("challenge")), None)


def points(entries: list[dict[str, Any]], course: Course) -> list[RooflinePoint]:
    """The roofline points of the GPU entries whose bytes and FLOPs are both known."""
    out = []
    for e in gpu_entries(entries):
        amounts = _amounts(e, course)
        if not amounts.get("bytes") or not amounts.get("flops"):
            continue
        m, wl = e["metrics"], e.get("workload") or {}
        intensity = amounts["flops"] / amounts["bytes"]

        def tflops(figure: float, unit: str = m["unit"]) -> float:
            return figure * 1e9 * intensity / 1e12 if unit == "GB/s" else figure
        shape = ",".join(f"{k}={v}" for k, v in (wl.get("shape") or {}).items())
        name = str(e.get("exercise", "?")).rsplit(".", 1)[-1]
        out.append(RooflinePoint(
            label=f"{name}/{e.get('challenge', '?')} {shape}", dtype=str(wl.get("dtype", "")), intensity=intensity,
            achieved_tflops=tflops(m["achieved"]), baseline_tflops=tflops(m.get("baseline_achieved") or 0.0),
            baseline=str(wl.get("baseline", "")), achieved=m["achieved"], unit=m["unit"],
            ratio=float(m.get("ratio_to_baseline") or 0.0)))
    return out


def profile_of(entries: list[dict[str, Any]], course: Course) -> Profile:
    """The hardware profile the GPU entries were judged against (the first entry's)."""
    found = gpu_entries(entries)
    if not found:
        raise RooflineUnavailable(tr("roofline.no_gpu_entry"))
    name = found[0]["evidence"].get("profile")
    folder = course.root / course.profiles_dir
    profiles = load_profiles(folder)
    if name not in profiles:
        raise RooflineUnavailable(tr("roofline.no_profile", profile=name, folder=folder))
    return profiles[name]


def _pyplot(lang: str):
    """matplotlib's pyplot on the Agg backend, and the label language (English when Chinese is asked for
    and no CJK font is installed: boxes read worse than English)."""
    try:
        import matplotlib
    except ImportError:
        raise RooflineUnavailable(tr("roofline.no_matplotlib")) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib import font_manager
    installed = {f.name for f in font_manager.fontManager.ttflist}
    cjk = [f for f in _CJK_FONTS if f in installed]
    if lang == "zh" and not cjk:
        lang = "en"
    return plt, lang, cjk


def draw(entries: list[dict[str, Any]], course: Course, path: Path | str) -> Path:
    """Draw the roofline of ``entries`` (record perf entries) on their profile into ``path`` (PNG)."""
    profile = profile_of(entries, course)
    same = [e for e in gpu_entries(entries) if e["evidence"].get("profile") == profile.name]  # never mix hardware
    pts = [p for p in points(same, course) if p.intensity > 0 and p.achieved_tflops > 0]
    if not pts:
        raise RooflineUnavailable(tr("roofline.no_intensity"))
    plt, lang, cjk = _pyplot(language())
    import numpy as np

    def t(key: str, **values: object) -> str:
        return tr(key, lang, **values)

    with plt.rc_context({"font.family": "sans-serif", "font.sans-serif": [*cjk, "DejaVu Sans"],
                         "axes.unicode_minus": False}):
        fig, ax = plt.subplots(figsize=(13, 6), dpi=100)
        lo = min(p.intensity for p in pts) / 8
        hi = max(max(p.intensity for p in pts) * 8, 4 * _ridge(profile, pts))
        x = np.logspace(np.log10(lo), np.log10(hi), 400)
        for style, bandwidth, ceilings in _roofs(profile, sorted({p.dtype for p in pts})):
            for i, (short, tflops) in enumerate(ceilings or [(None, None)]):
                y = x * bandwidth / 1e3 if tflops is None else np.minimum(x * bandwidth / 1e3, tflops)
                label = [t(f"roofline.memory_{style}", gbps=f"{bandwidth:,.0f}")] if i == 0 else []
                if tflops is not None:
                    label.append(t(f"roofline.compute_{style}", dtype=short, tflops=f"{tflops:,.0f}"))
                ax.plot(x, y, **_LINE[style], label="\n".join(label))
        colors = plt.get_cmap("tab10")
        for i, p in enumerate(pts):
            c = colors(i % 10)
            ax.plot([p.intensity, p.intensity], [p.baseline_tflops or p.achieved_tflops, p.achieved_tflops],
                    color=c, lw=0.8, alpha=0.6)
            ax.scatter([p.intensity], [p.achieved_tflops], color=c, s=60, zorder=3,
                       label=t("roofline.point", label=p.label, achieved=f"{p.achieved:,.1f}", unit=p.unit,
                               ratio=f"{p.ratio:.2f}", baseline=p.baseline))
            if p.baseline_tflops > 0:
                ax.scatter([p.intensity], [p.baseline_tflops], facecolors="none", edgecolors=c, s=60, zorder=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(t("roofline.x_label"))
        ax.set_ylabel(t("roofline.y_label"))
        ax.set_title(t("roofline.title", profile=profile.title, status=profile.status) + "\n"
                     + t("roofline.kernel"), fontsize=11)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        fig.tight_layout()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png")
        plt.close(fig)
    return path


_LINE = {"measured": {"color": "tab:blue", "lw": 2}, "datasheet": {"color": "tab:gray", "lw": 1.2, "ls": "--"}}


def _roofs(profile: Profile, dtypes: list[str]) -> list[tuple[str, float, list[tuple[str, float]]]]:
    """(style, bandwidth GB/s, [(dtype, compute TFLOP/s)]) of the measured and the datasheet roofs."""
    out = []
    measured = [(_SHORT_DTYPE.get(d, d), profile.ceilings[_MEASURED_MATMUL[d]]) for d in dtypes
                if _MEASURED_MATMUL.get(d) in profile.ceilings]
    if profile.ceilings.get("copy_gbps"):
        out.append(("measured", profile.ceilings["copy_gbps"], measured))
    datasheet = [(_SHORT_DTYPE.get(d, d), profile.peaks[_PEAK[d]]) for d in dtypes if _PEAK.get(d) in profile.peaks]
    if profile.peaks.get("bandwidth_gbps"):
        out.append(("datasheet", profile.peaks["bandwidth_gbps"], datasheet))
    return out


def _ridge(profile: Profile, pts: list[RooflinePoint]) -> float:
    """The largest intensity where a datasheet compute peak meets the datasheet bandwidth."""
    bw = profile.peaks.get("bandwidth_gbps") or profile.ceilings.get("copy_gbps") or 1.0
    peaks = [profile.peaks.get(_PEAK.get(p.dtype, ""), 0.0) for p in pts]
    return max(peaks) * 1e3 / bw


def draw_beside(record: dict[str, Any], course: Course, record_path: Path | str) -> str:
    """Draw the record's roofline beside ``record_path`` (``<stem>.roofline.png``) and name the file in
    ``record["roofline"]`` (relative to the record's folder); returns the line to print. Raises
    :class:`RooflineUnavailable` (nothing written, no field) when it cannot be drawn."""
    record_path = Path(record_path)
    png = record_path.with_name(record_path.stem + SUFFIX)
    draw(record.get("perf") or [], course, png)
    record["roofline"] = png.name
    return tr("roofline.written", path=png)


def entries_of(data: Any) -> list[dict[str, Any]]:
    """The perf entries of a loaded JSON file: a record (``perf``) or a benchmarks/h200_suite.py file
    (``entries``)."""
    if isinstance(data, dict):
        return list(data.get("perf") or data.get("entries") or [])
    return []


def main(argv: list[str] | None = None) -> int:
    """``python -m infralab.perf.roofline RECORD --out PNG``: draw a saved record's roofline."""
    import json

    from infralab.course import load_course
    parser = OneLineParser(prog="python -m infralab.perf.roofline", description=tr("help.roofline.description"))
    parser.add_argument("record", help=tr("help.roofline.record"))
    parser.add_argument("--out", required=True, help=tr("help.roofline.out"))
    parser.add_argument("--course", default=None, help=tr("help.common.course"))
    args = parser.parse_args(argv)
    data = json.loads(Path(args.record).read_text(encoding="utf-8"))
    try:
        draw(entries_of(data), load_course(args.course), args.out)
    except RooflineUnavailable as e:
        print(e, file=sys.stderr)
        return 1
    print(tr("roofline.written", path=args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
