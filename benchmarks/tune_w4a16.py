"""W4A16 on a GPU: the previous reference, each variant of the fast path, and cuBLAS, in one run.

    python3 benchmarks/tune_w4a16.py [--out FILE]      # H200: under 3 minutes (autotuning included)
    python3 benchmarks/tune_w4a16.py --smoke           # CPU: every row's code and correctness check, nothing timed

At the challenge's shapes (N = K = 8192, group 128, bf16, batch 1 / 16 / 128) it times, after a
correctness check against the workload's reference, with triton.testing.do_bench (median; its
per-call events also count the host's launch gaps, tens of microseconds of Python wrapper and
autotuner dispatch, when the kernel is shorter) and with the grading harness's CudaTimer (median of
single calls, each after an L2 flush and a spin kernel that hides the host's enqueueing: device time
only, the ``device_us`` column, which picks the winners):

- ``cublas``: torch.matmul with the dequantised bf16 weight (the challenge's baseline);
- ``previous``: the reference before the fast path (benchmarks/w4a16_previous.py: 0.575x / 0.469x /
  0.183x cuBLAS on the H200 of 2026-12-03), with its own split-K heuristic;
- ``gemv fold`` / ``gemv dequant`` (batch 1): ``GEMV_FOLD_ZERO`` True / False of
  solutions/part05_quantization/w4a16.py, with ``GEMV_SPLIT_K`` 1, 2, 4 and 8 (fold) and 1 (dequant);
  ``fused``: ``GEMV_FUSED_SUM`` (the split's partials summed by the last program, no second kernel);
- ``gemm swap`` / ``gemm plain`` (batch 16 and 128): ``GEMM_SWAP_AB_UP_TO_M`` on / off, at batch 16
  with ``GEMM_SPLIT_K`` forced to 1, 2, 4 and 8 and left to the heuristic (``split auto``).

The autotuner picks the tile for every row (the variant and the split are in its key). The end of
the output names the fastest row of the fast path at each batch and the module settings that select
it (the ``set:`` line). The graded figures come from ``infralab bench part05_quantization.w4a16``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infralab.triton_env import interpret_without_gpu  # noqa: E402

interpret_without_gpu()  # before triton loads

import torch  # noqa: E402
import triton.testing  # noqa: E402

import solutions.part05_quantization.w4a16 as W  # noqa: E402
from infralab.perf.harness import CudaTimer  # noqa: E402
from infralab.perf.run import check_outputs  # noqa: E402
from infralab.perf.workloads import WORKLOADS  # noqa: E402

_spec = importlib.util.spec_from_file_location("w4a16_previous", ROOT / "benchmarks" / "w4a16_previous.py")
PREVIOUS = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PREVIOUS)

SPLITS = (1, 2, 4, 8, None)  # None: the heuristic
DEFAULTS = {"GEMV_FOLD_ZERO": W.GEMV_FOLD_ZERO, "GEMV_SPLIT_K": 1, "GEMV_FUSED_SUM": False,
            "GEMM_SWAP_AB_UP_TO_M": W.GEMM_SWAP_AB_UP_TO_M, "GEMM_SPLIT_K": W.GEMM_SPLIT_K}  # GEMV_SPLIT_K: the GPU default (the interpreter's is 2)


def variants(m: int) -> list[tuple[str, dict]]:
    """(name, module settings) of the fast path's rows at batch m."""
    if m == 1:
        folded = [(f"gemv fold split {split}", {"GEMV_FOLD_ZERO": True, "GEMV_SPLIT_K": split}) for split in (1, 2, 4, 8)]
        fused = [(f"gemv fold split {split} fused", {"GEMV_FOLD_ZERO": True, "GEMV_SPLIT_K": split, "GEMV_FUSED_SUM": True})
                 for split in (2, 4, 8)]
        return folded + fused + [("gemv dequant split 1", {"GEMV_FOLD_ZERO": False, "GEMV_SPLIT_K": 1})]
    rows = []
    for swap in (True, False):
        for split in (SPLITS if m <= 16 else (None,)):
            name = f"gemm {'swap' if swap else 'plain'} split {split or 'auto'}"
            rows.append((name, {"GEMM_SWAP_AB_UP_TO_M": m if swap else 0, "GEMM_SPLIT_K": split}))
    return rows


