"""Scaled dot-product attention with masks and grouped KV heads (textbook 01, Attention 家族).

Reference solution. See exercises/part01_transformer/attention.py for the specification.
"""
from __future__ import annotations

import math

import torch


def attention_mask(sq: int, skv: int, causal: bool = False, window: int | None = None,
                   key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Which keys each query may see: bool (B or 1, 1, Sq, Skv), True = visible."""
    if window is not None and (not causal or window < 1):
        raise ValueError("window needs causal=True and window >= 1")
    i = torch.arange(sq)[:, None] + (skv - sq)  # each query's absolute position (bottom-right)
    j = torch.arange(skv)[None, :]
    visible = torch.ones(sq, skv, dtype=torch.bool)
    if causal:
        visible &= j <= i
    if window is not None:
        visible &= j > i - window  # W keys: i - W + 1 .. i
    visible = visible[None, None]  # (1, 1, Sq, Skv)
    if key_padding_mask is not None:
        visible = visible & key_padding_mask.bool()[:, None, None, :]  # (B, 1, Sq, Skv)
    return visible


def _masked_scores(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                   scale: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 scores (B, Hq, Sq, Skv), -inf where masked, and v expanded to the query heads."""
    hq, hkv = q.shape[1], k.shape[1]
    if hq % hkv:
        raise ValueError(f"the number of query heads ({hq}) must be a multiple of the KV heads ({hkv})")
    group = hq // hkv
    k = k.float().repeat_interleave(group, dim=1)  # query head h reads KV head h // group
    v = v.float().repeat_interleave(group, dim=1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q.float() @ k.transpose(-1, -2) * scale  # (B, Hq, Sq, Skv)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores, v


def masked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                     scale: float | None = None) -> torch.Tensor:
    """softmax(q k^T * scale, masked) v with GQA head sharing; fp32 softmax, rows with no key -> 0."""
    scores, v = _masked_scores(q, k, v, mask, scale)
    if mask is not None:
        seen = mask.any(dim=-1, keepdim=True)  # rows with at least one visible key
        scores = scores.masked_fill(~seen, 0.0)  # keep the softmax finite; zeroed below
    probs = torch.softmax(scores, dim=-1)
    if mask is not None:
        probs = probs * seen
    return (probs @ v).to(q.dtype)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              window: int | None = None, key_padding_mask: torch.Tensor | None = None,
              scale: float | None = None) -> torch.Tensor:
    """Attention with a bottom-right causal mask, an optional sliding window and key padding."""
    mask = attention_mask(q.shape[2], k.shape[2], causal, window, key_padding_mask)
    return masked_attention(q, k, v, mask, scale)
