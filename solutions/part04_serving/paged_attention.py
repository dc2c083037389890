"""Decode attention through block tables (textbook 04 §4.3). Reference solution."""
from __future__ import annotations

import math

import torch


def paged_decode_attention(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                           block_tables: torch.Tensor, context_lens: torch.Tensor,
                           scale: float | None = None) -> torch.Tensor:
    """One decode step of attention for a batch whose K/V live in a paged pool."""
    b, hq, d = q.shape
    _, block_size, hkv, _ = k_pool.shape
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    out = torch.empty_like(q)
    for i in range(b):
        n = int(context_lens[i])
        positions = torch.arange(n)
        slots = block_tables[i].long()[positions // block_size] * block_size + positions % block_size
        k = k_pool.reshape(-1, hkv, d)[slots].float()  # (n, Hkv, D)
        v = v_pool.reshape(-1, hkv, d)[slots].float()
        k = k.repeat_interleave(hq // hkv, dim=1)  # query head h reads kv head h // group
        v = v.repeat_interleave(hq // hkv, dim=1)
        scores = torch.einsum("hd,nhd->hn", q[i].float(), k) * scale  # (Hq, n)
        out[i] = torch.einsum("hn,nhd->hd", scores.softmax(dim=-1), v).to(q.dtype)
    return out
