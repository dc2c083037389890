"""W4A16: a fused dequantise-and-multiply Triton kernel for int4 group-quantised weights (textbook 08 §8.5).

Reference solution. See exercises/part05_quantization/w4a16.py for the specification.

Two paths. Groups of a power of two >= 32 (the challenge's 128) take the fast kernels; other group
sizes the generic ones. The generic kernels reached only 0.58x / 0.47x / 0.18x cuBLAS bf16 at batch
1 / 16 / 128 on an H200 (N = K = 8192): batch 1 moved 35 MB in 77 us (~450 GB/s of ~4.8 TB/s), bound by
instructions (about 60 per weight byte in the sm_90 SASS of its loop: I2F conversions, the tl.join
interleave, a scale and zero per element) and by loads never prefetched. The fast kernels: every K
tile lies in one group (one scale and zero per row per tile, no K mask); the codes stay in the packed
order (no interleaving); a code becomes a float without I2F (the nibble moved under the exponent bits
of 16.0 reads as 16 + code, exactly); batch 1 reads 8 codes per int32 word, folds the zero point out
of the products and prefetches with the K loop's num_stages (8-13 instructions per byte); the GEMM
dequantises with one FMA per code and issues two tensor-core dots per tile (even and odd k), chained
through the accumulator (12-16 per byte). benchmarks/sass_w4a16.py counts them, tune_w4a16.py times them.
中文：组大小为 ≥32 的 2 的幂时走快速路径：每个 K 块只落在一个组内；不交织半字节；把半字节放到 16.0 的指数位下，
按位得到 16 + code，代替整数转浮点；batch 1 按 int32 字读 8 个码字、把零点移出乘积、K 循环用 cp.async 预取；
GEMM 每个码字一次 FMA 反量化，每块两次 tl.dot。每字节指令数约为旧版的 1/5～1/7。
"""
from __future__ import annotations

import os

if "TRITON_INTERPRET" not in os.environ:  # no GPU: run kernels under the interpreter (before triton loads)
    import torch as _torch

    if not _torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


def _configs() -> list[triton.Config]:
    """Tiles for batches of 2 and more on a GPU (batch 1 takes the GEMV kernel); one small tile under
    the CPU interpreter."""
    if INTERPRETED:
        return [triton.Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=1)]
    tiles = [  # (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps)
        (16, 64, 128, 4, 4), (16, 128, 128, 4, 4), (16, 64, 256, 3, 4), (16, 128, 256, 3, 8),
        (32, 64, 128, 4, 4), (64, 64, 128, 4, 4), (64, 128, 128, 3, 8), (128, 128, 64, 3, 8),
        (128, 128, 128, 3, 8), (128, 256, 64, 3, 8),
    ]
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_stages=stages, num_warps=warps)
            for bm, bn, bk, stages, warps in tiles]


def _gemv_configs() -> list[triton.Config]:
    """Batch-1 tiles: many programs with many loads in flight (the call reads 0.52 bytes per weight)."""
    if INTERPRETED:
        return [triton.Config({"BLOCK_N": 32, "BLOCK_K": 32}, num_warps=1)]
    tiles = [(32, 256, 4, 4), (64, 256, 4, 4), (64, 128, 4, 4), (32, 512, 3, 4), (128, 128, 4, 4), (64, 512, 3, 8)]
    return [triton.Config({"BLOCK_N": bn, "BLOCK_K": bk}, num_stages=stages, num_warps=warps)
            for bn, bk, stages, warps in tiles]


