"""W4A16: a fused dequantise-and-multiply Triton kernel for int4 group-quantised weights (textbook 08 §8.5).

The reference solution as of commit 028dc9f (before the fast path for power-of-two groups), kept
only so that benchmarks/tune_w4a16.py can time the old kernels beside the new ones in one run.
Not graded, not imported by the kit.
中文：参考实现（在核内解包 int4、按组反量化、与激活做 fp32 累加的矩阵乘；小批量时切分 K）。
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


def _split_k(M: int, N: int, K: int, device: torch.device) -> int:
    """Small batches leave most SMs idle with one program per output tile: share K among programs."""
    if M > 16:
        return 1
    if INTERPRETED:
        return 2 if K >= 64 else 1  # exercises the split path on the CPU
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    tiles = triton.cdiv(N, 64)
    return max(1, min(4 * sms // tiles, K // 512, 16))


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
    split = _split_k(M, N, K, x.device)
    target = out if split == 1 else torch.empty((split, M, N), dtype=torch.float32, device=x.device)
    stride_split = 0 if split == 1 else target.stride(0)

    if M == 1:  # a matrix-vector product: the GEMV kernel
        _w4a16_gemv_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), split)](
            x, qweight, scales, zeros, target, N, K, group_size, x.stride(1), qweight.stride(0), qweight.stride(1),
            scales.stride(0), scales.stride(1), zeros.stride(0), zeros.stride(1), stride_split, target.stride(-1),
            split)
    else:
        w4a16_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), split)](
            x, qweight, scales, zeros, target, M, N, K, group_size,
            x.stride(0), x.stride(1), qweight.stride(0), qweight.stride(1), scales.stride(0),
            scales.stride(1), zeros.stride(0), zeros.stride(1),
            stride_split, target.stride(-2), target.stride(-1), split)
    if split > 1:
        block = 1024
        _split_k_sum_kernel[(triton.cdiv(M * N, block),)](target, out, M, N, split, out.stride(0), out.stride(1),
                                                         BLOCK=block)
    return out
