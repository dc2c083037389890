"""Launch-setting sweep for the reference paged decode kernel on a GPU (exploration, not grading).

    python3 benchmarks/tune_paged_decode.py [--out FILE]
    python3 benchmarks/tune_paged_decode.py --smoke      # CPU: the sweep's code on a tiny shape, nothing timed

Times the reference ``solutions/part04_serving/paged_decode_kernel.py`` under a few launch settings
(tile BLOCK_N, num_warps, num_stages, programs per SM, hence splits) on the challenge's shapes
(B64 Hq32 Hkv8 ctx 8192 D128 block 16: full and the ragged ramp), with triton.testing.do_bench
(median, L2 cleared between runs), after a correctness check of each setting against the workload's
reference; prints GB/s (the challenge's bytes formula) and the fraction of the H200 profile's copy
bandwidth. The graded figures come from ``infralab bench`` (benchmarks/h200_paged_decode.sh).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infralab.triton_env import interpret_without_gpu  # noqa: E402

interpret_without_gpu()  # before triton loads: its own @jit helpers (tl.max, ...) are made at import

import torch  # noqa: E402
import triton  # noqa: E402
import triton.testing  # noqa: E402

import solutions.part04_serving.paged_decode_kernel as P  # noqa: E402
from infralab.course import load_course  # noqa: E402
from infralab.perf.profiles import load_profiles  # noqa: E402
from infralab.perf.run import check_outputs  # noqa: E402
from infralab.perf.spec import work_amounts  # noqa: E402
from infralab.perf.workloads import WORKLOADS  # noqa: E402

SETTINGS = [  # (BLOCK_N, num_warps, num_stages, programs per SM): the first is the reference's
    (64, 4, 3, 8), (64, 4, 3, 4), (32, 4, 3, 8), (128, 8, 2, 8), (64, 8, 4, 16),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--smoke", action="store_true",
                    help="CPU check of this script: a tiny shape under the Triton interpreter, nothing timed")
    args = ap.parse_args()
    device = "cpu" if args.smoke else "cuda"
    copy_gbps = load_profiles(ROOT / "hardware_profiles")["h200"].ceilings["copy_gbps"]
    challenges = load_course(ROOT).exercise("part04_serving.paged_decode_kernel").perf
    wl = WORKLOADS["paged_decode"]
    saved = (dict(P.TILE), P.PROGRAMS_PER_SM)
    results = []
    for c in challenges:
        shape = {"B": 3, "HQ": 8, "HKV": 2, "CTX": 80, "D": 32, "BS": 16} if args.smoke else c["shapes"][0]
        dtype = "float16" if args.smoke else c["dtype"]
        opts = {**wl.options, **c["options"]}
        nbytes = work_amounts(c, shape)["bytes"]
        inputs = wl.make_inputs(shape, dtype, opts, 0, device)
        for block_n, warps, stages, per_sm in SETTINGS:
            P.TILE.update(BLOCK_N=block_n, num_warps=warps, num_stages=stages)
            P.PROGRAMS_PER_SM = per_sm
            setting = {"challenge": c["id"], "BLOCK_N": block_n, "num_warps": warps, "num_stages": stages,
                       "programs_per_sm": per_sm}
            try:
                problem = check_outputs(wl, wl.call(P, inputs, opts), inputs, opts)
                if problem:
                    results.append({**setting, "error": problem})
                    print(setting, "WRONG:", problem, flush=True)
                    continue
                ms = 1.0 if args.smoke else triton.testing.do_bench(lambda: wl.call(P, inputs, opts), warmup=25,
                                                                    rep=200, return_mode="median")
            except Exception as e:  # noqa: BLE001 - a setting that does not compile is reported, not fatal
                results.append({**setting, "error": f"{type(e).__name__}: {str(e)[:160]}"})
                print(setting, f"{type(e).__name__}: {str(e)[:160]}", flush=True)
                continue
            gbps = nbytes / (ms * 1e-3) / 1e9
            results.append({**setting, "ms": ms, "GB/s": gbps, "of_copy": gbps / copy_gbps})
            print(f"{c['id']:12} BLOCK_N={block_n:3} warps={warps} stages={stages} programs/SM={per_sm}: "
                  f"{ms:.4f} ms  {gbps:,.1f} GB/s  {gbps / copy_gbps:.1%} of copy", flush=True)
        base_ms = 1.0 if args.smoke else triton.testing.do_bench(
            lambda: wl.baselines[c["baseline"]](inputs, opts), warmup=10, rep=100, return_mode="median")
        print(f"{c['id']:12} baseline {c['baseline']}: {base_ms:.4f} ms  {nbytes / (base_ms * 1e-3) / 1e9:,.1f} GB/s "
              f"(same bytes)", flush=True)
        results.append({"challenge": c["id"], "baseline": c["baseline"], "ms": base_ms})
        del inputs
        if not args.smoke:
            torch.cuda.empty_cache()
    P.TILE.clear()
    P.TILE.update(saved[0])
    P.PROGRAMS_PER_SM = saved[1]
    if args.out:
        device_name = "cpu (smoke)" if args.smoke else torch.cuda.get_device_name()
        Path(args.out).write_text(json.dumps({"device": device_name, "torch": torch.__version__,
                                              "triton": triton.__version__, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
