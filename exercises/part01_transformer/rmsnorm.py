"""RMSNorm and LayerNorm (textbook 01, 核心模块: RMSNorm/LayerNorm).

Every transformer block normalises its input twice. LLaMA, Qwen and Mistral use RMSNorm;
GPT-2 and BERT use LayerNorm. Both work on the last dimension only, and both are computed in
fp32 even when the model runs in fp16/bf16: squaring a half-precision value overflows at
|x| > 256 (fp16 max is 65504).

中文说明：
RMSNorm 只做"缩放"不做"平移"：先求最后一维的均方根 rms = sqrt(mean(x²) + eps)，再用 x / rms
乘以可学习的 weight。LayerNorm 先减去均值再除以标准差（有偏方差，除以 D 而不是 D-1），
然后乘 weight、加 bias。两者都要先把输入转成 fp32 计算，否则 fp16 下 x² 会溢出；
LLaMA 的约定是：fp32 中归一化 → 转回输入 dtype → 再乘 weight。eps 加在根号里面。
"""
from __future__ import annotations

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Root-mean-square normalisation over the last dimension (LLaMA convention).

    Args:
        x: ``(..., D)`` input, any float dtype (fp32, fp16, bf16).
        weight: ``(D,)`` learnable scale, same dtype as ``x``.
        eps: added to the mean square *inside* the square root.

    Returns:
        ``(..., D)`` tensor of ``x``'s dtype::

            y = weight * cast_to_x_dtype( x_fp32 / sqrt(mean(x_fp32 ** 2, dim=-1) + eps) )

    Conventions:
        - compute in fp32 whatever the input dtype, cast back to ``x.dtype``, *then* multiply
          by ``weight`` (as HF ``LlamaRMSNorm`` does);
        - no mean is subtracted (that would be LayerNorm);
        - ``x`` is not modified in place.

    中文：对最后一维求均方根并归一化；eps 在根号内；先用 fp32 计算，转回原 dtype 后再乘 weight。
    """
    raise NotImplementedError("rms_norm")


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Layer normalisation over the last dimension.

    Args:
        x: ``(..., D)`` input, any float dtype.
        weight: ``(D,)`` scale; bias: ``(D,)`` shift; both of ``x``'s dtype.
        eps: added to the variance inside the square root.

    Returns:
        ``(..., D)`` tensor of ``x``'s dtype::

            mu  = mean(x, dim=-1);  var = mean((x - mu) ** 2, dim=-1)   # biased: / D
            y   = (x - mu) / sqrt(var + eps) * weight + bias

    Conventions: fp32 computation, result cast to ``x.dtype``; the *biased* variance (divide by
    D, as ``torch.nn.LayerNorm``), not ``torch.var``'s default unbiased one (D - 1).

    中文：减均值、除以标准差（有偏方差，除以 D），再乘 weight 加 bias；fp32 计算后转回输入 dtype。
    """
    raise NotImplementedError("layer_norm")
