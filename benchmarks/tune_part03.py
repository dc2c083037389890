"""Launch-parameter sweeps for the part03 reference kernels on a GPU (exploration, not grading).

    python3 benchmarks/tune_part03.py [--out DIR]

For each kernel, times variants of block size / num_warps / num_stages / splits with
triton.testing.do_bench (median, L2 cleared between runs) on the challenge shapes, after a
correctness check of each variant, and prints GB/s or TFLOP/s per variant. The chosen settings go
into solutions/part03_kernels; the graded figures come from h200_suite.py / infralab bench.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
import triton
import triton.testing

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import solutions.part03_kernels.decode_attention as D  # noqa: E402
import solutions.part03_kernels.flash_attention as F  # noqa: E402
import solutions.part03_kernels.matmul as MM  # noqa: E402
import solutions.part03_kernels.rmsnorm as R  # noqa: E402
import solutions.part03_kernels.softmax as S  # noqa: E402
import solutions.part03_kernels.vector_add as V  # noqa: E402

RESULTS: list[dict] = []


def bench(name: str, variant: dict, fn, amount: float, unit: str, check=None) -> None:
    try:
        fn()
        torch.cuda.synchronize()
        if check is not None and not check():
            RESULTS.append({"kernel": name, **variant, "error": "wrong result"})
            print(f"{name} {variant}: WRONG", flush=True)
            return
        ms = triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median")
    except Exception as e:  # noqa: BLE001 - a variant that does not compile is reported, not fatal
        RESULTS.append({"kernel": name, **variant, "error": f"{type(e).__name__}: {str(e)[:120]}"})
        print(f"{name} {variant}: {type(e).__name__}: {str(e)[:120]}", flush=True)
        return
    rate = amount / (ms * 1e-3) / (1e9 if unit == "GB/s" else 1e12)
    RESULTS.append({"kernel": name, **variant, "ms": ms, unit: rate})
    print(f"{name} {variant}: {ms:.4f} ms  {rate:,.1f} {unit}", flush=True)


def close(a, b, tol=3e-2):
    return bool(torch.allclose(a.float(), b.float(), rtol=tol, atol=tol))


def sweep_vector_add():
    n = 2**28
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    ref = x + y
    for block in (1024, 2048, 4096, 8192, 16384):
        for warps in (4, 8, 16):
            grid = (triton.cdiv(n, block),)
            bench("vector_add", {"BLOCK": block, "warps": warps},
                  lambda: V.add_kernel[grid](x, y, out, n, BLOCK_SIZE=block, num_warps=warps),
                  3 * n * 4, "GB/s", lambda: torch.equal(out, ref))


def sweep_rmsnorm():
    m, n = 32768, 4096
    x, r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16), torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    out, rout = torch.empty_like(x), torch.empty_like(x)
    ref, _ = R.fused_add_rmsnorm(x, r, w)
    for warps in (2, 4, 8, 16, 32):
        for stages in (1, 2, 3):
            bench("rmsnorm", {"warps": warps, "stages": stages},
                  lambda: R.fused_add_rmsnorm_kernel[(m,)](x, r, w, out, rout, n, 1e-6, BLOCK_SIZE=n,
                                                           num_warps=warps, num_stages=stages),
                  4 * m * n * 2 + 2 * n, "GB/s", lambda: close(out, ref))


def sweep_softmax():
    for m, n in ((32768, 4096), (2048, 131072)):
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16) * 2
        out = torch.empty_like(x)
        ref = torch.softmax(x.float(), -1).to(x.dtype)
        for block in sorted({min(n, b) for b in (2048, 4096, 8192, 16384, 32768)}):
            for warps in (8, 16, 32):
                bench("softmax", {"M": m, "N": n, "BLOCK": block, "warps": warps},
                      lambda: S.softmax_kernel[(m,)](x, out, n, BLOCK_SIZE=block, NUM_BLOCKS=triton.cdiv(n, block),
                                                     num_warps=warps),
                      2 * m * n * 2, "GB/s", lambda: close(out, ref, 1e-2))


def sweep_decode():
    B, HQ, HKV, S_, Dh = 64, 32, 8, 8192, 128
    q = torch.randn(B, HQ, Dh, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, HKV, S_, Dh, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(B, HKV, S_, Dh, device="cuda", dtype=torch.bfloat16)
    lens = torch.full((B,), S_, dtype=torch.int32, device="cuda")
    ref, _ = D.decode_attention(q, k, v, lens)
    amount = 2 * B * HKV * S_ * Dh * 2 + 2 * B * HQ * Dh * 2
    group = HQ // HKV
    scale = 1 / math.sqrt(Dh)
    for splits in (2, 4, 8, 16):
        for block_n in (64, 128):
            for warps, stages in ((4, 2), (4, 3), (8, 3)):
                split_len = triton.cdiv(triton.cdiv(S_, splits), block_n) * block_n
                mid_o = torch.empty((B, HQ, splits, Dh), dtype=torch.float32, device="cuda")
                mid_lse = torch.empty((B, HQ, splits), dtype=torch.float32, device="cuda")
                o = torch.empty_like(q)
                lse = torch.empty((B, HQ), dtype=torch.float32, device="cuda")

                def run():
                    D.decode_split_kernel[(B * HKV, splits)](
                        q, k, v, lens, mid_o, mid_lse, q.stride(0), q.stride(1), *k.stride()[:3], *v.stride()[:3],
                        HKV, splits, split_len, scale, GROUP=group, BLOCK_H=max(16, triton.next_power_of_2(group)),
                        BLOCK_N=block_n, HEAD_DIM=Dh, num_warps=warps, num_stages=stages)
                    D.decode_combine_kernel[(B * HQ,)](mid_o, mid_lse, o, lse, splits,
                                                       BLOCK_S=triton.next_power_of_2(splits), HEAD_DIM=Dh)
                bench("decode", {"splits": splits, "BLOCK_N": block_n, "warps": warps, "stages": stages}, run,
                      amount, "GB/s", lambda: close(o, ref, 1e-2))


def autotuned_choices():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for size in (4096, 8192):
        bench("matmul", {"size": size}, lambda: MM.matmul(a[:size, :size], a[:size, :size]), 2 * size**3, "TFLOP/s")
        print("matmul best config", size, MM.matmul_kernel.best_config, flush=True)
    q = torch.randn(4, 32, 4096, 128, device="cuda", dtype=torch.bfloat16)
    for causal in (False, True):
        bench("flash", {"causal": causal}, lambda: F.flash_attention(q, q, q, causal=causal),
              4 * 4 * 32 * 4096**2 * 128 / (2 if causal else 1), "TFLOP/s")
        print("flash best config", causal, F.flash_attention_kernel.best_config, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", action="append")
    args = ap.parse_args()
    sweeps = {"vector_add": sweep_vector_add, "rmsnorm": sweep_rmsnorm, "softmax": sweep_softmax,
              "decode": sweep_decode, "autotuned": autotuned_choices}
    for name, fn in sweeps.items():
        if not args.only or name in args.only:
            fn()
            torch.cuda.empty_cache()
    if args.out:
        Path(args.out, "tune.json").write_text(json.dumps(RESULTS, indent=1))
    best: dict = {}
    for r in RESULTS:
        unit = "GB/s" if "GB/s" in r else "TFLOP/s"
        key = (r["kernel"], r.get("M"), r.get("size"), r.get("causal"))
        if unit in r and (key not in best or r[unit] > best[key][unit]):
            best[key] = r
    print("BEST:")
    for r in best.values():
        print(" ", r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
