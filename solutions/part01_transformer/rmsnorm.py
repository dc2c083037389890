"""RMSNorm and LayerNorm (textbook 01, 核心模块: RMSNorm/LayerNorm).

Reference solution. See exercises/part01_transformer/rmsnorm.py for the specification.
"""
from __future__ import annotations

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension, computed in fp32 and cast back before the weight."""
    dtype = x.dtype
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., D)
    return weight * h.to(dtype)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last dimension with the biased variance, computed in fp32."""
    dtype = x.dtype
    h = x.float()
    mean = h.mean(dim=-1, keepdim=True)
    var = (h - mean).pow(2).mean(dim=-1, keepdim=True)  # biased: divide by D, not D - 1
    h = (h - mean) * torch.rsqrt(var + eps)
    return (h * weight.float() + bias.float()).to(dtype)
