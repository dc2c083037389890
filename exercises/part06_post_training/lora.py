"""LoRA and QLoRA's NF4: low-rank adapters on a frozen base (textbook 15 §15.3; site method "LoRA / QLoRA").

LoRA freezes a linear layer's weight W ``(out, in)`` and learns a low-rank update
``delta W = scaling * B @ A`` with ``A (r, in)``, ``B (out, r)``, r much smaller than in and out.
B starts at zero, so the adapted layer starts equal to the base; the update can be merged into W
for serving (no extra latency) and subtracted again, and many adapters can share one base in
one batch (multi-LoRA serving: each request row names its adapter). QLoRA stores the frozen base
in 4-bit NormalFloat (NF4): 16 levels placed at quantiles of a normal distribution, scaled per
block by the block's absolute maximum.

Conventions of this exercise (the same as peft 0.21's ``LoraLayer``; differences are stated):

- ``A`` is ``lora_A.weight`` ``(r, in)``, ``B`` is ``lora_B.weight`` ``(out, r)``;
- ``scaling = alpha / r`` (LoRA), or ``alpha / sqrt(r)`` with rsLoRA (``use_rslora=True``);
- no dropout here (peft applies dropout to x before A in training; it is the identity in eval);
- float32 throughout.

中文说明：
LoRA 冻结原权重 W，只训练低秩增量 ΔW = scaling·B·A（A: r×in，B: out×r）。A 用 Kaiming 均匀初始化，
B 初始化为 0，所以训练开始时输出与原模型完全相同。scaling = alpha/r（rsLoRA 为 alpha/√r，秩变大时
更新幅度不衰减）。部署时可把 ΔW 合并进 W（无额外延迟），也可减回去；多个适配器可共享同一个底座，
在同一批里每行用各自的适配器（多 LoRA 服务）。QLoRA 把底座存成 NF4：16 个按正态分位数取的值，
每块按块内绝对值最大值缩放。
"""
from __future__ import annotations

import torch

# The 16 NormalFloat-4 levels of the QLoRA paper (Dettmers et al. 2023, appendix E), ascending;
# a 4-bit code is an index into this table. Given: use it as it is.
NF4_CODE = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)


