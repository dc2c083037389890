"""Number formats by hand: bf16 rounding from fp32 bits, fp8 rounding with saturation, range tables
(textbook 00 §0.2.4).

Reference solution. 中文：参考实现（bf16 就近取偶舍入、FP8 饱和舍入、格式范围表）。
"""
from __future__ import annotations

import torch

FP8_FORMATS = {"e4m3": (4, 3, True), "e5m2": (5, 2, False)}  # (exponent bits, mantissa bits, finite only)
BF16_QUIET_NAN = 0x7FC0


def bf16_bits(bits: torch.Tensor) -> torch.Tensor:
    u = bits.to(torch.int64) & 0xFFFFFFFF                      # the fp32 pattern as unsigned
    is_nan = ((u >> 23) & 0xFF == 0xFF) & (u & 0x7FFFFF != 0)
    kept_lsb = (u >> 16) & 1
    rounded = (u + 0x7FFF + kept_lsb) >> 16                    # ties go to the even kept pattern
    return torch.where(is_nan, BF16_QUIET_NAN, rounded).to(torch.int32)


def format_range(exponent_bits: int, mantissa_bits: int, finite_only: bool = False) -> dict[str, float]:
    if exponent_bits < 2 or mantissa_bits < 1:
        raise ValueError(f"need exponent_bits >= 2 and mantissa_bits >= 1, got {exponent_bits}, {mantissa_bits}")
    bias = 2 ** (exponent_bits - 1) - 1
    eps = 2.0 ** -mantissa_bits
    if finite_only:   # top exponent is ordinary; its all-ones mantissa is NaN
        max_value = (2.0 - 2 * eps) * 2.0 ** (bias + 1)
    else:             # top exponent reserved for inf/NaN
        max_value = (2.0 - eps) * 2.0 ** bias
    min_normal = 2.0 ** (1 - bias)
    return {"max": max_value, "min_normal": min_normal, "min_subnormal": min_normal * eps, "eps": eps}


def _fp8_layout(fmt: str) -> tuple[int, int, bool]:
    if fmt not in FP8_FORMATS:
        raise ValueError(f"fmt must be one of {sorted(FP8_FORMATS)}, got {fmt!r}")
    return FP8_FORMATS[fmt]


def fp8_round(x: torch.Tensor, fmt: str = "e4m3") -> torch.Tensor:
    e_bits, m_bits, finite_only = _fp8_layout(fmt)
    info = format_range(e_bits, m_bits, finite_only)
    a = x.float().abs().clamp(max=info["max"])                 # saturate (inf too); NaN stays NaN
    _, e = torch.frexp(a)                                      # a = f * 2**e, f in [0.5, 1)
    min_exp = 1 - (2 ** (e_bits - 1) - 1)
    exponent = (e - 1).clamp(min=min_exp)                      # subnormals share the smallest spacing
    spacing = torch.ldexp(torch.ones_like(a), exponent - m_bits)
    return torch.copysign(torch.round(a / spacing) * spacing, x.float())   # round: half to even


def fp8_scaled_round(x: torch.Tensor, fmt: str = "e4m3",
                     scale: float | None = None) -> tuple[torch.Tensor, float]:
    e_bits, m_bits, finite_only = _fp8_layout(fmt)
    fmax = format_range(e_bits, m_bits, finite_only)["max"]
    if scale is None:
        amax = float(x.float().abs().max()) if x.numel() else 0.0
        scale = amax / fmax if amax > 0 else 1.0
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    return fp8_round(x.float() / scale, fmt) * scale, float(scale)
