"""Instructions per weight byte in the K loop of the W4A16 kernels, compiled for sm_90 without a GPU.

    python3 benchmarks/sass_w4a16.py            # about 20 s on a CPU: triton's own ptxas and nvdisasm

Compiles the fast GEMV and GEMM of solutions/part05_quantization/w4a16.py and the previous reference's
GEMV (benchmarks/w4a16_previous.py) for an H100/H200 (sm_90) at the challenge's shape (N = K = 8192,
group 128, bf16, the arguments specialised as a launch would: unit strides, multiples of 16), then
counts the SASS instructions of each kernel's main loop (the body of its longest backward branch)
and divides by the weight bytes one thread handles per iteration. A proxy, not a timing: it says how
much work per byte the loop issues, which bounds an instruction-bound kernel (the H200 issues about
1.0e12 warp instructions per second: 33.5 MB of int4 weights at 10 instructions per byte is 10.5 us).
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"  # compile, do not interpret (nothing is launched)
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import solutions.part05_quantization.w4a16 as W  # noqa: E402

BIN = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
N = K = 8192
ROWS = {"scale_ptr": "*bf16", "zero_ptr": "*u8", "stride_sn": K // 128, "stride_sg": 1, "stride_zn": K // 128,
        "stride_zg": 1, "N": N, "K": K, "stride_xk": 1, "stride_on": 1, "float_16": W.FLOAT_16, "SPLIT_K": 2}


def compiled(kernel, args: dict, constexprs: dict, warps: int):
    """The cubin of ``kernel`` (maybe autotuned) with ``args`` specialised as the launcher would."""
    fn = kernel.fn if hasattr(kernel, "configs") else kernel
    signature, consts, attrs = {}, dict(constexprs), {}
    for i, name in enumerate(fn.arg_names):
        value = "constexpr" if name in constexprs else args[name]
        if isinstance(value, str):
            signature[name] = value
            if value.startswith("*"):
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif value == 1:
            signature[name], consts[name] = "constexpr", 1
        else:
            signature[name] = "i32"
            if value % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    source = ASTSource(fn=fn, signature=signature, constexprs=consts, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 1})


def loop_instructions(cubin: bytes) -> tuple[int, dict[str, int]]:
    """(instructions, count per opcode) in the longest loop of the kernel's SASS."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([str(BIN / "nvdisasm"), "-c", f.name], capture_output=True, text=True, check=True).stdout
    lines = [ln for ln in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]+\*/", ln) or ln.startswith(".L")]
    labels = {ln.rstrip(":"): i for i, ln in enumerate(lines) if ln.startswith(".L")}
    span = (0, 0)
    for i, ln in enumerate(lines):
        target = re.search(r"BRA `\((\.L_x_\d+)\)", ln)
        if target and labels.get(target.group(1), i) < i:
            span = max(span, (i - labels[target.group(1)], labels[target.group(1)]))
    ops: dict[str, int] = {}
    for ln in lines[span[1]:span[1] + span[0] + 1]:
        op = re.match(r"\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", ln)
        if op:
            ops[op.group(1)] = ops.get(op.group(1), 0) + 1
    return sum(ops.values()), ops


def report(name: str, kernel, args: dict, constexprs: dict, warps: int, bytes_per_iteration: int) -> None:
    count, ops = loop_instructions(compiled(kernel, args, constexprs, warps).asm["cubin"])
    per_thread = bytes_per_iteration / (32 * warps)
    top = " ".join(f"{op}:{n}" for op, n in sorted(ops.items(), key=lambda kv: -kv[1])[:6])
    print(f"{name:34s} {count:5d} instr / {per_thread:4.0f} B = {count / per_thread:5.1f} per byte   {top}", flush=True)


def main() -> int:
    spec = importlib.util.spec_from_file_location("w4a16_previous", ROOT / "benchmarks" / "w4a16_previous.py")
    previous = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(previous)
    gemv = {**ROWS, "x_ptr": "*bf16", "w_ptr": "*i32", "out_ptr": "*fp32", "stride_wn": K // 8, "stride_wq": 1,
            "stride_os": N}
    for fold in (True, False):
        for bn, warps, stages in ((16, 1, 6), (32, 1, 6), (64, 1, 6), (64, 4, 6)):
            report(f"fast GEMV fold={fold} {bn} rows {warps} warps", W._w4a16_gemv_fast_kernel, gemv,
                   {"GROUP": 128, "BLOCK_K": 128, "FOLD_ZERO": fold, "BLOCK_N": bn, "STAGES": stages}, warps, bn * 64)
    gemm = {**ROWS, "x_ptr": "*bf16", "q_ptr": "*u8", "out_ptr": "*fp32", "stride_qn": K // 2, "stride_qk": 1,
            "M": 16, "stride_xm": K, "stride_os": 16 * N, "stride_om": N}
    for swap in (True, False):
        for bm, bn, warps in ((16, 64, 4), (16, 128, 4), (128, 256, 8)):
            report(f"fast GEMM swap={swap} {bm}x{bn} {warps} warps", W._w4a16_gemm_fast_kernel, gemm,
                   {"GROUP": 128, "BLOCK_K": 128, "SWAP_AB": swap, "BLOCK_M": bm, "BLOCK_N": bn}, warps, bn * 64)
    old = {**ROWS, "x_ptr": "*bf16", "q_ptr": "*u8", "out_ptr": "*fp32", "stride_qn": K // 2, "stride_qk": 1,
           "GROUP": 128, "stride_os": N}
    for bn, bk, warps in ((32, 256, 4), (128, 128, 4)):
        report(f"previous GEMV {bn}x{bk} {warps} warps", previous._w4a16_gemv_kernel, old,
               {"BLOCK_N": bn, "BLOCK_K": bk}, warps, bn * bk // 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
