"""Fused residual add + RMSNorm forward in Triton (textbook 04 §4.6, "RMSNorm + Fused Residual").

In a pre-norm transformer every block ends with ``h = h + f(h)`` and the next block starts
with ``rmsnorm(h)``. Done by two PyTorch calls this reads and writes the activations several
times; a fused kernel reads ``x`` and ``residual`` once and writes the sum (the new residual
stream) and the normalised output once: 2 reads + 2 writes, memory-bound, so speed is bytes
moved over bandwidth. One program handles one row: the whole row of D values fits in one block
(BLOCK_SIZE = next power of two ≥ D), so the sum of squares is a single ``tl.sum``.

中文说明：
融合"残差相加 + RMSNorm"：s = x + residual，新的残差就是 s；输出 y = s / sqrt(mean(s²) + eps) * weight。
一个程序处理一行，整行放进一个块（BLOCK_SIZE 取不小于 D 的 2 的幂），多出来的位置用掩码屏蔽、
按 0 读入；求均值时要除以真实的 D，不能除以 BLOCK_SIZE。全部在 fp32 中计算，最后转回输入 dtype。
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def fused_add_rmsnorm_kernel(x_ptr, residual_ptr, weight_ptr, out_ptr, residual_out_ptr,
                             n_cols, eps, BLOCK_SIZE: tl.constexpr):
    """Program ``row`` handles one row of D = ``n_cols`` contiguous values.

    Args:
        x_ptr, residual_ptr: the row-major (rows, D) inputs; weight_ptr: (D,).
        out_ptr, residual_out_ptr: the (rows, D) outputs, same dtype as the inputs.
        n_cols: D; eps: added inside the square root.
        BLOCK_SIZE: power of two ≥ D; lanes ≥ D are masked off.

    Computes in fp32: ``s = x + r``; ``residual_out = s``; ``out = s * rsqrt(sum(s²)/D + eps) * w``.

    中文：一行一个程序；s 在 fp32 中计算；mean(s²) 除以真实宽度 D。
    """
    raise NotImplementedError("fused_add_rmsnorm_kernel")


def fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                      eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm of ``x + residual``, and the sum itself, in one Triton kernel launch.

    Args:
        x: ``(..., D)`` non-empty input, fp32, fp16 or bf16.
        residual: ``(..., D)`` residual stream, same shape and dtype as ``x``.
        weight: ``(D,)`` scale, same dtype.
        eps: added to the mean square *inside* the square root.

    Returns:
        ``(out, residual_out)``, both new tensors of ``x``'s shape and dtype::

            s            = x.float() + residual.float()
            residual_out = s.to(x.dtype)
            out          = (s / sqrt(mean(s ** 2, dim=-1) + eps) * weight.float()).to(x.dtype)

    Raises:
        ValueError: if ``x`` and ``residual`` differ in shape or dtype, or ``weight`` is not (D,).

    Conventions: fp32 inside, one rounding at the end; the inputs are not modified; every
    element of both outputs is written by your kernel.

    中文：返回 (归一化输出, 新残差)；fp32 计算，最后一次性转回输入 dtype；不修改输入。
    """
    raise NotImplementedError("fused_add_rmsnorm")
