"""AWQ: activation-aware weight quantisation (textbook 08 §8.3 PTQ; §8.5 W4A16).

A few input channels of a linear layer carry much larger activations than the rest. Their weights
matter most for the output, yet group-wise int4 rounding treats every weight alike. AWQ (Lin et
al., 2023) scales those columns up before quantising, ``W' = W diag(s)``, and divides the
activations by the same factors, ``x' = x diag(s)^-1`` (folded into the op that produces ``x``,
so inference costs nothing extra): ``x' W'^T = x W^T`` exactly, and the important weights now use
more of their group's grid. The factors come from a small grid search on calibration inputs:

1. statistics: ``x_mean[j] = mean |x[:, j]|`` over all calibration tokens (per *input* channel);
2. for ``alpha`` in ``0, 1/n_grid, ..., (n_grid - 1)/n_grid`` (``alpha = i / n_grid``,
   ``i = 0 .. n_grid - 1``; 1 is not in the grid):
   ``s = clamp(x_mean^alpha, min=1e-4)``, then normalised ``s = s / sqrt(max(s) * min(s))``;
   quantise ``W diag(s)``, undo the scaling, ``W_q = Q(W diag(s)) diag(s)^-1``, and measure the
   output error ``mean((x W^T - x W_q^T)^2)`` over all ``n * out`` outputs;
3. keep the ``s`` of the smallest error (the first one on a tie: compare with a strict ``<``);
   ``alpha = 0`` gives ``s = 1``, i.e. plain round-to-nearest, so the search can never do worse
   than RTN on the calibration inputs;
4. fold ``1/s`` into the previous op (an RMSNorm/LayerNorm gain, or the rows of the previous
   linear layer) and quantise ``W diag(s)`` group-wise.

The quantiser ``Q`` is quant_basics' zero-point (asymmetric) quantiser per group of
``group_size`` consecutive input columns of each row (AutoAWQ's ``pseudo_quantize_tensor`` with
``zero_point=True``), all in fp32:
``scale = max(max - min, 1e-5) / (2^bits - 1)``, ``zero = clamp(-round(min / scale), 0, 2^bits - 1)``,
``q = clamp(round(w / scale) + zero, 0, 2^bits - 1)``, ``Q(w) = (q - zero) * scale``, ``round`` =
``torch.round`` (half to even).

Differences from AutoAWQ 0.2.9, which the kit's cross-check runs: this is its ``duo_scaling=False``
search (the paper's ``s = mean|x|^alpha``; AutoAWQ's default ``duo_scaling=True`` also divides by
the weights' per-channel mean ``^(1 - alpha)``); its second search, weight clipping
(``apply_clip``), is left out; it runs the layer in fp16 on a GPU, we compute in fp32.

中文说明：
少数输入通道的激活远大于其他通道，它们对应的权重对输出最重要。AWQ 把这些列的权重放大 s 倍再量化，
同时把激活除以 s（折叠进产生 x 的前一个算子：RMSNorm 的 gain 或上一层线性层的行），量化前输出完全不变。
s 由校准数据上的网格搜索决定：s = mean|x|^alpha（再按 sqrt(max·min) 归一化），alpha 取 0, 1/n, …, (n−1)/n，
对每个 alpha 计算 Q(W·s)/s 的层输出均方误差，取误差最小的（相等时取第一个）。alpha = 0 即普通 RTN，
所以搜索结果在校准数据上不会比 RTN 差。量化器是 quant_basics 的分组零点量化（AutoAWQ 的约定）。
"""
from __future__ import annotations

import torch


def activation_stats(x: torch.Tensor) -> torch.Tensor:
    """Per-input-channel mean absolute activation over the calibration tokens.

    Args:
        x: ``(n, in)`` or ``(batch, seq, in)`` float calibration inputs of the layer.

    Returns:
        ``(in,)`` float32 ``x_mean[j] = mean over all tokens of |x[..., j]|`` (computed in fp32).

    中文：每个输入通道在所有校准 token 上的平均绝对值，形状 (in,)。
    """
    raise NotImplementedError("activation_stats")


def awq_scales(x_mean: torch.Tensor, alpha: float) -> torch.Tensor:
    """The per-channel factors of one grid point.

    Args:
        x_mean: ``(in,)`` from :func:`activation_stats`. alpha: in ``[0, 1)``.

    Returns:
        ``(in,)`` float32 ``s = clamp(x_mean^alpha, min=1e-4)``, then ``s / sqrt(max(s) * min(s))``
        (so the factors are centred around 1 on a log scale; AutoAWQ's and llm-awq's
        normalisation).

    中文：s = clamp(x_mean^alpha, 最小 1e−4)，再除以 sqrt(max(s)·min(s)) 归一化。
    """
    raise NotImplementedError("awq_scales")


