"""The roofline model: arithmetic intensity, attainable FLOP/s, compute- vs memory-bound
(textbook 00 §0.2.2; 11 §11.2).

Reference solution. 中文：参考实现（FLOPs 与访存量、算术强度、拐点、可达性能、受限类型、最短用时）。
"""
from __future__ import annotations

import torch


def op_cost(op: str, shape: dict[str, int], dtype: torch.dtype, causal: bool = False) -> tuple[int, int]:
    s = dtype.itemsize
    if causal and op != "attention":
        raise ValueError(f"causal applies to attention only, not to {op!r}")
    if op == "matmul":
        M, N, K = shape["M"], shape["N"], shape["K"]
        return 2 * M * N * K, (M * K + K * N + M * N) * s
    if op == "attention":
        B, H, S, D = shape["B"], shape["H"], shape["S"], shape["D"]
        flops = 4 * B * H * S * S * D                          # QK^T and PV, 2 FLOPs per multiply-add
        return (flops // 2 if causal else flops), 4 * B * H * S * D * s
    if op == "norm":
        M, N = shape["M"], shape["N"]
        return 4 * M * N, (2 * M * N + N) * s
    if op == "decode":
        B, HQ, HKV, S, D = shape["B"], shape["HQ"], shape["HKV"], shape["S"], shape["D"]
        return 4 * B * HQ * S * D, (2 * B * HKV * S * D + 2 * B * HQ * D) * s
    raise ValueError(f"op must be one of matmul, attention, norm, decode; got {op!r}")


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    if bytes_moved <= 0:
        raise ValueError(f"bytes_moved must be > 0, got {bytes_moved}")
    return flops / bytes_moved


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    return peak_flops / bandwidth


def attainable_flops(intensity: float, peak_flops: float, bandwidth: float) -> float:
    return min(peak_flops, intensity * bandwidth)


def bound(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> str:
    compute_bound = arithmetic_intensity(flops, bytes_moved) >= ridge_point(peak_flops, bandwidth)
    return "compute" if compute_bound else "memory"


def roofline_time(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> float:
    return max(flops / peak_flops, bytes_moved / bandwidth)
