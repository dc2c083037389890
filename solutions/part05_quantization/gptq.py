"""GPTQ: one-shot weight quantisation with second-order error feedback (textbook 08 §8.3).

Reference solution. 中文：参考实现（Hessian、阻尼、Cholesky 逆、逐列量化与误差补偿、惰性块更新、分组、act-order）。
"""
from __future__ import annotations

import torch


def gptq_hessian(inputs: torch.Tensor) -> torch.Tensor:
    x = inputs.reshape(-1, inputs.shape[-1]).float()                  # (n, in)
    return (2.0 / x.shape[0]) * (x.T @ x)                              # (in, in)


def _row_params(block: torch.Tensor, bits: int, sym: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale and zero point per row of ``block`` (out, k), over a range that includes 0."""
    top = 2 ** bits - 1
    lo = block.amin(1).clamp(max=0.0)
    hi = block.amax(1).clamp(min=0.0)
    if sym:
        amax = torch.maximum(-lo, hi)
        amax = torch.where(amax > 0, amax, torch.ones_like(amax))
        return 2 * amax / top, torch.full_like(amax, 2 ** (bits - 1))
    empty = (lo == 0) & (hi == 0)
    lo, hi = torch.where(empty, -1.0, lo), torch.where(empty, 1.0, hi)
    scale = (hi - lo) / top
    return scale, torch.round(-lo / scale)


def _quantize_column(w: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, bits: int):
    """Codes and dequantised values of one column ``w`` (out,)."""
    code = torch.clamp(torch.round(w / scale) + zero, 0, 2 ** bits - 1)
    return code, scale * (code - zero)


def _check(weight: torch.Tensor, group_size: int, block_size: int) -> int:
    cols = weight.shape[1]
    if group_size == -1:
        return cols
    if group_size <= 0 or cols % group_size:
        raise ValueError(f"group_size {group_size} must be -1 or divide the input dimension {cols}")
    if block_size % group_size and group_size % block_size:
        raise ValueError(f"block_size {block_size} and group_size {group_size}: one must divide the other")
    return group_size


def quantize_rtn(weight: torch.Tensor, bits: int = 4, group_size: int = -1,
                 sym: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    out, cols = weight.shape
    gs = _check(weight, group_size, group_size if group_size > 0 else cols)
    w = weight.float()
    codes = torch.empty(out, cols)
    scales, zeros = [], []
    for start in range(0, cols, gs):
        scale, zero = _row_params(w[:, start:start + gs], bits, sym)
        codes[:, start:start + gs] = torch.clamp(torch.round(w[:, start:start + gs] / scale[:, None]) + zero[:, None],
                                                 0, 2 ** bits - 1)
        scales.append(scale)
        zeros.append(zero)
    g_idx = torch.arange(cols) // gs
    return codes.to(torch.uint8), torch.stack(scales, 1), torch.stack(zeros, 1).to(torch.int32), g_idx


def _prepare(weight: torch.Tensor, inputs: torch.Tensor, act_order: bool, percdamp: float):
    """Steps 1-5: the weight in processing order, the upper Cholesky factor of H^-1, the permutation."""
    cols = weight.shape[1]
    W = weight.float().clone()
    H = gptq_hessian(inputs)
    dead = torch.diag(H) == 0                      # inputs that are always 0: the weight is free
    H[dead, dead] = 1.0
    W[:, dead] = 0.0
    perm = torch.argsort(torch.diag(H), descending=True) if act_order else torch.arange(cols)
    W, H = W[:, perm], H[perm][:, perm]
    H += percdamp * torch.mean(torch.diag(H)) * torch.eye(cols)
    Hinv = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
    return W, Hinv, perm


def _quantize_with_feedback(W: torch.Tensor, Hinv: torch.Tensor, bits: int, gs: int, block_size: int, sym: bool):
    """Steps 6-7 on W (modified in place): codes (out, in) in processing order, scales, zeros (out, G)."""
    out, cols = W.shape
    codes = torch.empty(out, cols)
    scales, zeros = [], []
    for i1 in range(0, cols, block_size):
        i2 = min(i1 + block_size, cols)
        err = torch.empty(out, i2 - i1)
        for i in range(i1, i2):
            if i % gs == 0:                        # a group starts: its scale from the current weights
                scale, zero = _row_params(W[:, i:i + gs], bits, sym)
                scales.append(scale)
                zeros.append(zero)
            code, deq = _quantize_column(W[:, i], scale, zero, bits)
            codes[:, i] = code
            err[:, i - i1] = (W[:, i] - deq) / Hinv[i, i]
            W[:, i + 1:i2] -= err[:, i - i1, None] * Hinv[i, i + 1:i2][None, :]   # inside the block
        W[:, i2:] -= err @ Hinv[i1:i2, i2:]        # the lazy update of every later column
    return codes, torch.stack(scales, 1), torch.stack(zeros, 1).to(torch.int32)


def gptq_quantize(weight: torch.Tensor, inputs: torch.Tensor, bits: int = 4, group_size: int = -1,
                  act_order: bool = False, percdamp: float = 0.01, block_size: int = 128,
                  sym: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    gs = _check(weight, group_size, block_size)
    W, Hinv, perm = _prepare(weight, inputs, act_order, percdamp)
    codes, scales, zeros = _quantize_with_feedback(W, Hinv, bits, gs, block_size, sym)
    inv = torch.argsort(perm)                      # back to the original column order
    g_idx = (torch.arange(weight.shape[1]) // gs)[inv]
    return codes[:, inv].to(torch.uint8), scales, zeros, g_idx


def dequantize_gptq(codes: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor,
                    g_idx: torch.Tensor) -> torch.Tensor:
    return (codes.float() - zeros[:, g_idx].float()) * scales[:, g_idx]