def fake_quantize(w: torch.Tensor, bits: int = 4, group_size: int = 128) -> torch.Tensor:
    """Group-wise zero-point quantise-then-dequantise (the module docstring's ``Q``).

    Args:
        w: ``(out, in)`` float. bits: 2..8. group_size: a divisor of ``in``.

    Returns:
        ``(out, in)`` float32 ``(q - zero) * scale``, each group of ``group_size`` consecutive
        columns of a row with its own ``scale`` and ``zero`` (quant_basics'
        ``zeropoint_quantize(w, bits, "group", group_size)`` then ``dequantize``).

    Raises:
        ValueError: ``group_size`` does not divide ``in``.

    中文：分组零点量化后立即反量化（伪量化），每行每 group_size 列一组。
    """
    raise NotImplementedError("fake_quantize")


def search_scales(w: torch.Tensor, x: torch.Tensor, bits: int = 4, group_size: int = 128,
                  n_grid: int = 20) -> tuple[torch.Tensor, float, torch.Tensor]:
    """AWQ's grid search (steps 1-3 of the module docstring).

    Args:
        w: ``(out, in)`` float weight of the layer (``y = x w^T``; not modified).
        x: ``(n, in)`` or ``(batch, seq, in)`` calibration inputs.
        bits, group_size: the quantiser's. n_grid: number of grid points, ``alpha = i / n_grid``.

    Returns:
        ``(s, alpha, errors)``: ``s`` ``(in,)`` float32, the factors of the best grid point;
        ``alpha`` its exponent (a Python float); ``errors`` ``(n_grid,)`` float32, the output
        error ``mean((x w^T - x W_q^T)^2)`` at each grid point, ``W_q = Q(w diag(s)) diag(s)^-1``.

    中文：网格搜索：对每个 alpha 求 s，量化 W·s 再除回 s，用校准输入算层输出的均方误差；返回最优 s、其
    alpha，以及每个网格点的误差。
    """
    raise NotImplementedError("search_scales")


def fold_scales(prev_weight: torch.Tensor, weight: torch.Tensor, s: torch.Tensor,
                prev_bias: torch.Tensor | None = None):
    """Fold ``1/s`` into the op that produces the layer's input, and ``s`` into the layer.

    Args:
        prev_weight: the previous op's weight: ``(in,)`` for a norm's gain (RMSNorm/LayerNorm:
            ``x = norm(h) * gain``), or ``(in, k)`` for a previous linear layer ``x = h @ prev^T``
            (its output ``in`` rows scale; e.g. v_proj before o_proj, up_proj before down_proj).
        weight: ``(out, in)``, the layer to be quantised. s: ``(in,)``.
        prev_bias: ``(in,)`` or None (a LayerNorm's or a linear layer's bias).

    Returns:
        ``(prev_weight / s, prev_bias / s or None, weight * s)``, float32: ``prev_weight`` divided
        along its *first* dimension (the channel ``j`` of ``x``), ``weight`` multiplied along its
        *columns*. The model's output is unchanged before quantisation.

    中文：把 1/s 折叠进前一个算子（norm 的 gain，或上一层线性层的对应输出行及其 bias），把 s 乘进本层
    权重的列；量化前模型输出不变。
    """
    raise NotImplementedError("fold_scales")


def awq_quantize(w: torch.Tensor, x: torch.Tensor, bits: int = 4, group_size: int = 128,
                 n_grid: int = 20) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Search the factors, then quantise ``w diag(s)`` group-wise (steps 1-4).

    Args: as :func:`search_scales`.

    Returns:
        ``(q, scale, zero, s)``: ``q`` ``(out, in)`` uint8 codes of ``w * s`` in
        ``0 .. 2^bits - 1`` (pack them with quant_basics' ``pack_int4`` for storage);
        ``scale`` ``(out, in // group_size)`` float32; ``zero`` ``(out, in // group_size)`` int32;
        ``s`` ``(in,)`` float32 from :func:`search_scales`. The layer then computes
        ``(x / s) @ ((q - zero) * scale)^T``, with ``1/s`` folded into the previous op.

    中文：先搜索 s，再对 W·s 做分组 int 量化；返回码字、各组 scale 与零点，以及 s（1/s 折叠进前一算子）。
    """
    raise NotImplementedError("awq_quantize")
