"""Quantisation basics: absmax and zero-point integers, int4 packing, fp8 scaling (textbook 08 §8.3–8.5).

Every weight-quantisation method (RTN, GPTQ, AWQ) and every fp8 recipe is built from the same
few pieces: a *scale* (and for asymmetric schemes a *zero point*) per tensor, per output channel
or per group of input columns; rounding to an integer grid with clamping; storage of two 4-bit
codes per byte; and, for fp8, a scale that maps the tensor's range onto the format's range, with
explicit saturation.

Conventions of this exercise (one set, used by the tests):

- weights are 2-D ``(out, in)`` like ``nn.Linear.weight``; all arithmetic is in fp32 whatever the
  input dtype;
- granularity (``"tensor"``, ``"channel"``, ``"group"``) sets the shape of the scales, always
  ``(R, G)``: per tensor ``(1, 1)``; per channel ``(out, 1)``: one scale per *output row*,
  reducing over the input dimension; per group ``(out, in // group_size)``: groups of
  ``group_size`` consecutive input columns within each row (GPTQ/AWQ's ``group_size=128``);
- rounding is ``torch.round``: round half to even (2.5 -> 2, 3.5 -> 4), as numpy and PyTorch do;
- symmetric (absmax) ``b``-bit: grid ``-(2^(b-1) - 1) .. 2^(b-1) - 1`` (int8: -127..127, the
  "restricted range" of TensorRT and most int8 GEMM recipes), ``scale = amax / (2^(b-1) - 1)``.
  torch.ao's symmetric observers use ``amax / 127.5`` over the full -128..127 instead; GPTQ's
  4-bit symmetric quantiser uses ``2 * amax / 15`` with codes 0..15 and zero point 8;
- asymmetric (zero-point) ``b``-bit follows AutoAWQ's ``pseudo_quantize_tensor``: the range is the
  group's own ``[min, max]`` (not widened to include 0, unlike torch.ao and GPTQ),
  ``scale = max(max - min, 1e-5) / (2^b - 1)``, ``zero = clamp(-round(min / scale), 0, 2^b - 1)``:
  the zero point is stored in the same unsigned ``b``-bit type as the codes, so it must be
  clamped; codes ``q = clamp(round(w / scale) + zero, 0, 2^b - 1)``; ``w ~= (q - zero) * scale``;
- 4-bit codes are unsigned 0..15 (a signed value v in -8..7 is stored as v + 8, GPTQ's zero
  point 8); two codes per byte, **low nibble first**: ``byte = code[2i] | (code[2i+1] << 4)``;
- fp8: e4m3 (``torch.float8_e4m3fn``, max 448) and e5m2 (``torch.float8_e5m2``, max 57344);
  values beyond the range **saturate** to ±max before the cast. torch 2.13 happens to clamp
  e4m3 casts itself, but rounds e5m2 overflow to ±inf, and older versions (and ml_dtypes)
  give NaN: never rely on the cast.

中文说明：
量化 = 选定缩放因子 scale（非对称时还有零点 zero），把浮点数映射到整数网格：q = round(w/scale)，
再截断到网格范围；反量化 w ≈ (q − zero)·scale。粒度决定 scale 的形状：整张量一个、每个输出通道
（每一行）一个、或每行按输入维连续 group_size 列分组、每组一个。舍入用"四舍六入五成双"（torch.round）。
对称 int8 用 −127..127，scale = amax/127；非对称按 AutoAWQ 的约定用组内 [min, max]，零点必须截断到
[0, 2^b−1]，因为它和码字一样用 b 位无符号数存储。int4 两个码字打包进一个字节，低 4 位放前一个。
FP8 先按 amax/最大值 缩放，超出范围的值必须先手动饱和到 ±max 再转换，不能依赖类型转换的行为。
"""
from __future__ import annotations

import torch

FP8_FORMATS = {"e4m3": (torch.float8_e4m3fn, 448.0), "e5m2": (torch.float8_e5m2, 57344.0)}


