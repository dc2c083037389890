"""SmoothQuant: migrating activation outliers into the weights for W8A8 (textbook 08 §8.3 PTQ; §8.5 W8A8).

In an LLM's activations a few *channels* (input features ``j``) are 10-100x larger than the rest,
in every token. Weights are easy to quantise to int8; such activations are not: one per-tensor
(or per-token) int8 scale is set by the outlier channels, and the ordinary channels keep only a
few levels. SmoothQuant (Xiao et al., 2023) divides each activation channel by a factor ``s_j``
and multiplies the matching weight column by it, which leaves the product unchanged:

    y = x W^T = (x diag(s)^-1) (W diag(s))^T

and chooses ``s`` to split the difficulty between the two, with a migration strength ``alpha``:

    s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)

``max|X_j|``: the largest ``|x|`` of input channel ``j`` over calibration tokens; ``max|W_j|``:
the largest ``|W[:, j]|`` over the output rows (column ``j`` of ``W (out, in)``). Both are clamped
to at least ``1e-5`` as in the SmoothQuant repository (``max|W_j|`` before the power, ``s`` after).
``alpha = 0.5`` balances the two; the paper raises it (0.75-0.85) for models with stronger outliers.
In a model ``1/s`` is folded into the previous LayerNorm and ``s`` into the next linear weights
offline, like AWQ; here :func:`migrate` applies it to ``x`` directly.

W8A8 fake quantisation (symmetric int8 as quant_basics: grid -127..127, ``scale = amax / 127``,
``torch.round``, a zero ``amax`` gives scale 1): activations per *token* (one scale per row of
``x (n, in)``) or per *tensor*; weights per *output channel* (one scale per row of ``W``) or per
*tensor*. Per-token scales do not remove channel outliers: every token has them. Per-channel
*activation* scales would, but cannot be applied inside an int8 GEMM (they sit on the reduction
axis), which is why SmoothQuant moves them into the weights.

中文说明：
LLM 的激活里少数通道（输入特征）在每个 token 上都比其他通道大 10–100 倍；int8 的 scale 被这些离群
通道决定，普通通道只剩下几个量化级别。SmoothQuant 把激活的第 j 个通道除以 s_j、把权重的第 j 列乘以
s_j，矩阵乘结果不变；s_j = max|X_j|^alpha / max|W_j|^(1−alpha) 在激活和权重之间分配量化难度。
然后做 W8A8 伪量化：激活按 token（每行一个 scale）或整张量，权重按输出通道或整张量。按 token 的 scale
去不掉通道离群值（每个 token 都有）；按通道的激活 scale 落在 GEMM 的归约维上，int8 GEMM 无法使用，
所以才要把它们迁移进权重。
"""
from __future__ import annotations

import torch


def channel_absmax(x: torch.Tensor) -> torch.Tensor:
    """Per-input-channel absolute maximum over the calibration tokens.

    Args:
        x: ``(n, in)`` or ``(batch, seq, in)`` float.

    Returns:
        ``(in,)`` float32 ``max over all tokens of |x[..., j]|``.

    中文：每个输入通道在所有校准 token 上的最大绝对值，形状 (in,)。
    """
    raise NotImplementedError("channel_absmax")


def smooth_scales(act_absmax: torch.Tensor, weight: torch.Tensor, alpha: float = 0.5) -> torch.Tensor:
    """The smoothing factors ``s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)``.

    Args:
        act_absmax: ``(in,)`` from :func:`channel_absmax`.
        weight: ``(out, in)`` float, ``y = x weight^T``. alpha: migration strength in ``[0, 1]``.

    Returns:
        ``(in,)`` float32: ``w_j = clamp(max_i |weight[i, j]|, min=1e-5)`` (over the *output rows*:
        one value per input column), ``s = clamp(act_absmax^alpha / w^(1 - alpha), min=1e-5)``.

    中文：s_j = max|X_j|^alpha / max|W_j|^(1−alpha)；max|W_j| 是权重第 j 列（沿输出行）的最大绝对值，
    先截断到至少 1e−5，结果 s 也截断到至少 1e−5。
    """
    raise NotImplementedError("smooth_scales")


def migrate(x: torch.Tensor, weight: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Move the difficulty: ``(x / s, weight * s)`` in float32.

    Args:
        x: ``(..., in)``. weight: ``(out, in)``. s: ``(in,)``.

    Returns:
        ``(x diag(s)^-1, weight diag(s))``: ``x`` divided along its last dimension, ``weight``
        multiplied along its columns; ``x_s @ w_s^T`` equals ``x @ weight^T`` (up to fp32 rounding).

    中文：激活除以 s（最后一维），权重的列乘以 s；两者相乘的结果不变。
    """
    raise NotImplementedError("migrate")


def fake_quant_int8(t: torch.Tensor, per_row: bool) -> torch.Tensor:
    """Symmetric int8 quantise-then-dequantise of a 2-D tensor.

    Args:
        t: ``(rows, cols)`` float: activations ``(n, in)`` or a weight ``(out, in)``.
        per_row: one scale per row (per token for activations, per output channel for weights)
            if True, else one scale for the whole tensor.

    Returns:
        ``(rows, cols)`` float32 ``clamp(round(t / scale), -127, 127) * scale`` with
        ``scale = amax / 127`` (amax of the row, or of the tensor; 1 where amax is 0).

    中文：对称 int8 伪量化；per_row=True 时每行一个 scale（激活按 token，权重按输出通道），否则整张量一个。
    """
    raise NotImplementedError("fake_quant_int8")


def w8a8_linear(x: torch.Tensor, weight: torch.Tensor, per_token: bool = True,
                per_channel: bool = False) -> torch.Tensor:
    """``fake_quant_int8(x, per_token) @ fake_quant_int8(weight, per_channel)^T``.

    Args:
        x: ``(n, in)``. weight: ``(out, in)``. per_token: activation scales per token (else per
            tensor). per_channel: weight scales per output channel (else per tensor).

    Returns:
        ``(n, out)`` float32.

    中文：W8A8 伪量化线性层：激活与权重分别做 int8 伪量化后相乘。
    """
    raise NotImplementedError("w8a8_linear")


def smoothquant_linear(x: torch.Tensor, weight: torch.Tensor, act_absmax: torch.Tensor, alpha: float = 0.5,
                       per_token: bool = True, per_channel: bool = False) -> torch.Tensor:
    """SmoothQuant's W8A8 linear layer: smooth with ``act_absmax`` and ``alpha``, migrate, quantise.

    Args:
        x: ``(n, in)``. weight: ``(out, in)``. act_absmax: ``(in,)`` calibration statistics
            (:func:`channel_absmax`). alpha, per_token, per_channel: as above.

    Returns:
        ``(n, out)`` float32 ``w8a8_linear(x / s, weight * s, per_token, per_channel)`` with
        ``s = smooth_scales(act_absmax, weight, alpha)``.

    中文：先求平滑因子并迁移，再做 W8A8 伪量化矩阵乘。
    """
    raise NotImplementedError("smoothquant_linear")
