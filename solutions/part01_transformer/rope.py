"""Rotary position embedding (textbook 01 §1.2.3; context extension 09 §9.3).

Reference solution. See exercises/part01_transformer/rope.py for the specification.
"""
from __future__ import annotations

import math

import torch

PAIRINGS = ("rotate_half", "interleaved")


def _plain_inv_freq(head_dim: int, base: float) -> torch.Tensor:
    """theta_i = base ** (-2i / D) for i = 0 .. D/2 - 1, computed in fp32 as transformers does
    (the course's one convention, shared with llama.py)."""
    exponents = torch.arange(0, head_dim, 2).float() / head_dim  # 2i / D
    return 1.0 / base ** exponents


def _yarn_ramp(low: float, high: float, n: int) -> torch.Tensor:
    """0 below ``low``, 1 above ``high``, linear in between, over pair indices 0 .. n - 1."""
    if low == high:
        high += 0.001  # avoid dividing by zero
    return ((torch.arange(n, dtype=torch.float32) - low) / (high - low)).clamp(0.0, 1.0)


def _yarn_correction_dim(rotations: float, head_dim: int, base: float, context: int) -> float:
    """The pair index whose wavelength fits ``rotations`` full turns into ``context`` tokens."""
    return head_dim * math.log(context / (rotations * 2 * math.pi)) / (2 * math.log(base))


def _yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def _yarn(head_dim: int, base: float, s: dict) -> tuple[torch.Tensor, float]:
    factor = float(s["factor"])
    context = s["original_max_position_embeddings"]
    beta_fast, beta_slow = s.get("beta_fast") or 32.0, s.get("beta_slow") or 1.0
    low = _yarn_correction_dim(beta_fast, head_dim, base, context)
    high = _yarn_correction_dim(beta_slow, head_dim, base, context)
    if s.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    extrapolation = _plain_inv_freq(head_dim, base)  # high-frequency pairs keep theta_i
    interpolation = extrapolation / factor  # low-frequency pairs are interpolated
    keep = 1.0 - _yarn_ramp(low, high, head_dim // 2)  # 1 for fast pairs, 0 for slow ones
    inv_freq = interpolation * (1.0 - keep) + extrapolation * keep
    attention_scaling = s.get("attention_factor")
    if attention_scaling is None:
        mscale, mscale_all_dim = s.get("mscale"), s.get("mscale_all_dim")
        if mscale and mscale_all_dim:
            attention_scaling = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all_dim)
        else:
            attention_scaling = _yarn_mscale(factor)
    return inv_freq, float(attention_scaling)


def _llama3(head_dim: int, base: float, s: dict) -> torch.Tensor:
    factor, low_ff, high_ff = float(s["factor"]), float(s["low_freq_factor"]), float(s["high_freq_factor"])
    context = s["original_max_position_embeddings"]
    inv_freq = _plain_inv_freq(head_dim, base)
    wavelen = 2 * math.pi / inv_freq
    low_freq_wavelen, high_freq_wavelen = context / low_ff, context / high_ff
    smooth = (context / wavelen - low_ff) / (high_ff - low_ff)  # 0 at low_freq_wavelen, 1 at high
    smoothed = (1 - smooth) * inv_freq / factor + smooth * inv_freq
    out = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)  # long waves: / factor
    medium = (wavelen >= high_freq_wavelen) & (wavelen <= low_freq_wavelen)
    return torch.where(medium, smoothed, out)


def rope_inv_freq(head_dim: int, base: float = 10000.0, scaling: dict | None = None,
                  seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    """RoPE inverse frequencies (D/2,) fp32 and the attention scaling for cos/sin."""
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim must be a positive even number, got {head_dim}")
    s = dict(scaling or {})
    kind = s.get("type", "default")
    if kind == "default":
        return _plain_inv_freq(head_dim, base), 1.0
    if kind == "linear":
        return _plain_inv_freq(head_dim, base) / float(s["factor"]), 1.0
    if kind == "ntk":
        new_base = base * float(s["factor"]) ** (head_dim / (head_dim - 2))
        return _plain_inv_freq(head_dim, new_base), 1.0
    if kind == "dynamic":
        context = s["original_max_position_embeddings"]
        length = max(seq_len or context, context)
        factor = float(s["factor"])
        new_base = base * (factor * length / context - (factor - 1)) ** (head_dim / (head_dim - 2))
        return _plain_inv_freq(head_dim, new_base), 1.0
    if kind == "yarn":
        return _yarn(head_dim, base, s)
    if kind == "llama3":
        return _llama3(head_dim, base, s), 1.0
    raise ValueError(f"unknown RoPE scaling type {kind!r}")


def rope_cos_sin(inv_freq: torch.Tensor, seq_len: int, offset: int | torch.Tensor = 0,
                 attention_scaling: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of (offset + p) * inv_freq for p = 0 .. seq_len - 1, times attention_scaling."""
    steps = torch.arange(seq_len, dtype=torch.int64)
    if isinstance(offset, torch.Tensor):
        positions = offset.to(torch.int64)[:, None] + steps  # (B, S)
    else:
        positions = offset + steps  # (S,)
    angles = positions[..., None].float() * inv_freq.float()  # (..., S, D/2), fp32 as HF
    return angles.cos() * attention_scaling, angles.sin() * attention_scaling


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
               pairing: str = "rotate_half") -> torch.Tensor:
    """Rotate each pair (a, b) of x by its angle: (a cos - b sin, a sin + b cos)."""
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")
    dtype = x.dtype
    h = x.float()
    if cos.dim() == 3:  # per-sequence offsets: (B, S, D/2) -> (B, 1, S, D/2)
        cos, sin = cos[:, None], sin[:, None]
    cos, sin = cos.float(), sin.float()
    if pairing == "rotate_half":
        half = h.shape[-1] // 2
        a, b = h[..., :half], h[..., half:]  # pairs (i, i + D/2)
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1).to(dtype)
    a, b = h[..., 0::2], h[..., 1::2]  # pairs (2i, 2i + 1)
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2).to(dtype)
