"""How close one test's checks come to failing a correct answer, far out in the tail of seeds: what a
sweep of the whole course cannot afford to draw.

    python benchmarks/margin_tail.py 'graders/part05_quantization/test_awq.py::test_fold_scales_divides_the_previous_op_and_leaves_the_output_unchanged' \
        --seeds 20000 [--seed 0] [--target solutions] [--jobs 2] [--out benchmarks/results/margin-tail-awq.md]

Runs pytest on the given tests against ``--target`` (default: the reference solution) at N base
seeds, with every ``assert_close`` logging how much of its tolerance it used
(``INFRALAB_MARGIN_LOG``, infralab/testing.py), and prints per check the worst, the 99th percentile
and the median fraction used, and how many checks. ``soundness_sweep.py --margins`` finds the
closest calls over the whole course at ~100 seeds; this says whether a close call is a flake in
waiting (a tail that reaches 1) or a bound a correct answer meets exactly.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from infralab.record import environment
from infralab.soundness import closest_calls
from infralab.testing import MARGIN_LOG

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tests", nargs="+", help="pytest node ids (a file, a test, a parametrised case)")
    p.add_argument("--seeds", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target", default="solutions")
    p.add_argument("--jobs", type=int, default=1, help="pytest-xdist workers")
    p.add_argument("--out", type=Path, help="also write the table (markdown) here")
    args = p.parse_args()
    log = Path(tempfile.mkdtemp(prefix="infralab-tail-")) / "margins.jsonl"
    command = [sys.executable, "-m", "pytest", *args.tests, "--target", args.target, "--seed", str(args.seed),
               "--seeds", str(args.seeds), "-q", "-p", "no:cacheprovider"] + (["-n", str(args.jobs)] if args.jobs > 1 else [])
    started, t0 = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), time.perf_counter()
    run = subprocess.run(command, cwd=ROOT, env={**os.environ, MARGIN_LOG: str(log)}, capture_output=True, text=True)
    summary = (run.stdout.strip().splitlines() or ["(no output)"])[-1]
    rows = closest_calls(log, solution_only=False)
    env = environment()
    lines = [f"# Margin tail: {args.seeds} seeds from --seed {args.seed}, target {args.target}", "",
             f"`python benchmarks/margin_tail.py {' '.join(args.tests)} --seeds {args.seeds} --seed {args.seed} "
             f"--target {args.target}`, started {started}, {time.perf_counter() - t0:.0f} s on {env['platform']} "
             f"({os.cpu_count()} CPUs), torch {env['torch']}, triton {env['triton']}; pytest: {summary}", "",
             "| worst | p99 | median | checks | tolerance | test | check |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['used']:.3f} | {r['p99']:.3f} | {r['median']:.3f} | {r['checks']} | {r['tolerance']} | "
              f"`{r['test']}` | {r['check']} |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
