"""KV-cache quantisation: int8 and fp8 (e4m3), per-token and per-channel scales (textbook 08 §8.6; 05 §5.7).

At long contexts the KV cache, not the weights, fills the GPU memory: ``2 * layers * kv_heads *
head_dim`` values per token. Storing it in 8 bits instead of 16 halves that (plus one scale per
group). The cache here is one layer's ``k`` or ``v`` of shape ``(B, H, T, D)`` (batch, heads,
tokens, head dim), quantised symmetrically in one of two formats:

- ``"int8"``: ``scale = amax / 127``, ``q = clamp(round(t / scale), -127, 127)`` stored as int8
  (``torch.round``: half to even);
- ``"e4m3"``: ``scale = amax / 448``, ``q = cast(clamp(t / scale, -448, 448))`` stored as
  ``torch.float8_e4m3fn`` (saturate before the cast, as quant_basics);

with ``amax`` the largest ``|t|`` of the group that shares a scale (a group of zeros gets scale 1),
and ``t ~= q * scale``. Two groupings:

- ``axis="token"``: one scale per ``(b, h, t)``, over the ``D`` values of one token's vector:
  scales ``(B, H, T, 1)``. A new token's scale is known when it is written: decoding can append.
- ``axis="channel"``: one scale per ``(b, h, d)``, over the ``T`` tokens of one channel: scales
  ``(B, H, 1, D)``. The tokens of a group must be known first (KIVI quantises K per channel in
  blocks and keeps the newest tokens in full precision until a block fills).

Which suits which (KIVI, Liu et al., 2024): **K per channel, V per token**. Keys have *outlier
channels*: a few dimensions ``d`` (RoPE's low-frequency pairs among them) are large in every
token; one per-token scale is set by them and the other channels of that token lose their
resolution, so the logits ``q . k`` get noisy; a per-channel scale gives each channel its own
range. Values have no such fixed channels, and the output ``sum_t p_t v_t`` mixes whole token
vectors: per-token scales keep each mixed vector's relative error small (``<= 1/254`` of its own
largest entry with int8), whatever the other tokens' magnitudes. The choice matters for integer
formats, whose step is uniform over the group's range; e4m3's error is relative to each value
(3 mantissa bits) until values fall into its subnormal range, so its grouping mostly sets the range.

Error bounds (what the tests check, derived from the scales): int8 rounds to the nearest level
without clipping (amax maps to exactly 127), so ``|t - q * scale| <= scale / 2`` elementwise; e4m3
keeps 3 mantissa bits, so ``|t - q * scale| <= max(2^-4 |t|, 2^-10 scale)`` (relative half-ulp for
normal values, half the subnormal step ``2^-9`` below ``2^-6``); fp32's own rounding of ``t / scale``
and ``q * scale`` adds a few ulps (the tests allow ``2 * qmax * 2^-24 * scale``). If each logit moves by at most
``eps`` (``eps = max_t sum_d |q_d| * dk_td / sqrt(D)``, ``dk`` the bound on k's error) every softmax
weight moves by at most the factor ``e^(2 eps)``, so each output element moves by at most
``(e^(2 eps) - 1) * sum_t p_t |v_hat_td| + sum_t p_t * dv_td``.

中文说明：
长上下文时显存主要被 KV 缓存占满；8 位存储把它减半。缓存形状 (B, H, T, D)，对称量化为 int8
（scale = amax/127，四舍六入五成双）或 FP8 e4m3（scale = amax/448，先饱和再转换）。两种分组：
按 token（每个 token 的 D 维向量一个 scale，新 token 写入时即可量化，适合解码追加）与按通道
（每个通道在 T 个 token 上一个 scale，需要先攒够一块 token）。KIVI 的结论：K 按通道、V 按 token——
K 有固定的离群通道（每个 token 都大），按 token 量化时普通通道精度被离群通道"挤掉"，注意力分数变噪；
V 没有固定离群通道，输出是整个 token 向量的加权和，按 token 量化让每个向量的相对误差都小。
这一选择对整数格式最关键（量化步长在组内均匀）；e4m3 的误差相对于每个值本身（3 位尾数），分组主要决定范围。
误差上界由 scale 推出：int8 逐元素误差 ≤ scale/2；e4m3 ≤ max(2^−4·|t|, 2^−10·scale)。
"""
from __future__ import annotations

import torch


def quantize_kv(t: torch.Tensor, fmt: str = "int8", axis: str = "token") -> tuple[torch.Tensor, torch.Tensor]:
    """Quantise one cache tensor.

    Args:
        t: ``(B, H, T, D)`` float (fp32, fp16 or bf16); all arithmetic in fp32.
        fmt: ``"int8"`` or ``"e4m3"``. axis: ``"token"`` (reduce over ``D``) or ``"channel"``
            (reduce over ``T``).

    Returns:
        ``(q, scale)``: ``q`` ``(B, H, T, D)`` int8 or ``torch.float8_e4m3fn``; ``scale`` float32
        ``(B, H, T, 1)`` for ``"token"``, ``(B, H, 1, D)`` for ``"channel"``, ``amax / 127`` or
        ``amax / 448`` (1 where ``amax`` is 0).

    Raises:
        ValueError: unknown ``fmt`` or ``axis``, or ``t`` not 4-D.

    中文：按 token（沿 D 归约）或按通道（沿 T 归约）求 amax，scale = amax/127（int8）或 amax/448（e4m3）。
    """
    raise NotImplementedError("quantize_kv")


def dequantize_kv(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``q * scale`` in float32, the scale broadcast over its group: ``(B, H, T, D)``.

    中文：反量化：q·scale（按组广播），返回 fp32。
    """
    raise NotImplementedError("dequantize_kv")


def attention_with_quantized_kv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, fmt: str = "int8",
                                k_axis: str = "channel", v_axis: str = "token") -> torch.Tensor:
    """Decode-style attention over a quantised, then dequantised, cache.

    Args:
        q: ``(B, H, Tq, D)`` queries. k, v: ``(B, H, T, D)`` the cache (every query attends to
            every cached token: no mask). fmt: ``"int8"`` or ``"e4m3"``. k_axis, v_axis: the
            scale grouping of K and of V (defaults: K per channel, V per token).

    Returns:
        ``(B, H, Tq, D)`` float32 ``softmax(q k_hat^T / sqrt(D)) v_hat`` with
        ``k_hat = dequantize_kv(*quantize_kv(k, fmt, k_axis))`` (and ``v_hat`` likewise).

    中文：先量化再反量化 K、V，然后计算 softmax(q·k̂ᵀ/√D)·v̂（不加掩码，所有查询看到全部缓存）。
    """
    raise NotImplementedError("attention_with_quantized_kv")
