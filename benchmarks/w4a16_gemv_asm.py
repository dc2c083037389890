"""An experiment for issue #16: the batch-1 W4A16 product with packed bf16x2 arithmetic (GPU only).

The reference's GEMV spends a shift, a LOP3 (16 + code as an fp32) and an FFMA per code. Here one PTX
block per 32-bit word (eight codes) does it two codes at a time: a LOP3
turns nibbles i and i + 4 into the bf16 pair (128 + code, 128 + code') (bf16's 128 has a unit last
place, so 0x4300 | code is 128 + code exactly), a bf16x2 subtraction of (128 + zero) leaves the exact
integers code - zero, and bf16x2 multiply-adds with the matching activation pairs sum the word's eight
products in bf16 (four roundings of 2^-9), added once into the fp32 accumulator times the row's scale.
sm_90 SASS of the loop (compiled on a CPU with triton's ptxas): 5.2-7.8 instructions per weight byte
at 16-64 rows a warp, against the reference's 8.0-11.9. Not the reference: timed by benchmarks/probe_l2_flush.py.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from solutions.part05_quantization.w4a16 import _split_k_sum_kernel, _sum_if_last, _tile_counters, _tile_range

def _word_dot(extract: str, subtract_zero: bool) -> tl.constexpr:
    """The PTX block of one word. $0: out (f32), $1: the word (eight codes), $2: (128 + zero) as a bf16
    pair, $3..$6: activation pairs (x_i, x_{i+4}) for i = 0..3 (x_i in the low half, as nibble i).
    ``extract``: the instruction that makes code pair i from the shifted word (c from t)."""
    lines = [".reg .b32 t, c0, c1, c2, c3, a, lo, hi;"]
    for i in range(4):
        source = "$1" if i == 0 else "t"
        if i:
            lines.append(f"shr.u32 t, $1, {4 * i};")
        lines.append(extract.format(c=f"c{i}", t=source))
    if subtract_zero:
        lines += [f"sub.rn.bf16x2 c{i}, c{i}, $2;" for i in range(4)]
    lines += ["mul.rn.bf16x2 a, c0, $3;"] + [f"fma.rn.bf16x2 a, c{i}, ${i + 3}, a;" for i in range(1, 4)]
    lines += ["shl.b32 lo, a, 16;", "and.b32 hi, a, 0xFFFF0000;", "add.f32 $0, lo, hi;"]
    return tl.constexpr("{\n" + "\n".join(lines) + "\n}")


# (128 + code) pairs, then code - zero exactly
_WORD_DOT = _word_dot("lop3.b32 {c}, {t}, 0x000F000F, 0x43004300, 0xEA;", subtract_zero=True)
# SUBNORMAL: the codes as bf16 subnormals (the nibble alone: code * 2^-133, no bias to subtract), times
# activation pairs scaled by 2^120 (products code * x * 2^-13, normal); the zero point comes out per row and
# tile, zero * sum x, as the reference's GEMV folds it. Four instructions a word fewer, if the bf16x2 FMA keeps
# subnormal inputs (the probe's correctness check says).
_WORD_DOT_SUBNORMAL = _word_dot("and.b32 {c}, {t}, 0x000F000F;", subtract_zero=False)


@triton.jit
def _scaled_2_120(a):
    """A bf16 pair times (2^120, 2^120)."""
    return tl.inline_asm_elementwise("{ .reg .b32 m; mov.b32 m, 0x7B807B80; mul.rn.bf16x2 $0, $1, m; }", "=r,r", [a],
                                     dtype=tl.int32, is_pure=True, pack=1)


@triton.jit
def _low_halves(a, b):
    """(low half of a, low half of b) as one 32-bit word (prmt 0x5410)."""
    return tl.inline_asm_elementwise("prmt.b32 $0, $1, $2, 0x5410;", "=r,r,r", [a, b], dtype=tl.int32,
                                     is_pure=True, pack=1)


@triton.jit
def _high_halves(a, b):
    """(high half of a, high half of b) as one 32-bit word (prmt 0x7632)."""
    return tl.inline_asm_elementwise("prmt.b32 $0, $1, $2, 0x7632;", "=r,r,r", [a, b], dtype=tl.int32,
                                     is_pure=True, pack=1)


def _configs():
    tiles = [(16, 1, 6), (32, 1, 6), (64, 1, 6), (64, 2, 6), (128, 4, 4)]
    return [triton.Config({"BLOCK_N": bn, "STAGES": stages}, num_warps=warps) for bn, warps, stages in tiles]


@triton.autotune(configs=_configs(), key=["N", "K", "SPLIT_K", "SUBNORMAL", "X_VECTOR", "FUSED"])
@triton.jit
def _gemv_bf16x2_kernel(x_ptr, w_ptr, scale_ptr, zero_ptr, out_ptr, N, K, stride_wn, stride_sn, stride_zn,
                        stride_os, SPLIT_K, final_ptr, count_ptr, GROUP: tl.constexpr, BLOCK_K: tl.constexpr,
                        SUBNORMAL: tl.constexpr, X_VECTOR: tl.constexpr, FUSED: tl.constexpr,
                        BLOCK_N: tl.constexpr, STAGES: tl.constexpr):
    """x_ptr: the activations as int32 pairs (K / 2), w_ptr: the codes as int32 words (N, K / 8).
    FUSED: the row tile's last program sums the partials into final_ptr (the reference's GEMV_FUSED_SUM)."""
    WORDS: tl.constexpr = BLOCK_K // 8
    split = tl.program_id(1)
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    in_n = offs_n < N
    offs_q = tl.arange(0, WORDS)
    t_begin, t_end = _tile_range(K, BLOCK_K, SPLIT_K, split)
    acc = tl.zeros((BLOCK_N, WORDS), dtype=tl.float32)
    zero_terms = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for t in tl.range(t_begin, t_end, num_stages=STAGES):
        k0 = t * BLOCK_K
        words = tl.load(w_ptr + offs_n[:, None] * stride_wn + (k0 // 8 + offs_q)[None, :], mask=in_n[:, None], other=0)
        group = k0 // GROUP
        scale = tl.load(scale_ptr + offs_n * stride_sn + group, mask=in_n, other=0.0).to(tl.float32)
        zero = tl.load(zero_ptr + offs_n * stride_zn + group, mask=in_n, other=0).to(tl.int32)
        zz = (0x4300 | zero) * 0x10001  # (128 + zero, 128 + zero) as bf16 bits
        xw = x_ptr + k0 // 2 + 4 * offs_q  # x[8q .. 8q + 7] as four pairs (x0 x1) (x2 x3) (x4 x5) (x6 x7)
        if X_VECTOR:  # one 16-byte load per word's eight activations, split into its four pairs
            quad = tl.reshape(tl.load(xw[:, None] + tl.arange(0, 4)[None, :]), (WORDS, 2, 2))
            even, odd = tl.split(quad)  # quad[q, a, b] is pair 2a + b: even = pairs 0, 2; odd = 1, 3
            r0, r2 = tl.split(even)
            r1, r3 = tl.split(odd)
        else:
            r0, r1, r2, r3 = tl.load(xw), tl.load(xw + 1), tl.load(xw + 2), tl.load(xw + 3)
        p0, p1 = _low_halves(r0, r2), _high_halves(r0, r2)  # (x0 x4), (x1 x5)
        p2, p3 = _low_halves(r1, r3), _high_halves(r1, r3)  # (x2 x6), (x3 x7)
        if SUBNORMAL:
            p0, p1, p2, p3 = _scaled_2_120(p0), _scaled_2_120(p1), _scaled_2_120(p2), _scaled_2_120(p3)
            part = tl.inline_asm_elementwise(_WORD_DOT_SUBNORMAL, "=r,r,r,r,r,r,r",
                                             [words, zz[:, None], p0[None, :], p1[None, :], p2[None, :], p3[None, :]],
                                             dtype=tl.float32, is_pure=True, pack=1)
            acc += part * (scale * 8192.0)[:, None]  # 2^13
            x_sum = tl.sum(tl.load(x_ptr.to(tl.pointer_type(tl.bfloat16)) + k0 + tl.arange(0, BLOCK_K)).to(tl.float32),
                           axis=0)
            zero_terms += scale * zero.to(tl.float32) * x_sum
        else:
            part = tl.inline_asm_elementwise(_WORD_DOT, "=r,r,r,r,r,r,r",
                                             [words, zz[:, None], p0[None, :], p1[None, :], p2[None, :], p3[None, :]],
                                             dtype=tl.float32, is_pure=True, pack=1)
            acc += part * scale[:, None]
    tl.store(out_ptr + split * stride_os + offs_n, tl.sum(acc, axis=1) - zero_terms, mask=in_n)
    if FUSED:
        _sum_if_last(out_ptr, final_ptr, count_ptr + tl.program_id(0), offs_n, in_n, SPLIT_K, stride_os, 1, 1)


def w4a16_matmul(x, qweight, scales, zeros, group_size, subnormal=False, split_k=4, x_vector=False, fused=False):
    """Batch 1, bf16, groups of 128 (the challenge's batch-1 shape) only; ``fused``: no second kernel."""
    assert x.shape[0] == 1 and x.dtype == torch.bfloat16 and group_size == 128
    K, N = x.shape[1], qweight.shape[0]
    xp = x.contiguous().view(torch.int32)
    w = qweight.contiguous().view(torch.int32)
    partial = torch.empty((split_k, N), dtype=torch.float32, device=x.device)
    out = torch.empty((1, N), dtype=x.dtype, device=x.device)
    _gemv_bf16x2_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), split_k)](
        xp, w, scales, zeros, partial, N, K, w.stride(0), scales.stride(0), zeros.stride(0), partial.stride(0),
        split_k, out, _tile_counters(x.device, N), GROUP=group_size, BLOCK_K=128, SUBNORMAL=subnormal,
        X_VECTOR=x_vector, FUSED=fused and split_k > 1)
    if not (fused and split_k > 1):
        _split_k_sum_kernel[(triton.cdiv(N, 1024),)](partial, out, 1, N, split_k, out.stride(0), out.stride(1),
                                                     BLOCK=1024)
    return out
