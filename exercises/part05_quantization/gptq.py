"""GPTQ: one-shot weight quantisation with second-order error feedback (textbook 08 §8.3).

Round-to-nearest (RTN) quantises every weight on its own. GPTQ (Frantar et al., 2022) quantises
a linear layer's weight ``W (out, in)`` one input column at a time and, after each column,
moves the rounding error onto the columns not yet quantised, weighted by the inverse Hessian of
the layer's output error ``||X W^T - X Q^T||^2`` over calibration inputs ``X (n, in)``. The
same bits then give a much smaller output error than RTN.

The algorithm, as this exercise specifies it (auto-gptq 0.7.1's ``GPTQ.fasterquant`` gives
bit-identical codes, except where stated):

1. Hessian ``H = 2 X^T X / n`` (fp32, ``n`` = number of rows of ``X``). Its scale does not change
   the result (damping is relative), but :func:`gptq_hessian` must return exactly this.
2. Dead inputs: where ``H[i, i] == 0`` (input i is always 0) set ``H[i, i] = 1`` and
   ``W[:, i] = 0``: those weights never matter, so they quantise to the code of 0.
3. act-order (``act_order=True``): process columns in the order ``perm = argsort(diag(H),
   descending=True)`` (``torch.argsort``), i.e. permute the columns of W and the rows and columns
   of H, and un-permute the codes at the end.
4. Damping: ``H += percdamp * mean(diag(H)) * I`` (after the dead-input fix and the permutation).
5. ``Hinv = U``, the *upper* Cholesky factor of ``H^-1``:
   ``torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)``.
6. For each column ``i`` in processing order: when ``i`` starts a group (``i % group_size == 0``;
   with ``group_size=-1`` the one group is the whole row) compute the group's per-row scale and
   zero point from the *current* (already error-corrected) weights ``W[:, i:i+group_size]``;
   quantise ``w = W[:, i]`` to ``q``; ``err = (w - q) / Hinv[i, i]``;
   ``W[:, j] -= err * Hinv[i, j]`` for every later column ``j > i``.
7. Lazy batches: apply step 6's update at once only inside the current block of
   ``block_size`` columns; when the block ``[i1, i2)`` is done, update all later columns with one
   matmul ``W[:, i2:] -= Err @ Hinv[i1:i2, i2:]`` (``Err`` = the block's ``err`` columns).
   In exact arithmetic the result does not depend on ``block_size``.

The per-row quantiser (GPTQ's ``Quantizer`` with ``perchannel=True``), for ``b`` bits, on a group
``x (out, k)``: ``lo = min(min(x), 0)``, ``hi = max(max(x), 0)`` per row (the range always
includes 0).

- symmetric (``sym=True``, default): ``amax = max(-lo, hi)`` (1 where it is 0),
  ``scale = 2 * amax / (2^b - 1)``, ``zero = 2^(b-1)`` (4 bits: codes 0..15, zero 8, signed
  values -8..7);
- asymmetric: where ``lo == hi == 0`` use ``lo, hi = -1, 1``; ``scale = (hi - lo) / (2^b - 1)``,
  ``zero = round(-lo / scale)``;
- ``code = clamp(round(x / scale) + zero, 0, 2^b - 1)``, dequantised ``scale * (code - zero)``;
  rounding is ``torch.round`` (half to even).

Choices and differences from auto-gptq 0.7.1:

- groups with act-order: groups are formed in *processing* order (auto-gptq's default
  ``static_groups=False``): group g holds the columns ``perm[g*gs:(g+1)*gs]``, and
  ``g_idx[j]`` tells which group original column j belongs to. (``static_groups=True`` would
  fix groups in the original order with scales from the unquantised W; kernels that cannot
  gather scales through ``g_idx`` need that, at some accuracy cost.)
- ``block_size`` and ``group_size`` must divide one another. When ``block_size > group_size``
  auto-gptq computes a mid-block group's scale from weights that miss the current block's
  pending updates; this exercise uses the current weights (equal results when
  ``block_size <= group_size``).
- auto-gptq computes the whole-row scale (``group_size=-1``) before zeroing dead columns, and
  its symmetric quantiser halves the range of an all-non-negative group; neither quirk is kept.
- auto-gptq's ``n`` counts sequences, not rows; the result does not depend on it.

中文说明：
GPTQ 逐列量化权重：每量化一列，就把该列的量化误差按 Hessian 逆矩阵"摊"到尚未量化的列上，
让层输出误差 ||XWᵀ − XQᵀ|| 最小。H = 2XᵀX/n；输入恒为 0 的列（H_ii = 0）对应的权重直接置 0；
加阻尼 percdamp × mean(diag H) 保证正定；用 Cholesky 分解求 H⁻¹ 的上三角因子。
惰性批量更新：块内逐列更新，块结束后用一次矩阵乘把误差传到后面所有列（结果与块大小无关）。
分组量化：每组第一列到来时，用"当前（已被误差补偿过的）"权重计算该组的 scale/零点。
act-order：按 H 对角线从大到小的顺序量化各列，最后把码字按原列顺序还原，并返回 g_idx。
"""
from __future__ import annotations

