"""Paged decode attention: attention that reads K/V through block tables (textbook 04 §4.3
PagedAttention; 05 §5.2 KV 布局).

In a decode step every sequence of the batch brings one new query token per head, and its keys
and values sit in the paged pool of ``paged_kv`` (blocks scattered anywhere in memory).
PagedAttention computes ordinary attention, but finds token ``j`` of sequence ``i`` through the
block table::

    slot = block_tables[i, j // block_size] * block_size + j % block_size
    k_j  = k_pool.view(-1, Hkv, D)[slot]

Only the first ``context_lens[i]`` tokens exist: the rest of the last block, and table entries
past ``ceil(context_lens[i] / block_size)``, are padding (filled with -1) and must not be read.

中文说明：
解码阶段每个序列只有 1 个新 query；它的 K/V 分散存放在分页缓存的各个物理块里。分页注意力就是普通的
缩放点积注意力，只是第 j 个 token 要先通过块表换算出槽位再去取 K/V。只有前 context_lens[i] 个 token
有效，最后一块剩余的槽位和块表中的 -1 填充都不能参与计算。GQA：第 h 个 query 头使用第 h // (Hq/Hkv) 个 KV 头。
"""
from __future__ import annotations

import torch


def paged_decode_attention(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                           block_tables: torch.Tensor, context_lens: torch.Tensor,
                           scale: float | None = None) -> torch.Tensor:
    """One decode step of attention for a batch whose K/V live in a paged pool.

    Args:
        q: ``(B, Hq, D)`` the new token's query per head.
        k_pool, v_pool: ``(num_blocks, block_size, Hkv, D)`` physical pools; ``Hq % Hkv == 0``.
        block_tables: ``(B, max_blocks)`` int32; row ``i`` lists sequence ``i``'s physical blocks,
            padded with -1.
        context_lens: ``(B,)`` int32, tokens of each sequence (>= 1).
        scale: softmax scale, default ``1 / sqrt(D)``.

    Returns:
        ``(B, Hq, D)`` in ``q``'s dtype::

            out[i, h] = softmax(q[i, h] · K_i[:, h // g]^T * scale) @ V_i[:, h // g],  g = Hq / Hkv

        where ``K_i``/``V_i`` are the ``context_lens[i]`` tokens gathered through the table.
        Softmax in fp32.

    中文：通过块表取出每个序列的有效 K/V（只取前 context_lens[i] 个 token），做 GQA 解码注意力，softmax 用 fp32。
    """
    raise NotImplementedError("paged_decode_attention")