@triton.jit
def _dequantized_tile(q_ptr, scale_ptr, zero_ptr, offs_n, k0, k_end, GROUP,
                      stride_qn, stride_qk, stride_sn, stride_sg, stride_zn, stride_zg,
                      N, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The weight tile (BLOCK_N, BLOCK_K) for inputs k0 .. k0 + BLOCK_K, dequantised in fp32.

    The packed bytes are read row by row along K (contiguous: byte p of row n holds k = 2p in its low
    nibble and k = 2p + 1 in its high one); the nibbles are interleaved back into k order."""
    HALF: tl.constexpr = BLOCK_K // 2
    offs_p = k0 // 2 + tl.arange(0, HALF)
    in_n = offs_n < N
    packed = tl.load(q_ptr + offs_n[:, None] * stride_qn + offs_p[None, :] * stride_qk,
                     mask=in_n[:, None] & (2 * offs_p < k_end)[None, :], other=0).to(tl.int32)  # (BLOCK_N, HALF)
    codes = tl.reshape(tl.join(packed & 0xF, (packed >> 4) & 0xF), (BLOCK_N, BLOCK_K))          # k = 2p + nibble
    offs_k = k0 + tl.arange(0, BLOCK_K)
    mask = in_n[:, None] & (offs_k < k_end)[None, :]
    if GROUP % BLOCK_K == 0:  # the whole tile lies in one group: one scale and zero point per row
        row_group = k0 // GROUP
        row_scale = tl.load(scale_ptr + offs_n * stride_sn + row_group * stride_sg, mask=in_n, other=0.0)
        row_zero = tl.load(zero_ptr + offs_n * stride_zn + row_group * stride_zg, mask=in_n, other=0)
        w = (codes.to(tl.float32) - row_zero.to(tl.float32)[:, None]) * row_scale.to(tl.float32)[:, None]
    else:
        g = offs_k[None, :] // GROUP
        scale = tl.load(scale_ptr + offs_n[:, None] * stride_sn + g * stride_sg, mask=mask, other=0.0)
        zero = tl.load(zero_ptr + offs_n[:, None] * stride_zn + g * stride_zg, mask=mask, other=0)
        w = (codes.to(tl.float32) - zero.to(tl.float32)) * scale.to(tl.float32)
    return tl.where(mask, w, 0.0)


@triton.autotune(configs=_configs(), key=["M", "N", "K", "SPLIT_K"])
@triton.jit
def w4a16_kernel(x_ptr, q_ptr, scale_ptr, zero_ptr, out_ptr, M, N, K, GROUP,
                 stride_xm, stride_xk, stride_qn, stride_qk, stride_sn, stride_sg, stride_zn, stride_zg,
                 stride_os, stride_om, stride_on, SPLIT_K,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Program (pid, split) computes one BLOCK_M x BLOCK_N tile of out[split] over its share of K."""
    pid, split = tl.program_id(0), tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = pid // num_pid_n, pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_per_split = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    k_begin = split * k_per_split
    k_end = tl.minimum(K, k_begin + k_per_split)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_begin, k_end, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (offs_k < k_end)[None, :], other=0.0)       # (BLOCK_M, BLOCK_K)
        w = _dequantized_tile(q_ptr, scale_ptr, zero_ptr, offs_n, k0, k_end, GROUP, stride_qn, stride_qk,
                              stride_sn, stride_sg, stride_zn, stride_zg, N, BLOCK_N, BLOCK_K)  # (BLOCK_N, BLOCK_K)
        acc = tl.dot(a, tl.trans(w.to(x_ptr.dtype.element_ty)), acc)                         # the activation dtype

    out_ptrs = out_ptr + split * stride_os + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.autotune(configs=_gemv_configs(), key=["N", "K", "SPLIT_K"])
