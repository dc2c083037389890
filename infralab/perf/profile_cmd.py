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
    show = sub.add_parser("show", help="list the registered profiles, or show one")
    show.add_argument("name", nargs="?", help="a profile's name (e.g. h200)")
    det = sub.add_parser("detect", help="which registered profile this machine's GPU matches")
    cal = sub.add_parser("calibrate", help="measure this GPU's ceilings and write a calibrated profile")
    cal.add_argument("--name", help="the new profile's name (default: from the device name)")
    cal.add_argument("--update", metavar="FILE", help="re-calibrate this existing profile file in place")
    cal.add_argument("--out", metavar="DIR", help="folder for a new profile (default: the course's hardware_profiles/)")
    cal.add_argument("--peak-bandwidth", type=float, help="datasheet memory bandwidth, GB/s")
    cal.add_argument("--peak-bf16", type=float, help="datasheet dense bf16 rate, TFLOP/s")
    for q in (show, det, cal):
        q.add_argument("--course", default=None, help="course root (default: found from the current folder)")


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
