"""KV-cache quantisation: int8 and fp8 (e4m3), per-token and per-channel scales (textbook 08 §8.6).

Reference solution. 中文：参考实现（KV 缓存 int8/FP8 量化、按 token 或按通道的 scale、在反量化缓存上做注意力）。
"""
from __future__ import annotations

import math

import torch

FORMATS = {"int8": 127.0, "e4m3": 448.0}
AXES = ("token", "channel")


def _group_amax(t: torch.Tensor, axis: str) -> torch.Tensor:
    return t.abs().amax(-1 if axis == "token" else -2, keepdim=True)   # (B,H,T,1) or (B,H,1,D)


def _scale_of(amax: torch.Tensor, fmt: str) -> torch.Tensor:
    return torch.where(amax > 0, amax / FORMATS[fmt], torch.ones_like(amax))


def _codes(y: torch.Tensor, fmt: str) -> torch.Tensor:
    return torch.round(y).to(torch.int8) if fmt == "int8" else y.to(torch.float8_e4m3fn)


def quantize_kv(t: torch.Tensor, fmt: str = "int8", axis: str = "token") -> tuple[torch.Tensor, torch.Tensor]:
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {sorted(FORMATS)}, got {fmt!r}")
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, got {axis!r}")
    if t.dim() != 4:
        raise ValueError(f"expected a (B, H, T, D) cache, got shape {tuple(t.shape)}")
    t = t.float()
    scale = _scale_of(_group_amax(t, axis), fmt)
    return _codes(torch.clamp(t / scale, -FORMATS[fmt], FORMATS[fmt]), fmt), scale


def dequantize_kv(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return q.float() * scale


def attention_with_quantized_kv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, fmt: str = "int8",
                                k_axis: str = "channel", v_axis: str = "token") -> torch.Tensor:
    k_hat = dequantize_kv(*quantize_kv(k, fmt, k_axis))
    v_hat = dequantize_kv(*quantize_kv(v, fmt, v_axis))
    logits = q.float() @ k_hat.transpose(-1, -2) / math.sqrt(q.shape[-1])   # (B, H, Tq, T)
    return torch.softmax(logits, -1) @ v_hat                            # (B, H, Tq, D)