def absmax_quantize(w: torch.Tensor, bits: int = 8, granularity: str = "channel",
                    group_size: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric (absmax) quantisation of a 2-D weight.

    Args:
        w: ``(out, in)`` float tensor (fp32, fp16 or bf16).
        bits: 2..8; the grid is ``-qmax .. qmax`` with ``qmax = 2^(bits-1) - 1``.
        granularity: ``"tensor"``, ``"channel"`` (one scale per output row) or ``"group"``.
        group_size: columns per group for ``"group"``; must be positive (1 is allowed) and divide ``in``.

    Returns:
        ``(q, scale)``: ``q`` int8 ``(out, in)`` with ``q = clamp(round(w / s), -qmax, qmax)``;
        ``scale`` float32 ``(R, G)`` (see the module docstring) with ``s = amax / qmax`` where
        ``amax`` is the group's largest ``|w|``; a group of zeros gets ``s = 1``.

    Raises:
        ValueError: ``w`` not 2-D, unknown ``granularity``, ``bits`` outside 2..8, or
            ``group_size <= 0`` or ``in % group_size != 0`` for ``"group"``.

    中文：对称量化，scale = 组内最大绝对值 / (2^(b−1)−1)；per-channel 是每个输出行一个 scale
    （沿输入维求最大值）；全零组的 scale 取 1；group_size 须为 in 的正因数（可以是 1）。
    """
    raise NotImplementedError("absmax_quantize")


def zeropoint_quantize(w: torch.Tensor, bits: int = 8, granularity: str = "channel",
                       group_size: int = 128) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric (zero-point) quantisation of a 2-D weight, AutoAWQ's convention.

    Args: as :func:`absmax_quantize` (``bits`` 2..8).

    Returns:
        ``(q, scale, zero)``: ``q`` uint8 ``(out, in)`` in ``0 .. 2^bits - 1``; ``scale`` float32
        ``(R, G)``; ``zero`` int32 ``(R, G)`` in ``0 .. 2^bits - 1``. Per group, with its own
        ``mn = min(w)`` and ``mx = max(w)``::

            scale = max(mx - mn, 1e-5) / (2^bits - 1)
            zero  = clamp(-round(mn / scale), 0, 2^bits - 1)
            q     = clamp(round(w / scale) + zero, 0, 2^bits - 1)

    Raises: ValueError as :func:`absmax_quantize`.

    中文：非对称量化，用组内 min/max 求 scale，零点 = −round(min/scale) 并截断到 [0, 2^b−1]
    （零点与码字同样以 b 位无符号数存储）；码字同样截断。
    """
    raise NotImplementedError("zeropoint_quantize")


def dequantize(q: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor | None = None) -> torch.Tensor:
    """Back to float: ``w = (q - zero) * scale``, each element with its group's scale and zero.

    Args:
        q: ``(out, in)`` integer codes (int8 or uint8).
        scale: ``(R, G)`` float32 with ``R`` in ``{1, out}`` and ``G`` dividing ``in``: column
            ``j`` belongs to group ``j // (in // G)``.
        zero: ``(R, G)`` integer zero points, or None for symmetric codes (zero = 0).

    Returns:
        ``(out, in)`` float32.

    中文：反量化，每个元素用它所在组的 scale 与零点：w = (q − zero)·scale。
    """
    raise NotImplementedError("dequantize")


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """Pack 4-bit codes two per byte, low nibble first.

    Args:
        codes: ``(..., n)`` uint8 with values 0..15, ``n`` even.

    Returns:
        ``(..., n // 2)`` uint8 with ``out[..., i] = codes[..., 2i] | (codes[..., 2i+1] << 4)``.

    Raises:
        ValueError: ``n`` odd, or a code above 15.

    中文：两个 4 位码字打包进一个字节：偶数下标放低 4 位，奇数下标放高 4 位。
    """
    raise NotImplementedError("pack_int4")


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`pack_int4`: ``(..., m)`` uint8 -> ``(..., 2m)`` uint8 codes 0..15.

    ``out[..., 2i] = packed[..., i] & 0xF`` and ``out[..., 2i+1] = packed[..., i] >> 4``.

    中文：解包：低 4 位是前一个码字，高 4 位是后一个。
    """
    raise NotImplementedError("unpack_int4")


def fp8_quantize(x: torch.Tensor, fmt: str = "e4m3",
                 scale: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-tensor fp8 scaling with explicit saturation.

    Args:
        x: float tensor of any shape (fp32, fp16 or bf16), finite values.
        fmt: ``"e4m3"`` (``torch.float8_e4m3fn``, max 448) or ``"e5m2"`` (``torch.float8_e5m2``,
            max 57344).
        scale: None for *dynamic* scaling: ``scale = amax(|x|) / fmt_max`` (1 when ``x`` is all
            zeros); or a 0-dim float32 tensor for *static* (delayed) scaling, e.g. from a
            previous step's amax, in which case values of ``x / scale`` beyond ±max must
            saturate.

    Returns:
        ``(x_fp8, scale)``: ``x_fp8 = cast(clamp(x_fp32 / scale, -fmt_max, fmt_max))`` of ``x``'s
        shape in the fp8 dtype; ``scale`` a 0-dim float32 tensor. ``x ~= x_fp8.float() * scale``.

    Raises:
        ValueError: unknown ``fmt``.

    中文：FP8 按张量缩放：动态时 scale = amax/格式最大值；给定 scale（延迟缩放）时超出范围的值
    必须先饱和到 ±max 再转换（e5m2 溢出会变成 inf）。
    """
    raise NotImplementedError("fp8_quantize")