@triton.jit
def _w4a16_gemv_kernel(x_ptr, q_ptr, scale_ptr, zero_ptr, out_ptr, N, K, GROUP, stride_xk,
                       stride_qn, stride_qk, stride_sn, stride_sg, stride_zn, stride_zg, stride_os, stride_on,
                       SPLIT_K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Batch 1: no tensor cores (a dot needs 16 rows); each program multiplies its dequantised
    (BLOCK_N, BLOCK_K) tiles by the activation row and sums along K in fp32."""
    pid_n, split = tl.program_id(0), tl.program_id(1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_per_split = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    k_begin = split * k_per_split
    k_end = tl.minimum(K, k_begin + k_per_split)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(k_begin, k_end, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + offs_k * stride_xk, mask=offs_k < k_end, other=0.0).to(tl.float32)
        w = _dequantized_tile(q_ptr, scale_ptr, zero_ptr, offs_n, k0, k_end, GROUP, stride_qn, stride_qk,
                              stride_sn, stride_sg, stride_zn, stride_zg, N, BLOCK_N, BLOCK_K)
        acc += tl.sum(w * a[None, :], axis=1)
    tl.store(out_ptr + split * stride_os + offs_n * stride_on, acc.to(out_ptr.dtype.element_ty), mask=offs_n < N)


@triton.jit
def _split_k_sum_kernel(partial_ptr, out_ptr, M, N, SPLIT_K, stride_om, stride_on, BLOCK: tl.constexpr):
    """out[m, n] = sum over splits of the fp32 partial sums (SPLIT_K, M, N), cast to out's dtype."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < M * N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, SPLIT_K):
        acc += tl.load(partial_ptr + s * M * N + offs, mask=inside, other=0.0)
    tl.store(out_ptr + (offs // N) * stride_om + (offs % N) * stride_on, acc.to(out_ptr.dtype.element_ty), mask=inside)


# --- the fast path: power-of-two groups of 32 and more -------------------------------------------

GEMV_FOLD_ZERO = True
"""Batch 1 with 16-bit activations (fp32 ones always dequantise: the fold's cancellation is above fp32's
tolerance), two ways to fill the (BLOCK_N, BLOCK_K / 8) fp32 accumulator. True: the zero point folded
out of the products, sum (code - zero) s x = s sum (16 + code) x - s (16 + zero) sum x, the first term
per code (one fused multiply-add), the second per row and tile. False: the dequantised weight per code
(two fused multiply-adds). benchmarks/tune_w4a16.py times both."""

GEMV_SPLIT_K = 2 if INTERPRETED else 4
"""Batch 1 on the fast path: K shared among this many programs per BLOCK_N rows (a second kernel adds
the fp32 partial sums). 1 is one launch; more puts more programs (and loads) in flight when BLOCK_N
rows per program leave SMs short of warps. benchmarks/tune_w4a16.py times 1, 2, 4 and 8; the interpreter
splits, so that the CPU tests take the split path. 4: the fastest on the H200 (34.3 us at N = K = 8192 against
51.5 us unsplit; benchmarks/results/h200-session7/h200-w4a16-tune.json)."""

GEMV_FUSED_SUM = False
"""Batch 1 split over K: True sums the fp32 partials in the GEMV kernel itself (the last of a row tile's
SPLIT_K programs to finish, counted by an atomic on a per-tile counter that it sets back to zero, adds
them and writes the output), False in a second kernel (one more launch: 4-6 us of a 30 us call in
ncu on an H100, benchmarks/results/h100-session11). benchmarks/tune_w4a16.py times both. The counters
are one int32 per row tile, kept per device and N (two calls of the same N on two streams at once
would share them)."""

GEMM_SWAP_AB_UP_TO_M = 0
"""Batches of 2 .. this many compute out^T = W x^T (the dequantised weight tile is the dot's first
operand, which Hopper's wgmma can take from registers, and a batch of 16 fills the narrow side);
larger batches out = x W^T (the weight tile goes through shared memory). benchmarks/tune_w4a16.py
times both at batch 16 and 128: 0 turns the swap off, 128 on for both. 0: at batch 16 with split 8 the plain
form was the faster on the H200 (55.1 against 71.9 us; h200-session7/h200-w4a16-tune.json)."""

GEMM_SPLIT_K: int | None = 8
"""Batches of 2 .. 16 on the fast path: K shared among this many programs per output tile, or None for
the heuristic ``_split_k`` (the generic kernels always use it). benchmarks/tune_w4a16.py times 1, 2, 4, 8;
8 was the fastest at batch 16 on the H200 (h200-session7/h200-w4a16-tune.json)."""


def _fast_path(group_size: int) -> bool:
    return group_size >= 32 and group_size & (group_size - 1) == 0


def _fast_block_k(group_size: int, cap: int) -> int:
    """A K tile inside one group. Under the interpreter 32, so that a group of 64 spans two tiles."""
    return min(group_size, 32 if INTERPRETED else cap)


def _fast_gemv_configs() -> list[triton.Config]:
    """Rows per program, warps, and tiles in the K loop's pipeline (cp.async prefetch)."""
    if INTERPRETED:
        return [triton.Config({"BLOCK_N": 16, "STAGES": 1}, num_warps=1)]
    # (BLOCK_N, warps, STAGES): a warp covers 8 rows of a 64-byte tile per pass, so BLOCK_N / (8 warps) rows
    # per thread share each activation load: sm_90 SASS of the loop, 11.9 / 9.1 / 8.0 instructions per
    # byte at 2 / 4 / 8 rows per thread (benchmarks/sass_w4a16.py); fewer programs, though (GEMV_SPLIT_K)
    tiles = [(8, 1, 8), (16, 1, 6), (32, 1, 6), (32, 1, 8), (32, 2, 6), (64, 1, 6), (64, 2, 6), (64, 4, 6)]
    return [triton.Config({"BLOCK_N": bn, "STAGES": stages}, num_warps=warps) for bn, warps, stages in tiles]


def _fast_gemm_configs() -> list[triton.Config]:
    if INTERPRETED:
        return [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=1)]
    tiles = [  # (BLOCK_M, BLOCK_N, num_stages, num_warps)
        (16, 64, 4, 4), (16, 128, 4, 4), (16, 256, 3, 8), (32, 128, 4, 4), (64, 64, 4, 4),
        (64, 128, 4, 4), (64, 256, 3, 8), (128, 128, 3, 8), (128, 256, 3, 8),
    ]
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=stages, num_warps=warps)
            for bm, bn, stages, warps in tiles]


