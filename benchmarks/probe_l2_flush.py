"""Does the L2 flush's dirty data count against a memory-bound kernel? (issue #16, the W4A16 bars)

    python3 benchmarks/probe_l2_flush.py [--out FILE]   # a GPU (autotuning included); not yet run
    python3 benchmarks/probe_l2_flush.py --ncu          # one warmed-up batch-1 call between
                                                        # cudaProfilerStart/Stop, for ncu

The harness's CudaTimer flushes L2 before each sample by *writing* a buffer of twice its size: the
cache is then full of dirty lines, and the timed kernel's first reads evict them, writing them back
to HBM inside the timed window. A kernel that reads 35 MB (int4 weights) then pays for up to its own
footprint in write-backs; cuBLAS reading 134 MB (bf16 weights) pays the same 50-60 MB, a smaller
share. This times, at the W4A16 challenge's shapes (N = K = 8192, group 128, bf16): cuBLAS, the
reference solution, and a plain read of the packed weight (a floor: one int32 load and add per
word), each after (a) the harness's write flush, (b) a read of a buffer of the same size instead
(L2 left holding clean lines), (c) no flush. Median of single calls, device time only.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import solutions.part05_quantization.w4a16 as W  # noqa: E402
from benchmarks import w4a16_gemv_asm as ASM  # noqa: E402
from infralab.perf.harness import CudaTimer  # noqa: E402
from infralab.perf.run import check_outputs  # noqa: E402
from infralab.perf.workloads import WORKLOADS  # noqa: E402


class CleanFlushTimer(CudaTimer):
    """A read of the flush buffer instead of a write: it evicts as much, and the dirty lines (earlier
    outputs) are written back here, before the timed window; L2 is left holding clean lines."""

    def flush_l2(self) -> None:
        self._sink = self._flush.view(-1, 4096).amax(dim=0)


def call_asm(inputs: dict, **settings):
    """benchmarks/w4a16_gemv_asm.py on the workload's inputs (settings: subnormal, split_k, x_vector)."""
    return ASM.w4a16_matmul(**{k: inputs[k] for k in ("x", "qweight", "scales", "zeros", "group_size")}, **settings)


def fused_reference(inputs: dict):
    """The reference with GEMV_FUSED_SUM (its split-K partials summed by the GEMV kernel's last program)."""
    saved, W.GEMV_FUSED_SUM = W.GEMV_FUSED_SUM, True
    try:
        return WORKLOADS["w4a16"].call(W, inputs, WORKLOADS["w4a16"].options)
    finally:
        W.GEMV_FUSED_SUM = saved


class NoFlushTimer(CudaTimer):
    def flush_l2(self) -> None:
        pass


@triton.jit
def _read_words(words_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(words_ptr + offs, mask=offs < n, other=0), axis=0))


def read_floor(words: torch.Tensor, out: torch.Tensor, block: int = 4096):
    n = words.numel()
    _read_words[(triton.cdiv(n, block),)](words, out, n, BLOCK=block, num_warps=8)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--ncu", action="store_true")
    args = ap.parse_args()
    wl = WORKLOADS["w4a16"]
    rows = []
    timers = {"write flush (harness)": CudaTimer(), "read flush": CleanFlushTimer(), "no flush": NoFlushTimer()}
    for m in (1, 16, 128):
        inputs = wl.make_inputs({"M": m, "N": 8192, "K": 8192}, "bfloat16", wl.options, 0, "cuda")
        words = inputs["qweight"].view(torch.int32).reshape(-1)
        sink = torch.empty(triton.cdiv(words.numel(), 4096), dtype=torch.int32, device="cuda")
        runners = {
            "cublas": lambda: wl.baselines["cublas"](inputs, wl.options),  # noqa: B023
            "reference": lambda: wl.call(W, inputs, wl.options),  # noqa: B023
            "read packed weight": lambda: read_floor(words, sink),  # noqa: B023
        }
        problem = check_outputs(wl, runners["reference"](), inputs, wl.options)
        if m == 1 and not args.ncu:  # the reference with GEMV_FUSED_SUM, where it is right
            fused_problem = check_outputs(wl, fused_reference(inputs), inputs, wl.options)
            print("reference fused", fused_problem or "correct", flush=True)
            if not fused_problem:
                runners["reference fused"] = lambda: fused_reference(inputs)  # noqa: B023
        if m == 1 and not args.ncu:  # benchmarks/w4a16_gemv_asm.py, where it compiles and is right
            for subnormal, split, xv, fused in ((False, 4, False, False), (False, 4, True, False),
                                                (False, 8, True, False), (False, 16, True, False),
                                                (True, 8, True, False), (True, 16, True, False),
                                                (False, 4, True, True), (False, 8, True, True), (False, 16, True, True)):
                name = f"asm{' subnormal' if subnormal else ''}{' xv' if xv else ''} split {split}{' fused' if fused else ''}"
                run = (lambda s=subnormal, k=split, v=xv, f=fused: call_asm(inputs, subnormal=s, split_k=k,  # noqa: B023
                                                                             x_vector=v, fused=f))
                try:
                    asm_problem = check_outputs(wl, run(), inputs, wl.options)
                except Exception as exc:  # noqa: BLE001
                    asm_problem = f"{type(exc).__name__}: {str(exc)[:400]}"
                print(name, asm_problem or "correct", getattr(ASM._gemv_bf16x2_kernel, "best_config", None), flush=True)
                if not asm_problem:
                    runners[name] = run
        if args.ncu:
            if m == 1:
                calls = [runners["reference"]]
                try:
                    asm = (lambda: call_asm(inputs, split_k=8, x_vector=True))  # noqa: B023
                    asm()
                    calls.append(asm)
                except Exception as exc:  # noqa: BLE001
                    print("bf16x2 asm GEMV failed:", type(exc).__name__, str(exc)[:400])
                for call in calls:
                    for _ in range(3):
                        call()
                torch.cuda.synchronize()
                torch.cuda.cudart().cudaProfilerStart()
                for call in calls:
                    call()
                torch.cuda.synchronize()
                torch.cuda.cudart().cudaProfilerStop()
                print("profiled one batch-1 call of each; configs", W._w4a16_gemv_fast_kernel.best_config,
                      getattr(ASM._gemv_bf16x2_kernel, "best_config", None), problem)
            continue
        for name, run in runners.items():
            run()
            for flush, timer in timers.items():
                us = 1e6 * statistics.median(timer.time_batch(lambda i: run(), 1, i) for i in range(25))  # noqa: B023
                rows.append({"M": m, "candidate": name, "flush": flush, "us": us, "problem": problem})
                print(f"M={m:4d} {name:20s} {flush:22s} {us:8.1f} us", flush=True)
        for flush in timers:
            t = {r["candidate"]: r["us"] for r in rows if r["M"] == m and r["flush"] == flush}
            for name in t:
                print(f"M={m:4d} cuBLAS / {name} after {flush}: {t['cublas'] / t[name]:.2f}x", flush=True)
    if args.out and rows:
        env = {"torch": torch.__version__, "triton": triton.__version__, "device": torch.cuda.get_device_name(),
               "l2_bytes": timers["no flush"].l2_bytes, "flush_bytes": timers["no flush"].flush_bytes}
        args.out.write_text(json.dumps({"environment": env, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
