"""One device call's worth of measurements (PERF.md): calibration, then every part03 challenge.

    python3 benchmarks/h200_suite.py --out DIR [--calibrate] [--candidates solutions|torch]
                                     [--exercise NAME ...] [--time-cap S] [--tag TAG]

``--candidates mutants`` runs every known-wrong kernel of fixtures/mutants/part03_kernels through
the same challenges: each should be rejected by the correctness gate.

Prints the environment, the ceilings and a table; writes DIR/h200-<tag>.json (all record
entries, environment included) and DIR/h200-<tag>.md. Challenges come from course.yml where
the exercise declares them, else from benchmarks/part03_perf.yml.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infralab.perf.harness import CudaTimer, SamplingPolicy  # noqa: E402
from infralab.perf.profiles import current_device, detect, load_profiles  # noqa: E402
from infralab.perf.run import gpu_environment, run_challenge  # noqa: E402
from infralab.perf.spec import validate_challenge  # noqa: E402

PART = "part03_kernels"


def challenges() -> dict[str, list[dict]]:
    raw = yaml.safe_load((ROOT / "benchmarks" / "part03_perf.yml").read_text())
    out = {ex: [validate_challenge("benchmarks/part03_perf.yml", f"{ex}[{i}]", c) for i, c in enumerate(cs)]
           for ex, cs in raw.items()}
    try:
        from infralab.course import load_course
        for ex in load_course(ROOT).exercises:
            if ex.part == PART and ex.perf:
                out[ex.name] = list(ex.perf)
    except Exception as e:  # noqa: BLE001 - the benchmark still runs from its own file
        print(f"(course.yml not used: {e})")
    return out


def candidate(kind: str, name: str):
    """The candidate run_challenge takes: a CheckedCandidate (one import; gate with every guard of
    grading, checked timed calls, the profiled batch), or the torch module of the harness smoke."""
    if kind == "torch":
        spec = importlib.util.spec_from_file_location("torch_candidates", ROOT / "benchmarks" / "torch_candidates.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    from infralab.course import load_course
    from infralab.perf.checked import checked_candidate
    from infralab.targets import InProcessTarget, parse_target
    course = load_course(ROOT)  # the guards of grading: banned routines, a Triton kernel must launch
    banned = {e.id: e.banned for e in course.exercises}
    triton = frozenset(e.id for e in course.exercises if e.triton)
    gate = InProcessTarget(parse_target(kind, ROOT), banned, triton)
    return checked_candidate(gate.load(f"{PART}.{name}"), triton=f"{PART}.{name}" in triton)


def markdown(entries, env, ceilings, tag) -> str:
    lines = [f"# H200 run `{tag}`", "", "Environment: " + ", ".join(f"{k}={v}" for k, v in env.items()), "",
             "Ceilings used: " + ", ".join(f"{k} {v:,g}" for k, v in ceilings.items()), "",
             "| exercise | challenge | shape | target | checks | candidate | baseline | vs baseline | % ceiling | bar | decision |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in entries:
        m = e.get("metrics") or {}
        shape = " ".join(f"{k}={v}" for k, v in e.get("workload", {}).get("shape", {}).items())
        who = f"{Path(str(e.get('candidate', {}).get('target', '-'))).name} | {e.get('checks', 'on')}"
        if not m:
            reason = e['reason'][:300].replace("|", "/")
            lines.append(f"| {e['exercise']} | {e['challenge']} | {shape} | {who} | - | - | - | - | {e['level']} | "
                         f"{e['decision']}: {reason} |")
            continue
        frac = m.get("fraction_of_ceiling")
        lines.append(f"| {e['exercise']} | {e['challenge']} | {shape} | {who} | {m['achieved']:,.1f} {m['unit']} | "
                     f"{m['baseline_achieved']:,.1f} ({e['workload']['baseline']}) | {m['ratio_to_baseline']:.3f}x | "
                     f"{'-' if frac is None else f'{100 * frac:.1f}%'} | {e['level']} | {e['decision']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--candidates", default="solutions")
    ap.add_argument("--exercise", action="append")
    ap.add_argument("--time-cap", type=float, default=6.0)
    ap.add_argument("--graph-batches", action="store_true", help="short calls as CUDA graph replays (bench --graph-batches)")
    ap.add_argument("--tag", default="run")
    ap.add_argument("--checks", choices=["on", "both"], default="on",
                    help="both: each challenge also timed on the bare module, no checks (what the checks cost)")
    ap.add_argument("--submission", action="append", default=[],
                    help="a submission folder (repeatable): its part03 modules are the candidates")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = gpu_environment()
    print("environment:", json.dumps(env))
    if args.calibrate:
        from infralab.perf.calibrate import measure_ceilings, profile_data, write_profile
        path = ROOT / "hardware_profiles" / "h200.yml"
        measured = measure_ceilings()
        print("calibrated:", json.dumps(measured))
        (out / "h200-calibration.json").write_text(json.dumps(measured, indent=1))
        try:
            data = profile_data(measured, name="h200", base=yaml.safe_load(path.read_text()))
            write_profile(path, data)
            shutil.copy(path, out / "h200.yml")
        except Exception as e:  # noqa: BLE001 - keep measuring; the figures are in the JSON above
            print(f"could not write the profile: {type(e).__name__}: {e}")
    profile, reason = detect(load_profiles(ROOT / "hardware_profiles"), current_device())
    print(reason)
    if profile is None or not profile.runs_perf:
        return 2
    timer = CudaTimer()
    policy = SamplingPolicy(time_cap_s=args.time_cap, graphs=args.graph_batches)
    entries = []
    for name, cs in challenges().items():
        if args.exercise and name not in args.exercise:
            continue
        if args.submission:
            targets = [str(Path(d)) for d in args.submission
                       if (Path(d) / PART / f"{name}.py").is_file() or (Path(d) / "exercises" / PART / f"{name}.py").is_file()]
        elif args.candidates == "mutants":
            targets = [f"mutant:{PART}.{name}:{m.stem}"
                       for m in sorted((ROOT / "fixtures" / "mutants" / PART / name).glob("*.py"))
                       if m.name != "__init__.py"]
        else:
            targets = [args.candidates]
        for target in targets:
            try:
                cand = candidate(target, name)
            except Exception as e:  # noqa: BLE001
                print(f"{name}: no candidate {target} ({e})")
                continue
            entries += run_all(cand, name, cs, profile, timer, policy, target, args.checks == "both")
            write_outputs(out, args.tag, env, profile, entries, quiet=True)  # so far: a call's timeout keeps them
    write_outputs(out, args.tag, env, profile, entries)
    return 0


def run_all(cand, name, cs, profile, timer, policy, target, both: bool = False) -> list[dict]:
    from infralab.perf.checked import CheckedCandidate, unchecked
    entries = []
    variants = [("on", cand)]
    if both and isinstance(cand, CheckedCandidate):
        variants.append(("off", unchecked(cand.gate)))  # the same module, called bare: no guard, no profiling
    for c in cs:
        for shape in c["shapes"]:
            for checks, module in variants:
                t0 = time.time()
                e = run_challenge(module, c, shape, profile, timer=timer, target=target,
                                  exercise=f"{PART}.{name}", policy=policy)
                e["checks"] = checks
                m = e.get("metrics") or {}
                print(f"{name}/{c['id']} [{target}, checks {checks}] {shape}: {m.get('achieved')} {m.get('unit', '')} "
                      f"ratio {m.get('ratio_to_baseline')} frac {m.get('fraction_of_ceiling')} -> {e['level']}, "
                      f"{e['decision']} ({time.time() - t0:.1f} s) {e['reason'][:300]}", flush=True)
                entries.append(e)
    return entries


def write_outputs(out: Path, tag: str, env, profile, entries, quiet: bool = False) -> None:
    import datetime as dt
    date = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    (out / f"h200-{tag}.json").write_text(json.dumps({"environment": env, "date": date, "profile": profile.name,
                                                      "profile_status": profile.status,
                                                      "ceilings": profile.ceilings, "entries": entries}, indent=1))
    md = markdown(entries, env, profile.ceilings, tag)
    (out / f"h200-{tag}.md").write_text(md)
    if not quiet:
        print(md)


if __name__ == "__main__":
    sys.exit(main())
