"""Gated feed-forward networks: SwiGLU and GeGLU (textbook 01, FFN 家族).

Reference solution. See exercises/part01_transformer/ffn.py for the specification.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

GELU_APPROXIMATIONS = ("none", "tanh")


def swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """(silu(x W_gate^T) * (x W_up^T)) W_down^T, weights in nn.Linear layout (out, in)."""
    hidden = F.silu(x @ w_gate.T) * (x @ w_up.T)  # (..., I)
    return hidden @ w_down.T  # (..., d_model)


def geglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor,
          approximate: str = "none") -> torch.Tensor:
    """(gelu(x W_gate^T) * (x W_up^T)) W_down^T with the exact (erf) or the tanh GELU."""
    if approximate not in GELU_APPROXIMATIONS:
        raise ValueError(f"approximate must be one of {GELU_APPROXIMATIONS}, got {approximate!r}")
    hidden = F.gelu(x @ w_gate.T, approximate=approximate) * (x @ w_up.T)  # (..., I)
    return hidden @ w_down.T
