"""AWQ: activation-aware weight quantisation (textbook 08 §8.3, §8.5 W4A16).

Reference solution. 中文：参考实现（激活统计、s = mean|x|^alpha 网格搜索、缩放折叠进前一算子、分组 int4）。
"""
from __future__ import annotations

import torch


def activation_stats(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1]).float().abs().mean(0)            # (in,)


def awq_scales(x_mean: torch.Tensor, alpha: float) -> torch.Tensor:
    s = x_mean.float().pow(alpha).clamp(min=1e-4)                       # (in,)
    return s / (s.max() * s.min()).sqrt()


def _quantize_groups(w: torch.Tensor, bits: int, group_size: int):
    """Zero-point codes of ``w`` (out, in) per group of ``group_size`` columns: (q, scale, zero)."""
    out, cols = w.shape
    if group_size <= 0 or cols % group_size:
        raise ValueError(f"group_size {group_size} must divide the input dimension {cols}")
    g = w.float().reshape(out, cols // group_size, group_size)          # (out, G, gs)
    top = 2 ** bits - 1
    lo, hi = g.amin(-1, keepdim=True), g.amax(-1, keepdim=True)
    scale = (hi - lo).clamp(min=1e-5) / top
    zero = torch.clamp(-torch.round(lo / scale), 0, top)
    q = torch.clamp(torch.round(g / scale) + zero, 0, top)
    return q, scale, zero


def fake_quantize(w: torch.Tensor, bits: int = 4, group_size: int = 128) -> torch.Tensor:
    q, scale, zero = _quantize_groups(w, bits, group_size)
    return ((q - zero) * scale).reshape(w.shape)


def _grid_error(w: torch.Tensor, x: torch.Tensor, s: torch.Tensor, bits: int, group_size: int) -> torch.Tensor:
    """mean((x w^T - x W_q^T)^2) with W_q = Q(w diag(s)) diag(s)^-1, for x (n, in) and w (out, in) in fp32."""
    w_q = fake_quantize(w * s, bits, group_size) / s
    return ((x @ w.T - x @ w_q.T) ** 2).mean()


def search_scales(w: torch.Tensor, x: torch.Tensor, bits: int = 4, group_size: int = 128,
                  n_grid: int = 20) -> tuple[torch.Tensor, float, torch.Tensor]:
    x = x.reshape(-1, x.shape[-1]).float()                              # (n, in)
    x_mean = activation_stats(x)
    errors = torch.stack([_grid_error(w.float(), x, awq_scales(x_mean, i / n_grid), bits, group_size)
                          for i in range(n_grid)])                      # (n_grid,)
    alpha = int(torch.argmin(errors)) / n_grid                          # argmin: the first minimum
    return awq_scales(x_mean, alpha), alpha, errors


def fold_scales(prev_weight: torch.Tensor, weight: torch.Tensor, s: torch.Tensor,
                prev_bias: torch.Tensor | None = None):
    s = s.float()
    shape = (-1,) + (1,) * (prev_weight.dim() - 1)                     # along the previous op's outputs
    new_prev = prev_weight.float() / s.reshape(shape)
    new_bias = None if prev_bias is None else prev_bias.float() / s
    return new_prev, new_bias, weight.float() * s


def awq_quantize(w: torch.Tensor, x: torch.Tensor, bits: int = 4, group_size: int = 128,
                 n_grid: int = 20) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    s, _, _ = search_scales(w, x, bits, group_size, n_grid)
    q, scale, zero = _quantize_groups(w.float() * s, bits, group_size)
    return (q.reshape(w.shape).to(torch.uint8), scale.squeeze(-1), zero.squeeze(-1).to(torch.int32), s)
