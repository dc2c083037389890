"""Row softmax in Triton, online across blocks for long rows (textbook 04 §4.2).

Reference solution. See exercises/part03_kernels/softmax.py for the specification.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

MAX_BLOCK = 8192  # widest row kept in registers in one piece


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr, NUM_BLOCKS: tl.constexpr):
    """One program per row. One block: load, max, exp, sum, store. Several blocks: a first pass
    keeps the running max m and running sum l (rescaling l whenever m grows), a second pass
    writes exp(x - m) / l."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    out_row = out_ptr + row * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    if NUM_BLOCKS == 1:
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))  # padded lanes: exp(-inf) = 0
        tl.store(out_row + cols, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        m = -float("inf")
        l = 0.0
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)  # rescale the old sum
            m = m_new
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
            tl.store(out_row + start + cols, (tl.exp(x - m) / l).to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor, block_size: int | None = None) -> torch.Tensor:
    """Softmax over the last dimension, fp32 inside, output in ``x``'s dtype."""
    if block_size is not None and (block_size < 1 or block_size & (block_size - 1)):
        raise ValueError(f"block_size must be a power of two, got {block_size}")
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.shape[-1]
    rows = x.numel() // n
    block = min(triton.next_power_of_2(n), block_size or MAX_BLOCK)
    num_warps = min(max(block // 512, 1), 16)  # H200: 8 warps on 4096-wide rows beat 16
    softmax_kernel[(rows,)](x, out, n, BLOCK_SIZE=block, NUM_BLOCKS=triton.cdiv(n, block),
                            num_warps=num_warps)
    return out
