"""Context parallelism: ring attention with a log-sum-exp merge and a load-balanced causal layout.

Textbook 02 §2.2.6 (context parallelism: Ring Attention), 09 (long context).

With a sequence too long for one device, each of W ranks holds a part of the sequence: its
queries, keys and values. Attention needs every query against every key, so the K/V blocks travel
round a ring: at each of W - 1 steps every rank sends the K/V block it holds to rank + 1 and
receives one from rank - 1, attends its queries to it, and folds the result into what it has.

Folding needs no second pass: attention over keys A ∪ B can be rebuilt from the two partial
results ``(out_A, lse_A)`` and ``(out_B, lse_B)``, where ``lse`` is the log-sum-exp of a row's
scaled scores (FlashAttention keeps the same statistic)::

    lse = log(exp(lse_A) + exp(lse_B))
    out = exp(lse_A - lse) * out_A + exp(lse_B - lse) * out_B

A row that sees no key of a block (everything masked) has ``lse = -inf`` and contributes nothing;
it must not produce NaN.

Causal load balance: with contiguous blocks, rank 0's queries see only its own keys and rank W - 1
sees everything, so the last rank does about 2W - 1 times the work of the first. Split the sequence into **2W
equal chunks** and give rank r chunks **r and 2W - 1 - r** (an early and a late one): every rank
then computes the same number of unmasked scores (the layout of Megatron-LM's context parallelism
and of zigzag ring attention).

Conventions: tensors ``(B, H, S, D)``; scores ``q @ k^T / sqrt(D)``; causal means key position <=
query position (global positions); ``lse`` is computed in float32 (float64 stays float64), ``out``
has q's dtype. Rank r's local tensors hold the positions :func:`rank_positions` gives, in that
order, for the causal and the non-causal case alike. ``ring_attention`` runs on every rank at once
(SPMD) and talks only through ``dist.isend`` / ``dist.recv`` (``dist.send``/``irecv`` too); library
collectives raise an error. Tests run it on a simulated group (threads) with 2-4 ranks and on gloo.

中文说明：
上下文并行把长序列切给 W 个 rank，每个 rank 只持有自己那部分的 Q、K、V。K/V 沿环传递 W-1 步，
每一步把手里的 K/V 发给 rank+1、从 rank-1 收一块，用本地 Q 对它做注意力，再用 log-sum-exp
合并：lse = log(e^{lse_A} + e^{lse_B})，out = e^{lse_A-lse}·out_A + e^{lse_B-lse}·out_B。某行在一个块中
看不到任何 key 时 lse 为 -inf，不能产生 NaN。因果掩码下为了负载均衡，把序列切成 2W 块，rank r 持有
第 r 块和第 2W-1-r 块，这样每个 rank 计算的有效分数个数相同。
"""
from __future__ import annotations

import torch
import torch.distributed as dist  # noqa: F401  (what ring_attention talks through)


def merge_partials(out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor,
                   lse_b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention over keys A ∪ B from the partial results over A and over B.

    Args:
        out_a, out_b: ``(..., S, D)`` partial outputs (same shape and dtype).
        lse_a, lse_b: ``(..., S)`` their log-sum-exps (``-inf`` where a row saw no key).

    Returns:
        ``(out, lse)``: ``lse = logaddexp(lse_a, lse_b)``;
        ``out = exp(lse_a - lse) * out_a + exp(lse_b - lse) * out_b`` in out_a's dtype. Where both
        lse are ``-inf``: out 0 and lse ``-inf`` (never NaN).

    中文：用 log-sum-exp 合并两个部分注意力结果；两部分都为空（lse 都是 -inf）时输出 0，不能出现 NaN。
    """
    raise NotImplementedError("merge_partials")


def block_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_positions: torch.Tensor,
                    k_positions: torch.Tensor, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of a block of queries over one block of keys, with its log-sum-exp.

    Args:
        q: ``(B, H, Sq, D)``; k, v: ``(B, H, Sk, D)``.
        q_positions: ``(Sq,)`` int64 global positions of the queries; k_positions: ``(Sk,)`` of the keys.
        causal: if True, query i sees key j only when ``k_positions[j] <= q_positions[i]``.

    Returns:
        ``(out, lse)``: out ``(B, H, Sq, D)`` in q's dtype = softmax(scores) @ v over the visible
        keys; lse ``(B, H, Sq)`` = logsumexp of the visible scaled scores ``q k^T / sqrt(D)``
        (float32, or float64 for float64 inputs). A row with no visible key: out 0, lse ``-inf``.

    中文：带 log-sum-exp 的块注意力；掩码按全局位置；整行都被遮住时输出 0、lse 为 -inf（不能是 NaN）。
    """
    raise NotImplementedError("block_attention")


def rank_positions(seq_len: int, rank: int, world_size: int) -> torch.Tensor:
    """The global positions rank r holds in the load-balanced layout.

    Args:
        seq_len: S, divisible by ``2 * world_size`` (otherwise raise ``ValueError``).
        rank, world_size: r and W.

    Returns:
        int64 tensor of ``S / W`` positions: chunk r then chunk ``2W - 1 - r`` of the 2W chunks of
        ``S / (2W)`` positions. Example: S = 8, W = 2: rank 0 holds ``[0, 1, 6, 7]``, rank 1 ``[2, 3, 4, 5]``.

    中文：负载均衡的切分：序列分成 2W 块，rank r 持有第 r 块和第 2W-1-r 块。
    """
    raise NotImplementedError("rank_positions")


def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rank: int, world_size: int,
                   causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Ring attention (SPMD): this rank's queries over the whole sequence's keys.

    Args:
        q, k, v: ``(B, H, S/W, D)`` this rank's part, at positions ``rank_positions(S, rank, W)``
            (S = W x the local length). Not modified.
        rank, world_size: r and W.
        causal: causal mask over global positions.

    Returns:
        ``(out, lse)``: ``(B, H, S/W, D)`` in q's dtype and ``(B, H, S/W)``: exactly this rank's rows
        of full attention over the whole sequence, and their log-sum-exp.

    Algorithm: start from ``block_attention`` of the local q, k, v. Then W - 1 steps: send the K/V
    block you hold as **one message** ``torch.stack([k, v])`` to rank + 1 (``dist.isend``), receive
    the next from rank - 1, wait; at step s the block you received started on rank ``(r - s) % W``,
    whose positions give the causal mask; fold it in with :func:`merge_partials`. Exactly W - 1
    messages per rank, all to rank + 1, each of ``2 B H (S/W) D`` elements.

    中文：环形注意力；K/V 打包成一条消息沿环传 W-1 步（发给 rank+1，从 rank-1 收），第 s 步收到的块
    来自 rank (r-s)%W，用它的全局位置做因果掩码，再用 lse 合并。
    """
    raise NotImplementedError("ring_attention")
