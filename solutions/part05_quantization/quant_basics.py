"""Quantisation basics: absmax and zero-point integers, int4 packing, fp8 scaling (textbook 08 §8.3–8.5).

Reference solution. 中文：参考实现（对称/非对称量化、int4 打包、FP8 缩放与饱和）。
"""
from __future__ import annotations

import torch

FP8_FORMATS = {"e4m3": (torch.float8_e4m3fn, 448.0), "e5m2": (torch.float8_e5m2, 57344.0)}
GRANULARITIES = ("tensor", "channel", "group")


def _grouped(w: torch.Tensor, bits: int, granularity: str, group_size: int) -> torch.Tensor:
    """``w`` as fp32 ``(R, G, K)``: R rows sharing nothing, G groups per row, K elements per group."""
    if w.dim() != 2:
        raise ValueError(f"expected a 2-D (out, in) weight, got shape {tuple(w.shape)}")
    if not 2 <= bits <= 8:
        raise ValueError(f"bits must be in 2..8, got {bits}")
    out, cols = w.shape
    w = w.float()
    if granularity == "tensor":
        return w.reshape(1, 1, out * cols)
    if granularity == "channel":
        return w.reshape(out, 1, cols)
    if granularity == "group":
        if group_size <= 0 or cols % group_size:
            raise ValueError(f"group_size {group_size} must divide the input dimension {cols}")
        return w.reshape(out, cols // group_size, group_size)
    raise ValueError(f"granularity must be one of {GRANULARITIES}, got {granularity!r}")


def absmax_quantize(w: torch.Tensor, bits: int = 8, granularity: str = "channel",
                    group_size: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    g = _grouped(w, bits, granularity, group_size)                   # (R, G, K)
    qmax = 2 ** (bits - 1) - 1
    amax = g.abs().amax(-1)                                          # (R, G)
    scale = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))
    q = torch.clamp(torch.round(g / scale[..., None]), -qmax, qmax)
    return q.to(torch.int8).reshape(w.shape), scale


def zeropoint_quantize(w: torch.Tensor, bits: int = 8, granularity: str = "channel",
                       group_size: int = 128) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = _grouped(w, bits, granularity, group_size)
    top = 2 ** bits - 1
    lo, hi = g.amin(-1), g.amax(-1)                                  # (R, G)
    scale = (hi - lo).clamp(min=1e-5) / top
    zero = torch.clamp(-torch.round(lo / scale), 0, top)
    q = torch.clamp(torch.round(g / scale[..., None]) + zero[..., None], 0, top)
    return q.to(torch.uint8).reshape(w.shape), scale, zero.to(torch.int32)


def dequantize(q: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor | None = None) -> torch.Tensor:
    out, cols = q.shape
    R, G = scale.shape
    codes = q.float().reshape(out, G, cols // G)
    if zero is not None:
        codes = codes - zero.float().reshape(R, G, 1)
    return (codes * scale.float().reshape(R, G, 1)).reshape(out, cols)


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    if codes.shape[-1] % 2:
        raise ValueError(f"pack_int4 needs an even number of codes in the last dimension, got {codes.shape[-1]}")
    if codes.numel() and int(codes.max()) > 15:
        raise ValueError("4-bit codes must lie in 0..15")
    c = codes.to(torch.uint8)
    low, high = c[..., 0::2], c[..., 1::2]
    return low | (high << 4)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    low, high = packed & 0xF, packed >> 4
    return torch.stack((low, high), dim=-1).reshape(*packed.shape[:-1], 2 * packed.shape[-1])


def fp8_quantize(x: torch.Tensor, fmt: str = "e4m3",
                 scale: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    if fmt not in FP8_FORMATS:
        raise ValueError(f"fmt must be one of {sorted(FP8_FORMATS)}, got {fmt!r}")
    dtype, fmax = FP8_FORMATS[fmt]
    xf = x.float()
    if scale is None:
        amax = xf.abs().amax()
        scale = torch.where(amax > 0, amax / fmax, torch.ones_like(amax))
    scale = torch.as_tensor(scale, dtype=torch.float32).reshape(())
    saturated = torch.clamp(xf / scale, -fmax, fmax)
    return saturated.to(dtype), scale