def kernel_of(module, m: int):
    if module is PREVIOUS:
        return module._w4a16_gemv_kernel if m == 1 else module.w4a16_kernel
    return W._w4a16_gemv_fast_kernel if m == 1 else W._w4a16_gemm_fast_kernel


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="CPU interpreter, a tiny shape, nothing timed")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    wl = WORKLOADS["w4a16"]
    device, dtype = ("cpu", "float32") if args.smoke else ("cuda", "bfloat16")
    batches = (1, 5) if args.smoke else (1, 16, 128)
    nk = 256 if args.smoke else 8192
    timer = None if args.smoke else CudaTimer()

    def bench(fn) -> tuple[float | None, float | None]:
        """(do_bench median ms, harness median of single calls in ms); None, None on the CPU."""
        if timer is None:
            return None, None
        single = statistics.median(timer.time_batch(lambda i: fn(), 1, i) for i in range(15))
        return triton.testing.do_bench(fn, return_mode="median"), single * 1e3

    rows = []

    def record(m, name, settings, module, inputs, cublas):
        for key, value in {**DEFAULTS, **settings}.items():
            setattr(W, key, value)
        run = (lambda: wl.call(module, inputs, wl.options))
        problem = check_outputs(wl, run(), inputs, wl.options)
        do_bench_ms, ms = (None, None) if problem else bench(run)
        best = getattr(kernel_of(module, m), "best_config", None)
        row = {"M": m, "name": name, "settings": settings, "ms": ms, "do_bench_ms": do_bench_ms,
               "cublas_ms": cublas[1], "cublas_do_bench_ms": cublas[0], "problem": problem,
               "ratio": None if ms is None or cublas[1] is None else cublas[1] / ms,
               "do_bench_ratio": None if do_bench_ms is None or cublas[0] is None else cublas[0] / do_bench_ms,
               "config": str(best)}
        rows.append(row)
        timed = (f"{ms * 1e3:8.1f} {row['ratio']:6.2f}x {do_bench_ms * 1e3:8.1f} {row['do_bench_ratio']:6.2f}x"
                 if ms else f"{'-':>8} {'-':>7} {'-':>8} {'-':>7}")
        print(f"M={m:4d} {name:26s} {timed}  {problem or ''} {best or ''}", flush=True)

    print(f"N = K = {nk}, group {wl.options['group_size']}, {dtype}; device_us (harness, single calls) and "
          f"cuBLAS / it, then do_bench_us and cuBLAS / it")
    for m in batches:
        inputs = wl.make_inputs({"M": m, "N": nk, "K": nk}, dtype, wl.options, 0, device)
        cublas = bench(lambda: wl.baselines["cublas"](inputs, wl.options))  # noqa: B023
        print(f"M={m:4d} {'cublas':26s} " + (f"{cublas[1] * 1e3:8.1f} {'':7s} {cublas[0] * 1e3:8.1f}"
                                              if cublas[0] else f"{'-':>8}"), flush=True)
        record(m, "previous", {}, PREVIOUS, inputs, cublas)
        for name, settings in variants(m):
            record(m, name, settings, W, inputs, cublas)
    for key, value in DEFAULTS.items():
        setattr(W, key, value)

    print("\nfastest fast-path row per batch:")
    best = {}
    for m in batches:
        timed = [r for r in rows if r["M"] == m and r["name"] != "previous" and r["ms"] is not None]
        if timed:
            best[m] = min(timed, key=lambda r: r["ms"])
            print(f"M={m:4d} {best[m]['name']:26s} {best[m]['ms'] * 1e3:8.1f} us {best[m]['ratio']:6.2f}x cuBLAS "
                  f"(do_bench {best[m]['do_bench_ratio']:.2f}x)")
    if best:
        print("set: " + "; ".join(settings_line(best)))
    if args.out:
        env = {"torch": torch.__version__, "triton": triton.__version__,
               "device": torch.cuda.get_device_name() if device == "cuda" else "cpu"}
        args.out.write_text(json.dumps({"environment": env, "defaults": DEFAULTS, "rows": rows}, indent=1))
    return 0


def settings_line(best: dict[int, dict]) -> list[str]:
    """The module constants of solutions/part05_quantization/w4a16.py that select the fastest rows."""
    out = []
    if 1 in best:
        out.append(f"GEMV_FOLD_ZERO = {best[1]['settings']['GEMV_FOLD_ZERO']}")
        out.append(f"GEMV_SPLIT_K = 2 if INTERPRETED else {best[1]['settings']['GEMV_SPLIT_K']}")
        out.append(f"GEMV_FUSED_SUM = {best[1]['settings'].get('GEMV_FUSED_SUM', False)}")
    swapped = [m for m in sorted(best) if m > 1 and best[m]["settings"]["GEMM_SWAP_AB_UP_TO_M"]]
    plain = [m for m in sorted(best) if m > 1 and not best[m]["settings"]["GEMM_SWAP_AB_UP_TO_M"]]
    if swapped or plain:  # the swap for batches up to the largest swapped winner below the smallest plain one
        below = [m for m in swapped if not plain or m < min(plain)]
        out.append(f"GEMM_SWAP_AB_UP_TO_M = {max(below) if below else 0}")
        if len(below) < len(swapped):  # e.g. plain at 16 but swapped at 128: a threshold cannot say so
            out.append(f"(the swap also won at batch {sorted(set(swapped) - set(below))}: compare the rows)")
    small = [m for m in sorted(best) if 1 < m <= 16]
    if small:
        out.append(f"GEMM_SPLIT_K = {best[small[-1]]['settings']['GEMM_SPLIT_K']}")
    return out


if __name__ == "__main__":
    sys.exit(main())
