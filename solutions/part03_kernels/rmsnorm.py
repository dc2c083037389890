"""Fused residual add + RMSNorm forward in Triton (textbook 04 §4.6).

Reference solution. See exercises/part03_kernels/rmsnorm.py for the specification.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def fused_add_rmsnorm_kernel(x_ptr, residual_ptr, weight_ptr, out_ptr, residual_out_ptr,
                             n_cols, eps, BLOCK_SIZE: tl.constexpr):
    """One program per row: s = x + residual; residual_out = s; out = s / rms(s) * weight."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    start = row * n_cols
    x = tl.load(x_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(residual_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
    s = x + r  # (BLOCK_SIZE,) fp32; padded lanes are 0 and add nothing to the sum of squares
    tl.store(residual_out_ptr + start + cols, s.to(residual_out_ptr.dtype.element_ty), mask=mask)
    mean_square = tl.sum(s * s, axis=0) / n_cols  # divide by the true width, not BLOCK_SIZE
    inv_rms = tl.rsqrt(mean_square + eps)
    w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + start + cols, (s * inv_rms * w).to(out_ptr.dtype.element_ty), mask=mask)


def fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                      eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rmsnorm(x + residual) * weight, x + residual)`` in one pass over memory."""
    if x.shape != residual.shape or x.dtype != residual.dtype:
        raise ValueError(f"x and residual must match: {tuple(x.shape)} {x.dtype} vs "
                         f"{tuple(residual.shape)} {residual.dtype}")
    d = x.shape[-1]
    if weight.shape != (d,):
        raise ValueError(f"weight must have shape ({d},), got {tuple(weight.shape)}")
    x, residual, weight = x.contiguous(), residual.contiguous(), weight.contiguous()
    out, residual_out = torch.empty_like(x), torch.empty_like(x)
    rows = x.numel() // d
    block = triton.next_power_of_2(d)
    num_warps = min(max(block // 256, 1), 16)  # ~8 fp32 values per thread per row
    fused_add_rmsnorm_kernel[(rows,)](x, residual, weight, out, residual_out, d, eps,
                                      BLOCK_SIZE=block, num_warps=num_warps)
    return out, residual_out