def _rows_that_fit(configs: list[triton.Config], named_args: dict, **kwargs) -> list[triton.Config]:
    """No row tile taller than the batch needs (at batch 16 only the 16-row tiles are tried)."""
    rows = max(16, triton.next_power_of_2(named_args["M"]))
    return [c for c in configs if c.kwargs["BLOCK_M"] <= rows] or configs


@triton.jit
def _row_scale_zero(scale_ptr, zero_ptr, offs_n, in_n, k0, GROUP: tl.constexpr,
                    stride_sn, stride_sg, stride_zn, stride_zg):
    """The scale (fp32) and zero point of each row for the K tile starting at k0 (inside one group)."""
    group = k0 // GROUP
    scale = tl.load(scale_ptr + offs_n * stride_sn + group * stride_sg, mask=in_n, other=0.0).to(tl.float32)
    zero = tl.load(zero_ptr + offs_n * stride_zn + group * stride_zg, mask=in_n, other=0)
    return scale, zero


FLOAT_16 = 0x41800000
"""The bits of the fp32 16.0; a kernel argument, not a literal, so that the compiler keeps it in a
register and merges the mask and the or below into one LOP3 (two literals take two instructions)."""


@triton.jit
def _tile_range(K, BLOCK_K: tl.constexpr, SPLIT_K, split):
    """The K tiles [t_begin, t_end) of share ``split`` of SPLIT_K (the last shares may be short or empty)."""
    tiles = K // BLOCK_K
    tiles_per_split = tl.cdiv(tiles, SPLIT_K)
    t_begin = split * tiles_per_split
    return t_begin, tl.minimum(tiles, t_begin + tiles_per_split)


@triton.jit
def _biased_codes(packed, float_16):
    """16 + the low nibbles (k = 2p) and 16 + the high nibbles (k = 2p + 1) of packed bytes, as fp32 and
    without int-to-float conversions: the bits float_16 | code << 19 read as fp32 are 16 + code, exactly."""
    lo = (((packed << 19) & 0x780000) | float_16).to(tl.float32, bitcast=True)
    hi = (((packed << 15) & 0x780000) | float_16).to(tl.float32, bitcast=True)
    return lo, hi


@triton.jit
def _biased_zero(zero):
    """16 + the zero point, in fp32 (what is subtracted from the biased codes)."""
    return 16.0 + zero.to(tl.float32)


@triton.jit
def _biased_nibble(words, i: tl.constexpr, float_16):
    """16 + nibble i (bits 4i .. 4i + 3) of 32-bit words, as fp32, without int-to-float conversions: the
    nibble moved to bits 19..22 under the exponent bits of 16.0 (float_16) reads as 16 + code, exactly.
    Word q of a row is packed bytes 4q .. 4q + 3 (little-endian), so nibble i is the code of k = 8q + i
    (byte i // 2; its low nibble when i is even)."""
    SHIFT: tl.constexpr = 19 - 4 * i
    if SHIFT >= 0:
        moved = words << SHIFT
    else:
        moved = words >> (-SHIFT)
    return ((moved & 0x780000) | float_16).to(tl.float32, bitcast=True)


@triton.jit
def _dequantized_halves(packed, scale, zero, float_16):
    """The weights at k = 2p and k = 2p + 1 of packed bytes (BLOCK_N, HALF) of one group, (code - zero) * scale
    in fp32, one fused multiply-add per code: (16 + code) * scale - (16 + zero) * scale (exact for fp16 and
    bf16 scales: at most 16 significant bits)."""
    offset = (-_biased_zero(zero) * scale)[:, None]
    lo, hi = _biased_codes(packed, float_16)
    return lo * scale[:, None] + offset, hi * scale[:, None] + offset