import torch


def gptq_hessian(inputs: torch.Tensor) -> torch.Tensor:
    """The layer's Hessian from calibration inputs.

    Args:
        inputs: ``(n, in)`` or ``(batch, seq, in)`` float calibration activations (rows are
            tokens; a 3-D input counts ``batch * seq`` rows).

    Returns:
        ``(in, in)`` float32 ``H = 2 / n * X^T X`` with ``X`` the ``(n, in)`` rows in fp32.

    中文：H = 2·XᵀX / n（n 为 token 行数），形状 (in, in)，fp32 计算。
    """
    raise NotImplementedError("gptq_hessian")


def quantize_rtn(weight: torch.Tensor, bits: int = 4, group_size: int = -1,
                 sym: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Round-to-nearest with GPTQ's per-row quantiser: the baseline GPTQ must beat.

    Args:
        weight: ``(out, in)`` float. bits: 2..8. group_size: -1 (one group per row) or a
            divisor of ``in``. sym: symmetric (zero point ``2^(bits-1)``) or asymmetric.

    Returns:
        ``(codes, scales, zeros, g_idx)`` as :func:`gptq_quantize` (groups in column order,
        ``g_idx[j] = j // group_size``).

    Raises:
        ValueError: ``group_size`` not -1 and not a divisor of ``in``.

    中文：逐组直接四舍五入（不做误差补偿），作为 GPTQ 的对照基线。
    """
    raise NotImplementedError("quantize_rtn")


def gptq_quantize(weight: torch.Tensor, inputs: torch.Tensor, bits: int = 4, group_size: int = -1,
                  act_order: bool = False, percdamp: float = 0.01, block_size: int = 128,
                  sym: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Quantise a linear layer's weight with GPTQ (algorithm in the module docstring).

    Args:
        weight: ``(out, in)`` float (not modified).
        inputs: ``(n, in)`` (or ``(batch, seq, in)``) calibration inputs of the layer.
        bits: 2..8. group_size: -1 or a divisor of ``in``. act_order: process columns by
            descending ``diag(H)``. percdamp: damping as a fraction of ``mean(diag(H))``.
        block_size: columns per lazy batch (default 128); it and ``group_size`` must divide
            one another. sym: symmetric or asymmetric quantiser.

    Returns:
        ``(codes, scales, zeros, g_idx)``:

        - ``codes``: ``(out, in)`` uint8 in ``0 .. 2^bits - 1``, columns in the *original* order;
        - ``scales``: ``(out, G)`` float32, ``G = in // group_size`` (1 for ``group_size=-1``),
          group g = the g-th group in processing order;
        - ``zeros``: ``(out, G)`` int32 zero points;
        - ``g_idx``: ``(in,)`` int64, the group of each original column.

        Dequantised: ``(codes - zeros[:, g_idx]) * scales[:, g_idx]`` (:func:`dequantize_gptq`).

    Raises:
        ValueError: bad ``group_size``, or ``block_size`` and ``group_size`` not dividing one
            another.

    中文：按模块说明中的步骤实现 GPTQ；返回码字（原列顺序）、各组 scale/零点与每列所属组号 g_idx。
    """
    raise NotImplementedError("gptq_quantize")


def dequantize_gptq(codes: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor,
                    g_idx: torch.Tensor) -> torch.Tensor:
    """``(out, in)`` float32 weights ``(codes - zeros[:, g_idx]) * scales[:, g_idx]``.

    中文：用每列的组号 g_idx 取出对应的 scale 和零点进行反量化。
    """
    raise NotImplementedError("dequantize_gptq")