def init_lora(in_features: int, out_features: int, r: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh LoRA factors for one linear layer.

    Args:
        in_features, out_features: the base layer's sizes; r: the rank (>= 1).
        seed: seed a ``torch.Generator`` with it and draw A from that generator only.

    Returns:
        ``(A, B)``: ``A (r, in_features)`` float32 drawn i.i.d. uniform on
        ``[-1/sqrt(in_features), 1/sqrt(in_features)]`` (``kaiming_uniform_`` with
        ``a = sqrt(5)``, as ``nn.Linear`` and peft do); ``B (out_features, r)`` float32 zeros.
        The same seed gives the same A.

    中文：A 用 Kaiming 均匀分布（界为 1/√in），B 全零——这样初始时 ΔW = 0，模型输出不变。
    """
    raise NotImplementedError("init_lora")


def lora_scaling(alpha: float, r: int, use_rslora: bool = False) -> float:
    """The factor in front of ``B @ A``.

    Returns:
        ``alpha / r`` (LoRA), or ``alpha / sqrt(r)`` when ``use_rslora`` (rank-stabilised LoRA),
        as a Python float.

    中文：缩放系数 alpha/r；rsLoRA 为 alpha/√r。
    """
    raise NotImplementedError("lora_scaling")


def lora_forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, A: torch.Tensor,
                 B: torch.Tensor, scaling: float) -> torch.Tensor:
    """The adapted linear layer.

    Args:
        x: ``(..., in)`` float32. weight: ``(out, in)``; bias: ``(out,)`` or None.
        A: ``(r, in)``; B: ``(out, r)``; scaling: from :func:`lora_scaling`.

    Returns:
        ``(..., out)`` float32: ``x @ weight.T + bias + scaling * (x @ A.T) @ B.T``. Compute the
        low-rank path as two thin matmuls; do not form ``B @ A`` (out x in) per call.

    中文：输出 = 原层输出 + scaling·(x Aᵀ) Bᵀ；先乘 A 再乘 B，不要每次都构造 B·A。
    """
    raise NotImplementedError("lora_forward")


def merge(weight: torch.Tensor, A: torch.Tensor, B: torch.Tensor, scaling: float) -> torch.Tensor:
    """The merged weight ``weight + scaling * B @ A`` ``(out, in)``, a new tensor (the input untouched).

    中文：合并：W' = W + scaling·B·A（返回新张量，不改输入）。
    """
    raise NotImplementedError("merge")


def unmerge(merged: torch.Tensor, A: torch.Tensor, B: torch.Tensor, scaling: float) -> torch.Tensor:
    """The base weight back: ``merged - scaling * B @ A`` ``(out, in)``, a new tensor.

    ``unmerge(merge(W, A, B, s), A, B, s)`` equals W to fp32 rounding (not bit for bit).

    中文：拆分：W = W' − scaling·B·A。
    """
    raise NotImplementedError("unmerge")


def multi_lora_forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, As: torch.Tensor,
                       Bs: torch.Tensor, scalings: torch.Tensor, adapter_ids: torch.Tensor) -> torch.Tensor:
    """Several adapters on one base, served in one batch.

    Args:
        x: ``(N, in)`` float32, one row per request (token).
        weight, bias: the shared base layer, ``(out, in)`` and ``(out,)`` or None.
        As: ``(K, r, in)``, Bs: ``(K, out, r)``: K adapters of one rank r.
        scalings: ``(K,)`` float32, each adapter's own scaling.
        adapter_ids: ``(N,)`` int64 in ``[-1, K)``: row n uses adapter ``adapter_ids[n]``;
            ``-1`` means the base model alone.

    Returns:
        ``(N, out)`` float32: row n equals ``lora_forward(x[n], weight, bias, As[k], Bs[k],
        scalings[k])`` with ``k = adapter_ids[n]`` (the base output where k = -1). The base
        matmul is done once for the whole batch.

    中文：同一批内多个适配器：底座矩阵乘一次，每行再加上自己适配器的低秩增量；id 为 −1 的行只用底座。
    """
    raise NotImplementedError("multi_lora_forward")


def nf4_quantize(weight: torch.Tensor, block_size: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """QLoRA's blockwise NF4 quantisation of a frozen weight.

    Args:
        weight: float32 tensor of any shape; flattened in row-major order and cut into
            consecutive blocks of ``block_size`` values.
        block_size: values per block (QLoRA uses 64); must divide ``weight.numel()``.

    Returns:
        ``(codes, absmax)``: ``codes (numel,)`` uint8 in ``[0, 16)`` (one code per value, not
        packed two per byte), the index of the level of :data:`NF4_CODE` nearest to
        ``value / absmax_of_its_block``; ``absmax (numel // block_size,)`` float32, each block's
        ``max |value|``. A block of zeros has absmax 0 and codes 7 (the level 0.0).

    Raises:
        ValueError: ``block_size < 1`` or not dividing ``weight.numel()``.

    Difference from bitsandbytes: it packs two codes per byte and may quantise absmax again
    ("double quantisation"); this exercise does neither.

    中文：展平后按块（默认 64 个值）求绝对值最大值 absmax，把每个值除以 absmax 后映射到最近的 NF4 级别，
    保存级别下标（uint8，不打包）和每块的 absmax。
    """
    raise NotImplementedError("nf4_quantize")


def nf4_dequantize(codes: torch.Tensor, absmax: torch.Tensor, shape: tuple[int, ...],
                   block_size: int = 64) -> torch.Tensor:
    """Back to float32: ``NF4_CODE[codes] * absmax of the value's block``, reshaped to ``shape``.

    中文：反量化：查表得到级别值，乘以所在块的 absmax，再恢复形状。
    """
    raise NotImplementedError("nf4_dequantize")
