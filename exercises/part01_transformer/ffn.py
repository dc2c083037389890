"""Gated feed-forward networks: SwiGLU and GeGLU (textbook 01, FFN 家族).

The FFN of LLaMA, Qwen and Mistral is SwiGLU: two projections up to the intermediate size I, one
passed through SiLU and used as a *gate* on the other, then one projection back down. Gemma
uses the same shape with GELU (GeGLU). Weights are stored as ``nn.Linear`` stores them,
``(out_features, in_features)``, so ``nn.Linear(x) = x @ W^T``.

中文说明：
SwiGLU：h = silu(x·W_gateᵀ) ⊙ (x·W_upᵀ)，输出 = h·W_downᵀ。silu(z) = z·sigmoid(z)（不是 sigmoid 本身）；
激活函数只作用在 gate 分支上，up 分支不过激活，两者不能对调。GeGLU 把 silu 换成 GELU：
approximate="none" 是精确的 erf 版本 0.5·z·(1+erf(z/√2))，approximate="tanh" 是 tanh 近似
0.5·z·(1+tanh(√(2/π)(z+0.044715 z³)))（Gemma 用 tanh 版）。权重按 nn.Linear 的 (out, in) 布局存放，
所以要乘转置。
"""
from __future__ import annotations

import torch


def swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """The SwiGLU feed-forward block (LLaMA MLP).

    Args:
        x: ``(..., d_model)``, any float dtype.
        w_gate: ``(I, d_model)``; w_up: ``(I, d_model)``; w_down: ``(d_model, I)``; all in
            ``nn.Linear`` layout (out_features, in_features) and x's dtype.

    Returns:
        ``(..., d_model)`` in x's dtype::

            h   = silu(x @ w_gate.T) * (x @ w_up.T)      # silu(z) = z * sigmoid(z)
            out = h @ w_down.T

        computed in x's dtype (as HF ``LlamaMLP`` does); ``x`` is not modified.

    中文：out = (silu(x·W_gateᵀ) ⊙ x·W_upᵀ)·W_downᵀ；激活只作用在 gate 分支；权重是 (out, in) 布局。
    """
    raise NotImplementedError("swiglu")


def geglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor,
          approximate: str = "none") -> torch.Tensor:
    """The GeGLU feed-forward block: SwiGLU with GELU in place of SiLU.

    Args:
        x, w_gate, w_up, w_down: as in :func:`swiglu`.
        approximate: which GELU (any other value raises ``ValueError``):

            - ``"none"``: the exact GELU, ``gelu(z) = 0.5 * z * (1 + erf(z / sqrt(2)))``;
            - ``"tanh"``: the tanh approximation (Gemma's ``gelu_pytorch_tanh``),
              ``0.5 * z * (1 + tanh(sqrt(2 / pi) * (z + 0.044715 * z**3)))``.

            The two differ by up to ~5e-4 for |z| around 2; the tests tell them apart.

    Returns:
        ``(..., d_model)`` in x's dtype: ``(gelu(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T``.

    中文：把 SwiGLU 的 silu 换成 GELU；approximate="none" 用精确 erf 版，"tanh" 用 tanh 近似版。
    """
    raise NotImplementedError("geglu")
