"""Number formats by hand: bf16 rounding from fp32 bits, fp8 rounding with saturation, range tables
(textbook 00 §0.2.4; fp8 recipes in 08 §8.4).

A binary floating-point format with ``E`` exponent bits and ``M`` mantissa bits stores
``sign | exponent | mantissa``; with ``bias = 2**(E-1) - 1`` a pattern means

- exponent field 0: subnormal ``(-1)**s * 0.mantissa * 2**(1 - bias)`` (zero when mantissa is 0);
- otherwise: normal ``(-1)**s * 1.mantissa * 2**(exponent - bias)``;
- the top exponent field (all ones): in an IEEE-style format ("ieee": fp32, fp16, bf16, fp8
  e5m2) infinity when mantissa is 0, NaN otherwise; in a finite-only format ("fn": fp8 e4m3fn)
  it holds ordinary normal numbers, and only the all-ones pattern ``S.1111.111`` is NaN
  (there is no infinity).

Rounding is round-to-nearest, ties-to-even everywhere (what torch's casts and the hardware do).

Do not call torch's casts to bfloat16 / float8 (``.to(torch.bfloat16)`` and the like) in your
answer: the point is the arithmetic; the tests compare you with them.

中文说明：
浮点格式 = 符号位 + E 位指数 + M 位尾数，偏置 bias = 2^(E−1) − 1。指数全 0 为次正规数（没有隐含的 1），
全 1 在 IEEE 类格式（fp32/fp16/bf16/e5m2）中表示 inf/NaN，在 e4m3fn 中仍是普通数，只有 S.1111.111
表示 NaN（没有 inf），所以 e4m3 的最大值是 448 而不是 240。bf16 就是 fp32 的高 16 位：舍入时看被丢掉的
低 16 位，超过一半进位、不足一半舍去、正好一半时向偶数舍入（保留位的最低位为 0）。进位可以一路进到指数，
最大的有限数会被舍入成 inf；NaN 必须仍是 NaN（不能"进位"成 inf）。FP8 转换要显式饱和：超出范围的值
截到 ±max。
"""
from __future__ import annotations

import torch


def bf16_bits(bits: torch.Tensor) -> torch.Tensor:
    """Round fp32 values, given as their bit patterns, to bfloat16 (round-to-nearest-even).

    Args:
        bits: int32 tensor of any shape: fp32 bit patterns (``x.view(torch.int32)``); a negative
            int32 is a pattern with the sign bit set. Not modified.

    Returns:
        int32 tensor, same shape: the bf16 bit pattern of each value, in ``[0, 0xFFFF]`` (the
        16-bit pattern as an unsigned number, so ``-1.0`` gives ``0xBF80``). It equals
        ``x.to(torch.bfloat16).view(torch.int16)`` read as unsigned, for every non-NaN fp32
        value: normals, subnormals (bf16 has fp32's exponent range, so they round like normals),
        ±0, ±inf, and the largest finite values, which round up to ±inf.

    Rounding: keep the upper 16 bits; look at the dropped lower 16 bits ``r``: ``r > 0x8000``
    rounds up (add 1 to the kept pattern: a carry may ripple into the exponent), ``r < 0x8000``
    rounds down, ``r == 0x8000`` (a tie) rounds to the kept pattern whose last bit is 0.
    NaN (exponent all ones, mantissa non-zero): return the quiet NaN ``0x7FC0`` (c10's scalar
    conversion does this; its vectorised CPU path returns ``0xFFFF``; the tests accept any
    quiet NaN, i.e. exponent all ones with the mantissa's top bit set). Rounding a NaN's bits
    must never produce infinity.

    Hint: work in int64 (``bits.to(torch.int64) & 0xFFFFFFFF``) so that adding to the pattern
    cannot overflow.

    中文：把 fp32 位模式舍入成 bf16 位模式（返回 0..0xFFFF 的 int32）：丢弃低 16 位，按"就近、平局取偶"
    进位；NaN 返回 0x7FC0，不能变成 inf。
    """
    raise NotImplementedError("bf16_bits")