@triton.autotune(configs=_fast_gemv_configs(), key=["N", "K", "GROUP", "FOLD_ZERO", "SPLIT_K", "FUSED_SUM"])
@triton.jit
def _w4a16_gemv_fast_kernel(x_ptr, w_ptr, scale_ptr, zero_ptr, out_ptr, N, K, stride_xk,
                            stride_wn, stride_wq, stride_sn, stride_sg, stride_zn, stride_zg, stride_os, stride_on,
                            SPLIT_K, float_16, final_ptr, stride_fn, count_ptr,
                            GROUP: tl.constexpr, BLOCK_K: tl.constexpr, FOLD_ZERO: tl.constexpr,
                            FUSED_SUM: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr):
    """Batch 1, program (pid, split) for BLOCK_N rows over its share of K (all of it when SPLIT_K is 1).
    The packed weight is read as 32-bit words (w_ptr: qweight viewed as int32, eight codes per word):
    nibble i of word q times x[k0 + 8q + i], accumulated in fp32 (BLOCK_N, BLOCK_K / 8) registers and
    reduced once at the end. The loop's own num_stages makes Triton prefetch the words (cp.async; the
    kernel-wide num_stages does not, for a loop without a dot): STAGES - 1 tiles per row in flight.
    FUSED_SUM: out_ptr holds the fp32 partials (SPLIT_K, N); the row tile's last program writes their sum
    to final_ptr (see GEMV_FUSED_SUM)."""
    WORDS: tl.constexpr = BLOCK_K // 8
    split = tl.program_id(1)
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    in_n = offs_n < N
    offs_q = tl.arange(0, WORDS)
    w_rows = w_ptr + offs_n[:, None] * stride_wn
    t_begin, t_end = _tile_range(K, BLOCK_K, SPLIT_K, split)
    acc2 = tl.zeros((BLOCK_N, WORDS), dtype=tl.float32)
    zero_terms = tl.zeros((BLOCK_N,), dtype=tl.float32)  # FOLD_ZERO: sum over tiles of s (16 + zero) sum x
    for t in tl.range(t_begin, t_end, num_stages=STAGES):
        k0 = t * BLOCK_K
        words = tl.load(w_rows + (k0 // 8 + offs_q)[None, :] * stride_wq, mask=in_n[:, None], other=0)
        scale, zero = _row_scale_zero(scale_ptr, zero_ptr, offs_n, in_n, k0, GROUP,
                                      stride_sn, stride_sg, stride_zn, stride_zg)
        offset = (-_biased_zero(zero) * scale)[:, None]
        products = tl.zeros((BLOCK_N, WORDS), dtype=tl.float32)
        x_sums = tl.zeros((WORDS,), dtype=tl.float32)
        for i in tl.static_range(8):
            x_i = tl.load(x_ptr + (k0 + 8 * offs_q + i) * stride_xk).to(tl.float32)
            code = _biased_nibble(words, i, float_16)
            if FOLD_ZERO:  # sum (16 + code) x now; s * (16 + zero) * sum x subtracted per row
                products += code * x_i[None, :]
                x_sums += x_i
            else:  # the dequantised weight (code - zero) * s times x
                acc2 += (code * scale[:, None] + offset) * x_i[None, :]
        if FOLD_ZERO:
            acc2 += scale[:, None] * products
            zero_terms += scale * _biased_zero(zero) * tl.sum(x_sums, axis=0)
    acc = tl.sum(acc2, axis=1) - zero_terms
    tl.store(out_ptr + split * stride_os + offs_n * stride_on, acc.to(out_ptr.dtype.element_ty), mask=in_n)
    if FUSED_SUM:
        _sum_if_last(out_ptr, final_ptr, count_ptr + tl.program_id(0), offs_n, in_n, SPLIT_K, stride_os,
                     stride_on, stride_fn)


@triton.jit
def _sum_if_last(partial_ptr, final_ptr, count_ptr, offs_n, in_n, SPLIT_K, stride_ps, stride_pn, stride_fn):
    """After this program stored its partial sums: the row tile's last program to get here adds the
    SPLIT_K partials (from L2: .cg) and writes them, cast, to final_ptr, then sets the counter back to
    zero for the next call. The barrier puts every thread's stores before the counter's release."""
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr, 1, sem="acq_rel", scope="gpu")
    if arrived == SPLIT_K - 1:
        total = tl.zeros(offs_n.shape, dtype=tl.float32)
        for s in range(0, SPLIT_K):
            total += tl.load(partial_ptr + s * stride_ps + offs_n * stride_pn, mask=in_n, other=0.0,
                             cache_modifier=".cg")
        tl.store(final_ptr + offs_n * stride_fn, total.to(final_ptr.dtype.element_ty), mask=in_n)
        tl.atomic_xchg(count_ptr, 0)


@triton.autotune(configs=_fast_gemm_configs(), key=["M", "N", "K", "GROUP", "SPLIT_K", "SWAP_AB"],
                 prune_configs_by={"early_config_prune": _rows_that_fit})
@triton.jit
def _w4a16_gemm_fast_kernel(x_ptr, q_ptr, scale_ptr, zero_ptr, out_ptr, M, N, K,
                            stride_xm, stride_xk, stride_qn, stride_qk, stride_sn, stride_sg, stride_zn, stride_zg,
                            stride_os, stride_om, stride_on, SPLIT_K, float_16,
                            GROUP: tl.constexpr, BLOCK_K: tl.constexpr,
                            SWAP_AB: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Program (pid, split) computes one BLOCK_M x BLOCK_N tile of out[split] over its share of the K
    tiles: per tile two tensor-core dots, x[:, even k] with the dequantised low nibbles and x[:, odd k]
    with the high ones (each rounded to the activation dtype, fp32 accumulation). SWAP_AB: the
    transposed tile (BLOCK_N, BLOCK_M) is accumulated, the weight tile being the dots' first operand."""
    HALF: tl.constexpr = BLOCK_K // 2
    pid, split = tl.program_id(0), tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = pid // num_pid_n, pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    in_m, in_n = offs_m < M, offs_n < N
    offs_j = tl.arange(0, HALF)
    x_rows = x_ptr + offs_m[:, None] * stride_xm
    q_rows = q_ptr + offs_n[:, None] * stride_qn
    t_begin, t_end = _tile_range(K, BLOCK_K, SPLIT_K, split)
    if SWAP_AB:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(t_begin, t_end):
        k0 = t * BLOCK_K
        x_even = tl.load(x_rows + (k0 + 2 * offs_j)[None, :] * stride_xk, mask=in_m[:, None], other=0.0)
        x_odd = tl.load(x_rows + (k0 + 2 * offs_j + 1)[None, :] * stride_xk, mask=in_m[:, None], other=0.0)
        packed = tl.load(q_rows + (k0 // 2 + offs_j)[None, :] * stride_qk, mask=in_n[:, None], other=0).to(tl.uint32)
        scale, zero = _row_scale_zero(scale_ptr, zero_ptr, offs_n, in_n, k0, GROUP,
                                      stride_sn, stride_sg, stride_zn, stride_zg)
        w_lo, w_hi = _dequantized_halves(packed, scale, zero, float_16)
        w_lo = w_lo.to(x_ptr.dtype.element_ty)
        w_hi = w_hi.to(x_ptr.dtype.element_ty)
        if SWAP_AB:
            acc = tl.dot(w_lo, tl.trans(x_even), acc)
            acc = tl.dot(w_hi, tl.trans(x_odd), acc)
        else:
            acc = tl.dot(x_even, tl.trans(w_lo), acc)
            acc = tl.dot(x_odd, tl.trans(w_hi), acc)
    out_tile = out_ptr + split * stride_os
    if SWAP_AB:
        tl.store(out_tile + offs_n[:, None] * stride_on + offs_m[None, :] * stride_om, acc.to(out_ptr.dtype.element_ty),
                 mask=in_n[:, None] & in_m[None, :])
    else:
        tl.store(out_tile + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, acc.to(out_ptr.dtype.element_ty),
                 mask=in_m[:, None] & in_n[None, :])


def _split_k(M: int, N: int, K: int, device: torch.device) -> int:
    """Small batches leave most SMs idle with one program per output tile: share K among programs."""
    if M > 16:
        return 1
    if INTERPRETED:
        return 2 if K >= 64 else 1  # exercises the split path on the CPU
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    tiles = triton.cdiv(N, 64)
    return max(1, min(4 * sms // tiles, K // 512, 16))


_TILE_COUNTERS: dict[tuple[str, int], torch.Tensor] = {}


def _tile_counters(device: torch.device, n: int) -> torch.Tensor:
    """GEMV_FUSED_SUM's arrival counters, one per row tile of the smallest BLOCK_N (8), zero between calls."""
    key = (str(device), n)
    if key not in _TILE_COUNTERS:
        _TILE_COUNTERS[key] = torch.zeros(triton.cdiv(n, 8), dtype=torch.int32, device=device)
    return _TILE_COUNTERS[key]


def _as_words(qweight: torch.Tensor) -> torch.Tensor:
    """qweight (N, K/2) uint8 viewed as int32 (N, K/8): word q of a row is bytes 4q .. 4q + 3 (a copy first
    when the rows are not contiguous 4-byte-aligned runs)."""
    if qweight.stride(1) != 1 or qweight.stride(0) % 4 or qweight.storage_offset() % 4:
        qweight = qweight.clone(memory_format=torch.contiguous_format)
    return qweight.view(torch.int32)


def w4a16_matmul(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor,
                 group_size: int) -> torch.Tensor:
    if x.dim() != 2 or qweight.dim() != 2 or qweight.dtype != torch.uint8:
        raise ValueError(f"expected x (M, K) and a uint8 qweight (N, K/2), got {tuple(x.shape)} and "
                         f"{tuple(qweight.shape)} {qweight.dtype}")
    (M, K), N = x.shape, qweight.shape[0]
    if K != 2 * qweight.shape[1] or group_size <= 0 or K % group_size:
        raise ValueError(f"K = {K} must be 2 * qweight.shape[1] = {2 * qweight.shape[1]} and a multiple of "
                         f"group_size = {group_size}")
    if scales.shape != (N, K // group_size) or zeros.shape != scales.shape:
        raise ValueError(f"scales and zeros must be (N, K / group_size) = {(N, K // group_size)}, got "
                         f"{tuple(scales.shape)} and {tuple(zeros.shape)}")
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    fast = _fast_path(group_size)
    if fast and M == 1:
        split = GEMV_SPLIT_K
    elif fast and M <= 16 and GEMM_SPLIT_K is not None:
        split = GEMM_SPLIT_K
    else:
        split = _split_k(M, N, K, x.device)
    target = out if split == 1 else torch.empty((split, M, N), dtype=torch.float32, device=x.device)
    stride_split = 0 if split == 1 else target.stride(0)
    strides = (qweight.stride(0), qweight.stride(1), scales.stride(0), scales.stride(1), zeros.stride(0),
               zeros.stride(1))

    fused = fast and M == 1 and split > 1 and GEMV_FUSED_SUM
    if fast and M == 1:  # BLOCK_N rows per program, the whole K unless GEMV_SPLIT_K
        words = _as_words(qweight)
        _w4a16_gemv_fast_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), split)](
            x, words, scales, zeros, target, N, K, x.stride(1), words.stride(0), words.stride(1), *strides[2:],
            stride_split, target.stride(-1), split, FLOAT_16, out, out.stride(1),
            _tile_counters(x.device, N),
            GROUP=group_size, BLOCK_K=_fast_block_k(group_size, 256),
            FOLD_ZERO=GEMV_FOLD_ZERO and x.dtype != torch.float32,  # fp32: its 1e-5 tolerance is below the fold's
            # cancellation error (sum (16 + code) x - (16 + zero) sum x lost 1.2e-5 relative at one seed in 30)
            FUSED_SUM=fused)
    elif fast:
        _w4a16_gemm_fast_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),
                                              split)](
            x, qweight, scales, zeros, target, M, N, K, x.stride(0), x.stride(1), *strides,
            stride_split, target.stride(-2), target.stride(-1), split, FLOAT_16,
            GROUP=group_size, BLOCK_K=_fast_block_k(group_size, 128), SWAP_AB=M <= GEMM_SWAP_AB_UP_TO_M)
    elif M == 1:  # a matrix-vector product: the GEMV kernel
        _w4a16_gemv_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), split)](
            x, qweight, scales, zeros, target, N, K, group_size, x.stride(1), *strides, stride_split,
            target.stride(-1), split)
    else:
        w4a16_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), split)](
            x, qweight, scales, zeros, target, M, N, K, group_size, x.stride(0), x.stride(1), *strides,
            stride_split, target.stride(-2), target.stride(-1), split)
    if split > 1 and not fused:
        block = 1024
        _split_k_sum_kernel[(triton.cdiv(M * N, block),)](target, out, M, N, split, out.stride(0), out.stride(1),
                                                         BLOCK=block)
    return out
