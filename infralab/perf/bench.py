"""``infralab bench EXERCISE``: run an exercise's performance challenges on this GPU.

Prints, per challenge and shape: achieved GB/s or TFLOP/s, % of the profile's ceiling, the
ratio to the same-run baseline, the bar reached (challenge / pass / below pass), the decision
(accept / tune / reject) and the environment; ``--record`` writes them into a result record, with
the roofline of the measured kernels beside it (``<record>.roofline.png``, named by the record's
``roofline`` field; infralab.perf.roofline).
Without a CUDA GPU it says so and exits cleanly (a CPU run is never a performance result).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from typing import Any

from infralab.course import Course, Exercise, load_course
from infralab.i18n import tr
from infralab.perf.decision import evidence
from infralab.perf.profiles import Profile, current_device, detect, load_profiles
from infralab.record import build_record, write_record


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("exercise", help=tr("help.bench.exercise"))
    p.add_argument("--target", default="exercises",
                   help=tr("help.common.target"))
    p.add_argument("--challenge", action="append", help=tr("help.bench.challenge"))
    p.add_argument("--profile", help=tr("help.bench.profile"))
    p.add_argument("--json", action="store_true", help=tr("help.bench.json"))
    p.add_argument("--record", metavar="PATH", help=tr("help.bench.record"))
    p.add_argument("--seed", type=int, default=0, help=tr("help.bench.seed"))
    p.add_argument("--time-cap", type=float, default=10.0, help=tr("help.bench.time_cap"))
    p.add_argument("--graph-batches", action="store_true", help=tr("help.bench.graph_batches"))
    p.add_argument("--course", default=None, help=tr("help.common.course"))


def _exercise(course: Course, name: str) -> Exercise:
    found = course.select(exercises=[name])
    if len(found) > 1:  # `rmsnorm` names part01's and part03's: the one with challenges
        found = tuple(e for e in found if e.perf)
    if len(found) != 1:
        from infralab.errors import InfralabError
        raise InfralabError(tr("bench.no_exercise", name=name))
    return found[0]


def _profile(args, course: Course) -> tuple[Profile | None, str]:
    profiles = load_profiles(course.root / course.profiles_dir)
    dev = current_device()
    if args.profile:
        if dev is None:
            return None, tr("bench.no_gpu")
        if args.profile not in profiles:
            return None, tr("bench.unknown_profile", name=args.profile, known=", ".join(sorted(profiles)))
        return profiles[args.profile], tr("bench.profile_chosen", name=args.profile)
    return detect(profiles, dev)


def run(args: argparse.Namespace) -> int:
    course = load_course(args.course)
    ex = _exercise(course, args.exercise)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    challenges = [c for c in ex.perf if not args.challenge or c["id"] in args.challenge]
    if not challenges:
        print(tr("bench.no_challenge_named", exercise=ex.id, names=", ".join(args.challenge)) if args.challenge
              else tr("bench.no_challenge", exercise=ex.id))
        return 0
    profile, reason = _profile(args, course)
    if profile is None or not profile.runs_perf:
        print(tr("bench.nothing_timed", exercise=ex.id, reason=reason))
        if args.record:
            write_record(build_record(course, args.target, "bench", [], started=started,
                                      duration_s=time.perf_counter() - t0, exercise_ids=[ex.id],
                                      perf=[{"exercise": ex.id, "evidence": evidence(None, on_gpu=False),
                                             "decision": None, "reason": reason}]), args.record)
        return 0
    entries = measure(course, ex, challenges, profile, args.target, seed=args.seed, time_cap=args.time_cap,
                      graphs=args.graph_batches)
    record = build_record(course, args.target, "bench", [], started=started, duration_s=time.perf_counter() - t0,
                          exercise_ids=[ex.id], perf=entries,
                          flags=[{"exercise": e["exercise"], "challenge": e["challenge"], "flag": f}
                                 for e in entries for f in e.get("flags", [])])
    if args.record:
        roofline_line = _roofline(record, course, args.record)
        write_record(record, args.record)
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        print_bench(entries, profile)
    if args.record:
        print(roofline_line, file=sys.stderr if args.json else sys.stdout)  # --json: stdout is the record
    return 0 if all(e["decision"] == "accept" for e in entries) else 1


def _roofline(record: dict[str, Any], course: Course, record_path: str) -> str:
    """Draw the roofline beside the record (its ``roofline`` field names the PNG); the line to print."""
    from infralab.perf.roofline import RooflineUnavailable, draw_beside
    try:
        return draw_beside(record, course, record_path)
    except RooflineUnavailable as e:
        return str(e)


def measure(course: Course, ex: Exercise, challenges: list[dict], profile: Profile, target: str, *,
            seed: int = 0, time_cap: float = 10.0, graphs: bool = False) -> list[dict[str, Any]]:
    """Every (challenge, shape) of ``ex`` on this GPU, judged against ``profile``: record entries."""
    from infralab.perf.checked import checked_candidate
    from infralab.perf.harness import CudaTimer, SamplingPolicy
    from infralab.perf.run import run_challenge
    from infralab.targets import InProcessTarget, parse_target

    banned = {e.id: e.banned for e in course.exercises}
    tgt = InProcessTarget(parse_target(target, course.root), banned,
                          frozenset(e.id for e in course.exercises if e.triton))  # the gate: every guard
    try:
        candidate = checked_candidate(tgt.load(ex.id), triton=ex.triton)  # one import: gate and timed calls
    except Exception as exc:  # a target that does not import: rejected, nothing timed
        tgt.close()
        return [{"exercise": ex.id, "challenge": c["id"], "correct": False, "decision": "reject", "level": "incorrect",
                 "reason": tr("bench.does_not_import", error=str(exc).splitlines()[0]), "flags": [], "metrics": {},
                 "evidence": evidence(profile, on_gpu=True)} for c in challenges]
    timer = CudaTimer()
    policy = SamplingPolicy(time_cap_s=time_cap, graphs=graphs)
    entries = []
    try:
        for c in challenges:
            if c["profiles"] and profile.name not in c["profiles"]:
                continue
            for shape in c["shapes"]:
                entries.append(run_challenge(candidate, c, shape, profile, timer=timer, target=target,
                                             exercise=ex.id, seed=seed, policy=policy))
    finally:
        tgt.close()
    return entries


def print_bench(entries: list[dict[str, Any]], profile: Profile) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=tr("bench.table_title", name=profile.name, status=profile.status))
    for col in ("challenge", "shape", "achieved", "ceiling", "baseline", "bar", "decision"):
        table.add_column(tr(f"bench.col_{col}"))
    for e in entries:
        m = e.get("metrics") or {}
        shape = ",".join(f"{k}={v}" for k, v in (e.get("workload", {}).get("shape") or {}).items())
        frac = m.get("fraction_of_ceiling")
        table.add_row(
            e["challenge"], shape, f"{m['achieved']:,.1f} {m['unit']}" if m else "-",
            f"{100 * frac:.1f}%" if frac is not None else "-",
            f"{m['ratio_to_baseline']:.3f}x {e['workload']['baseline']}" if m else "-",
            e["level"], e["decision"])
    console = Console(width=None if sys.stdout.isatty() else 160)  # logs and pipes: no narrow wrapping
    console.print(table)
    for e in entries:
        console.print(f"{e['challenge']}: {e['reason']}")
    if entries and entries[0].get("environment"):
        env = entries[0]["environment"]
        console.print(tr("bench.environment", env=", ".join(f"{k}={v}" for k, v in env.items())))
