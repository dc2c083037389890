"""``infralab profile show|detect|calibrate``: the registered hardware profiles, which one this
machine's GPU matches, and measuring a card to register (or re-calibrate) its profile."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from infralab.course import find_course_root
from infralab.i18n import tr
from infralab.perf.profiles import current_device, detect, load_profiles


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = sub.add_parser("show", help=tr("help.profile.show"))
    show.add_argument("name", nargs="?", help=tr("help.profile.show.name"))
    det = sub.add_parser("detect", help=tr("help.profile.detect"))
    cal = sub.add_parser("calibrate", help=tr("help.profile.calibrate"))
    cal.add_argument("--name", help=tr("help.profile.calibrate.name"))
    cal.add_argument("--update", metavar="FILE", help=tr("help.profile.calibrate.update"))
    cal.add_argument("--out", metavar="DIR", help=tr("help.profile.calibrate.out"))
    cal.add_argument("--peak-bandwidth", type=float, help=tr("help.profile.calibrate.peak_bandwidth"))
    cal.add_argument("--peak-bf16", type=float, help=tr("help.profile.calibrate.peak_bf16"))
    for q in (show, det, cal):
        q.add_argument("--course", default=None, help=tr("help.common.course"))


def _profiles_dir(args) -> Path:
    root = Path(args.course).resolve() if args.course else find_course_root()
    return root / "hardware_profiles"


def run(args: argparse.Namespace) -> int:
    folder = _profiles_dir(args)
    profiles = load_profiles(folder)
    if args.action == "show":
        if args.name:
            if args.name not in profiles:
                print(tr("perf.profile_cmd.unknown", name=args.name, names=", ".join(sorted(profiles))),
                      file=sys.stderr)
                return 2
            print(profiles[args.name].file.read_text(encoding="utf-8"), end="")
            return 0
        for p in profiles.values():
            ceil = ", ".join(f"{k} {v:,g}" for k, v in p.ceilings.items()) or tr("perf.profile_cmd.no_perf")
            print(f"{p.name:10s} {p.status:12s} {p.title}: {ceil}")
        return 0
    if args.action == "detect":
        dev = current_device()
        prof, reason = detect(profiles, dev)
        print(reason)
        if prof is not None:
            print(tr("perf.profile_cmd.detected", name=prof.name, status=prof.status,
                     ceilings=prof.ceilings or tr("perf.profile_cmd.none")))
        return 0
    return _calibrate(args, folder)


def _calibrate(args, folder: Path) -> int:
    from infralab.perf.calibrate import measure_ceilings, profile_data, write_profile
    if current_device() is None:
        print(tr("perf.profile_cmd.no_gpu"), file=sys.stderr)
        return 2
    base = None
    if args.update:
        path = Path(args.update)
        base = yaml.safe_load(path.read_text(encoding="utf-8"))
    measured = measure_ceilings()
    peaks = None
    if args.peak_bandwidth and args.peak_bf16:
        peaks = {"bandwidth_gbps": args.peak_bandwidth, "bf16_tflops": args.peak_bf16}
    data = profile_data(measured, name=args.name, base=base, peaks=peaks)
    if not args.update:
        path = Path(args.out or folder) / f"{data['name']}.yml"
    write_profile(path, data)
    ceilings = ", ".join(f"{k} {v:,g}" for k, v in data["ceilings"].items())
    print(tr("perf.profile_cmd.wrote", path=path, ceilings=ceilings))
    return 0
