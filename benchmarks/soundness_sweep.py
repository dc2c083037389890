"""The deep soundness sweep: ``infralab validate --seeds N`` part by part, timed, written to
benchmarks/results/soundness-seeds<N>-<machine>.{json,md}.

    python benchmarks/soundness_sweep.py --seeds 200 [--seed 0] [--part P ...] [--jobs 2] [--margins]

Each part is one pytest session (stub and mutants once, the solution's seed-dependent tests at
N base seeds); the record keeps the machine, its load, the versions and each part's wall and
CPU time, so a later run on other hardware compares like with like. ``make test`` runs the
same check at 30 fresh seeds (tests/test_soundness.py).

``--sweep-mutants`` runs the mutants at every seed too (``make test`` runs each once, at a fresh seed):
a mutant that only some draws of a property test catch is listed with the seeds where it escaped, the
escape a later ``make test`` would meet by chance.

``--margins`` also logs every tolerance check of the solution (``INFRALAB_MARGIN_LOG``, see
infralab/testing.py) and lists the checks that came closest to failing a correct answer: the worst
fraction of its tolerance each used over all seeds. A check that passed every seed but used most of
its tolerance is where the next seed fails; it is the list to fix before CI finds it. A check on the
dtype table's tolerance (``tolerance()``) should use little of it; one with the test's own rtol/atol
is often an exact bound (round-to-nearest within half a step) that a correct answer may nearly reach.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

from infralab.course import load_course
from infralab.record import environment
from infralab.soundness import check_soundness, closest_calls
from infralab.testing import MARGIN_LOG

RESULTS = Path(__file__).resolve().parent / "results"
CLOSEST = 0.1  # --margins lists every check of the solution that used at least this much of its tolerance


def _child_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--part", action="append", help="only this part (repeatable; default: every part)")
    p.add_argument("--jobs", type=int, default=1, help="pytest-xdist workers per part")
    p.add_argument("--name", default=platform.node() or "machine", help="machine name in the file names")
    p.add_argument("--margins", action="store_true", help="log the solution's tolerance checks and list the closest calls")
    p.add_argument("--sweep-mutants", action="store_true",
                   help="run the mutants at every seed too and list, per mutant, the seeds where it passed every hidden test")
    args = p.parse_args()
    course = load_course()
    parts = args.part or [part.id for part in course.parts]
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    rows, exercises = [], []
    logs = Path(tempfile.mkdtemp(prefix="infralab-margins-")) if args.margins else None
    for part in parts:
        t0, cpu0 = time.perf_counter(), _child_cpu_s()
        if args.margins:
            os.environ[MARGIN_LOG] = str(logs / f"{part}.jsonl")
        results, _ = check_soundness(course, course.select([part]), jobs=args.jobs, seeds=args.seeds, seed=args.seed,
                                     sweep_mutants=args.sweep_mutants)
        row = {"part": part, "wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(_child_cpu_s() - cpu0, 1),
               "sound": all(r.sound for r in results), "load_after": os.getloadavg()[0]}
        if args.margins:
            checks = closest_calls(logs / f"{part}.jsonl")
            row["tolerance_checks"] = sum(c["checks"] for c in checks)
            row["closest"] = [c for c in checks if c["used"] >= CLOSEST]
            top = row["closest"][0] if row["closest"] else None
            print(f"{part}: closest call: {top['used']:.3f} of its tolerance ({top['tolerance']}) ({top['test']}, {top['check']})"
                  if top else f"{part}: no tolerance checks logged", flush=True)
        rows.append(row)
        exercises += [r.as_dict() for r in results]
        print(f"{part}: {'sound' if row['sound'] else 'HOLES'} in {row['wall_s']} s wall, {row['cpu_s']} s CPU",
              flush=True)
    out = {"command": f"python benchmarks/soundness_sweep.py --seeds {args.seeds} --seed {args.seed} --jobs {args.jobs}"
                      + "".join(f" --part {part}" for part in args.part or []) + (" --margins" if args.margins else "") + (" --sweep-mutants" if args.sweep_mutants else ""),
           "started": started, "seeds": args.seeds, "seed": args.seed, "cpus": os.cpu_count(),
           "environment": environment(), "parts": rows, "exercises": exercises}
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"soundness-seeds{args.seeds}{'-mutants' if args.sweep_mutants else ''}-{args.name}"
    stem.with_suffix(".json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(_markdown(out), encoding="utf-8")
    print(f"wrote {stem}.json and .md")
    return 0 if all(r["sound"] for r in rows) else 1


def _markdown(out: dict) -> str:
    env = out["environment"]
    lines = [f"# Soundness sweep: {out['seeds']} seeds from --seed {out['seed']}", "",
             f"`{out['command']}`, started {out['started']} on {env['platform']} ({out['cpus']} CPUs), "
             f"torch {env['torch']}, triton {env['triton']}, numpy {env['numpy']}.", "",
             "| part | sound | wall s | CPU s | load after |", "|---|---|---|---|---|"]
    lines += [f"| {r['part']} | {'yes' if r['sound'] else 'NO'} | {r['wall_s']} | {r['cpu_s']} | {r['load_after']:.1f} |"
              for r in out["parts"]]
    lines += ["", "| exercise | solution cases passed | stub fails | mutants caught: hidden | visible | "
              "not caught by a visible test |", "|---|---|---|---|---|---|"]
    for e in out["exercises"]:
        lines.append(f"| {e['exercise']} | {e['solution_passed']}/{e['solution_total']} | "
                     f"{e['stub_failed']}/{e['stub_total']} | {e['mutants_caught_hidden']}/{e['mutants_total']} | "
                     f"{e['mutants_caught_visible']}/{e['mutants_total']} | {', '.join(e['visible_escapes'])} |")
    holes = [f"- {e['exercise']}: {h}" for e in out["exercises"] for h in e["holes"]]
    lines += [""] + ["## Holes", ""] + holes if holes else []
    closest = sorted((c for r in out["parts"] for c in r.get("closest", [])), key=lambda c: -c["used"])
    if any("closest" in r for r in out["parts"]):
        lines += ["", f"## Closest calls: the solution's checks that used at least {CLOSEST:g} of their tolerance", "",
                  "| used (worst) | p99 | checks | tolerance | test | check |", "|---|---|---|---|---|---|"]
        lines += [f"| {c['used']:.3f} | {c['p99']:.3f} | {c['checks']} | {c['tolerance']} | `{c['test']}` | "
                  f"{c['check']} |" for c in closest]
        lines += [] if closest else ["| (none) | | | | | |"]
    return "\n".join(lines + [""])


if __name__ == "__main__":
    raise SystemExit(main())
