"""LoRA and QLoRA's NF4: low-rank adapters, scaling, merging, multi-adapter batches (textbook 15 §15.3).

Reference solution. 中文：参考实现（LoRA 初始化与缩放、合并/拆分、同批多适配器、NF4 分块量化）。
"""
from __future__ import annotations

import math

import torch

# The 16 NormalFloat-4 levels of the QLoRA paper (Dettmers et al. 2023, appendix E).
NF4_CODE = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)


def init_lora(in_features: int, out_features: int, r: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A ~ U(-1/sqrt(in), 1/sqrt(in)) (Kaiming-uniform, a = sqrt(5)), B = 0."""
    g = torch.Generator().manual_seed(seed)
    bound = 1.0 / math.sqrt(in_features)
    A = (torch.rand(r, in_features, generator=g) * 2.0 - 1.0) * bound
    return A, torch.zeros(out_features, r)


def lora_scaling(alpha: float, r: int, use_rslora: bool = False) -> float:
    """alpha / r, or alpha / sqrt(r) with rsLoRA."""
    return alpha / math.sqrt(r) if use_rslora else alpha / r


def lora_forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, A: torch.Tensor,
                 B: torch.Tensor, scaling: float) -> torch.Tensor:
    """x W^T + b + scaling * (x A^T) B^T, never forming B A."""
    base = x @ weight.T
    if bias is not None:
        base = base + bias
    return base + scaling * ((x @ A.T) @ B.T)


def merge(weight: torch.Tensor, A: torch.Tensor, B: torch.Tensor, scaling: float) -> torch.Tensor:
    """W + scaling * B A."""
    return weight + scaling * (B @ A)


def unmerge(merged: torch.Tensor, A: torch.Tensor, B: torch.Tensor, scaling: float) -> torch.Tensor:
    """W_merged - scaling * B A."""
    return merged - scaling * (B @ A)


def multi_lora_forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, As: torch.Tensor,
                       Bs: torch.Tensor, scalings: torch.Tensor, adapter_ids: torch.Tensor) -> torch.Tensor:
    """One base matmul for the batch; row n adds adapter adapter_ids[n]'s delta (-1: none)."""
    out = x @ weight.T
    if bias is not None:
        out = out + bias
    use = adapter_ids >= 0
    ids = adapter_ids.clamp(min=0)
    shrink = torch.einsum("ni,nri->nr", x, As[ids])                    # (N, r)
    expand = torch.einsum("nr,nor->no", shrink, Bs[ids])               # (N, out)
    delta = scalings[ids].unsqueeze(-1) * expand
    return out + torch.where(use.unsqueeze(-1), delta, torch.zeros_like(delta))


def nf4_quantize(weight: torch.Tensor, block_size: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """Blockwise absmax scaling of the flattened weight, then the nearest NF4 level per value."""
    flat = weight.reshape(-1).float()
    if block_size < 1 or flat.numel() % block_size != 0:
        raise ValueError(f"block_size must divide {flat.numel()}, got {block_size}")
    blocks = flat.view(-1, block_size)
    absmax = blocks.abs().amax(dim=1)                                  # (num_blocks,)
    normalised = blocks / torch.where(absmax > 0, absmax, torch.ones_like(absmax)).unsqueeze(1)
    code = torch.tensor(NF4_CODE)
    codes = (normalised.unsqueeze(-1) - code).abs().argmin(dim=-1)      # nearest level
    return codes.reshape(-1).to(torch.uint8), absmax


def nf4_dequantize(codes: torch.Tensor, absmax: torch.Tensor, shape: tuple[int, ...],
                   block_size: int = 64) -> torch.Tensor:
    """code[index] * absmax of its block, reshaped."""
    values = torch.tensor(NF4_CODE)[codes.long()].view(-1, block_size) * absmax.unsqueeze(1)
    return values.reshape(shape)
