"""The deep soundness sweep: ``infralab validate --seeds N`` part by part, timed, written to
benchmarks/results/soundness-seeds<N>-<machine>.{json,md}.

    python benchmarks/soundness_sweep.py --seeds 200 [--seed 0] [--part P ...] [--jobs 2]

Each part is one pytest session (stub and mutants once, the solution's seed-dependent tests at
N base seeds); the record keeps the machine, its load, the versions and each part's wall and
CPU time, so a later run on other hardware compares like with like. ``make test`` runs the
same check at 30 fresh seeds (tests/test_soundness.py).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import time
from pathlib import Path

from infralab.course import load_course
from infralab.record import environment
from infralab.soundness import check_soundness

RESULTS = Path(__file__).resolve().parent / "results"


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
    args = p.parse_args()
    course = load_course()
    parts = args.part or [part.id for part in course.parts]
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    rows, exercises = [], []
    for part in parts:
        t0, cpu0 = time.perf_counter(), _child_cpu_s()
        results, _ = check_soundness(course, course.select([part]), jobs=args.jobs, seeds=args.seeds, seed=args.seed)
        row = {"part": part, "wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(_child_cpu_s() - cpu0, 1),
               "sound": all(r.sound for r in results), "load_after": os.getloadavg()[0]}
        rows.append(row)
        exercises += [r.as_dict() for r in results]
        print(f"{part}: {'sound' if row['sound'] else 'HOLES'} in {row['wall_s']} s wall, {row['cpu_s']} s CPU",
              flush=True)
    out = {"command": f"python benchmarks/soundness_sweep.py --seeds {args.seeds} --seed {args.seed} --jobs {args.jobs}"
                      + "".join(f" --part {part}" for part in args.part or []),
           "started": started, "seeds": args.seeds, "seed": args.seed, "cpus": os.cpu_count(),
           "environment": environment(), "parts": rows, "exercises": exercises}
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"soundness-seeds{args.seeds}-{args.name}"
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
    return "\n".join(lines + ([""] + ["## Holes", ""] + holes if holes else []) + [""])


if __name__ == "__main__":
    raise SystemExit(main())
