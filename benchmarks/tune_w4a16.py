"""Split-K sweep for the reference W4A16 kernel on a GPU (exploration, not grading).

    python3 benchmarks/tune_w4a16.py [--out FILE]
    python3 benchmarks/tune_w4a16.py --smoke      # CPU: the sweep's code on a tiny shape, nothing timed

The H200 run of 2026-12-03 found the reference latency-bound (batch 1: 35 MB in 77 us, with split-K 4
and 256 programs; docs/performance.md, "W4A16"). This times ``w4a16_matmul`` of
``solutions/part05_quantization/w4a16.py`` at the challenge's shapes (N = K = 8192, group 128,
batch 1/16/128) with split-K forced to each value in turn (the autotuner picks the tile per split:
SPLIT_K is in its key), after a correctness check against the workload's reference, with
triton.testing.do_bench (median), and cuBLAS on the dequantised weight in the same run. The graded
figures come from ``infralab bench part05_quantization.w4a16``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infralab.triton_env import interpret_without_gpu  # noqa: E402

interpret_without_gpu()  # before triton loads

import torch  # noqa: E402
import triton.testing  # noqa: E402

import solutions.part05_quantization.w4a16 as W  # noqa: E402
from infralab.perf.run import check_outputs  # noqa: E402
from infralab.perf.workloads import WORKLOADS  # noqa: E402

SPLITS = (1, 2, 4, 8, 16, 32)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="CPU interpreter, a tiny shape, nothing timed")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    wl = WORKLOADS["w4a16"]
    device, dtype = ("cpu", "float32") if args.smoke else ("cuda", "bfloat16")
    batches = (1, 16) if args.smoke else (1, 16, 128)
    nk = 256 if args.smoke else 8192
    splits = (1, 2) if args.smoke else SPLITS
    rows = []
    for m in batches:
        shape = {"M": m, "N": nk, "K": nk}
        inputs = wl.make_inputs(shape, dtype, wl.options, 0, device)
        cublas = None if args.smoke else triton.testing.do_bench(lambda: wl.baselines["cublas"](inputs, wl.options))
        for split in splits:
            if split > 1 and nk // split < 128:
                continue
            W._split_k = lambda M, N, K, dev, s=split: s  # noqa: B023 - forced for this row
            run = (lambda: wl.call(W, inputs, wl.options))
            problem = check_outputs(wl, run(), inputs, wl.options)
            ms = None if args.smoke or problem else triton.testing.do_bench(run)
            kernel = W._w4a16_gemv_kernel if m == 1 else W.w4a16_kernel
            best = getattr(kernel, "best_config", None)
            row = {"M": m, "split": split, "ms": ms, "cublas_ms": cublas, "problem": problem,
                   "ratio": None if ms is None or cublas is None else cublas / ms, "config": str(best)}
            rows.append(row)
            print(f"M={m:4d} split={split:3d} " + (f"{ms * 1e3:8.1f} us  {cublas / ms:5.2f}x cuBLAS" if ms else
                                                   f"{'-':>8}") + f"  {problem or ''} {best or ''}", flush=True)
    if args.out:
        env = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if device == "cuda" else "cpu"}
        args.out.write_text(json.dumps({"environment": env, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