def format_range(exponent_bits: int, mantissa_bits: int, finite_only: bool = False) -> dict[str, float]:
    """The range of a binary floating-point format, from its bit layout.

    Args:
        exponent_bits: E >= 2.
        mantissa_bits: M >= 1 (stored bits, without the implicit leading 1).
        finite_only: False for an IEEE-style format (top exponent = inf/NaN); True for an "fn"
            format like fp8 e4m3fn (top exponent holds normal numbers, only the all-ones pattern
            is NaN, no infinity). E.g. fp32 = (8, 23), fp16 = (5, 10), bf16 = (8, 7),
            e5m2 = (5, 2), e4m3fn = (4, 3, finite_only=True).

    Returns:
        ``{"max": ..., "min_normal": ..., "min_subnormal": ..., "eps": ...}`` (Python floats):
        the largest finite value, the smallest positive normal, the smallest positive subnormal,
        and the machine epsilon (the gap between 1.0 and the next value up). ``max``,
        ``min_normal`` (``tiny``) and ``eps`` equal ``torch.finfo`` of the five torch formats.

    Raises:
        ValueError: ``exponent_bits < 2`` or ``mantissa_bits < 1``.

    中文：由指数位数和尾数位数推出最大值、最小正规数、最小次正规数和 eps；注意 e4m3fn 的最大指数比 IEEE
    格式多 1，但尾数全 1 的那个模式是 NaN，所以最大值是 1.110₂ × 2^8 = 448。
    """
    raise NotImplementedError("format_range")


def fp8_round(x: torch.Tensor, fmt: str = "e4m3") -> torch.Tensor:
    """Round fp32 values to the nearest fp8 value, saturating, and return them as fp32.

    Args:
        x: float32 tensor of any shape. Not modified.
        fmt: ``"e4m3"`` (fp8 e4m3fn: E=4, M=3, finite only, max 448) or ``"e5m2"`` (E=5, M=2,
            IEEE-style, max 57344).

    Returns:
        float32 tensor, same shape: each value rounded to the nearest value of the format
        (ties to even), with saturation: every ``|x| > max`` (±inf included) becomes ``±max``;
        values below the smallest subnormal round to (signed) zero or to it; NaN stays NaN.
        This equals ``x.clamp(-max, max).to(torch.float8_e4m3fn / float8_e5m2).float()``.

    The spacing of representable values in ``[2**e, 2**(e+1))`` is ``2**(e - M)``, with ``e``
    never below the format's smallest normal exponent ``1 - bias`` (below it, the subnormals
    keep that spacing). Without explicit saturation torch gives inf for e5m2 overflow and
    (before torch 2.13) NaN for e4m3.

    Raises:
        ValueError: unknown ``fmt``.

    中文：按"就近、平局取偶"把 fp32 舍入到 FP8 的可表示值（仍以 fp32 返回），超出范围的值（含 ±inf）
    饱和到 ±max，NaN 保持 NaN。
    """
    raise NotImplementedError("fp8_round")


def fp8_scaled_round(x: torch.Tensor, fmt: str = "e4m3",
                     scale: float | None = None) -> tuple[torch.Tensor, float]:
    """Per-tensor scaled fp8 round trip: what an fp8 matmul's inputs look like afterwards.

    Args:
        x: float32 tensor of any shape. Not modified.
        fmt: ``"e4m3"`` or ``"e5m2"``.
        scale: a positive float; None: ``amax(|x|) / max`` (1.0 when x is all zero), so that the
            largest magnitude lands on the format's max ("current scaling"). A given (stale)
            scale may be too small: the values beyond ``max * scale`` saturate ("delayed scaling").

    Returns:
        ``(dequantized, scale)``: ``fp8_round(x / scale, fmt) * scale`` as float32 with x's shape,
        and the scale used (a Python float).

    Raises:
        ValueError: unknown ``fmt``; ``scale <= 0``.

    中文：按张量缩放的 FP8 往返：scale = amax/max（未给定时），先除以 scale 再舍入到 FP8（饱和）再乘回。
    """
    raise NotImplementedError("fp8_scaled_round")
