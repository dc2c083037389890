"""Reference solution of part02_parallelism.context_parallel: ring attention with a log-sum-exp merge
and the load-balanced causal layout."""
from __future__ import annotations

import math

import torch
import torch.distributed as dist


def merge_partials(out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor,
                   lse_b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    lse = torch.logaddexp(lse_a, lse_b)
    safe = torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)  # both parts empty: weights 0, not NaN
    weight_a = torch.exp(lse_a - safe).unsqueeze(-1)
    weight_b = torch.exp(lse_b - safe).unsqueeze(-1)
    return (weight_a * out_a + weight_b * out_b).to(out_a.dtype), lse


def block_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_positions: torch.Tensor,
                    k_positions: torch.Tensor, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    compute = torch.promote_types(q.dtype, torch.float32)
    scores = (q.to(compute) @ k.to(compute).transpose(-1, -2)) / math.sqrt(q.shape[-1])  # (B, H, Sq, Sk)
    if causal:
        allowed = k_positions[None, :] <= q_positions[:, None]
        scores = scores.masked_fill(~allowed, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # -inf for a row that sees no key
    safe = torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)
    probs = torch.exp(scores - safe.unsqueeze(-1))
    return (probs @ v.to(compute)).to(q.dtype), lse


def rank_positions(seq_len: int, rank: int, world_size: int) -> torch.Tensor:
    chunks = 2 * world_size
    if seq_len % chunks:
        raise ValueError(f"seq_len ({seq_len}) must be divisible by 2 * world_size ({chunks})")
    size = seq_len // chunks
    first, second = rank, chunks - 1 - rank
    return torch.cat([torch.arange(first * size, (first + 1) * size), torch.arange(second * size, (second + 1) * size)])


def _next_block(kv: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """One ring step: send the K/V block held to rank + 1, receive the next one from rank - 1."""
    incoming = torch.empty_like(kv)
    request = dist.isend(kv, (rank + 1) % world_size)
    dist.recv(incoming, (rank - 1) % world_size)
    request.wait()
    return incoming


def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rank: int, world_size: int,
                   causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    n = world_size
    seq_len = q.shape[-2] * n
    mine = rank_positions(seq_len, rank, n)
    kv = torch.stack([k, v])  # one message per step
    out, lse = block_attention(q, k, v, mine, mine, causal)
    for step in range(1, n):
        kv = _next_block(kv, rank, n)  # the block that started on rank (rank - step) % n
        theirs = rank_positions(seq_len, (rank - step) % n, n)
        out, lse = merge_partials(out, lse, *block_attention(q, kv[0], kv[1], mine, theirs, causal))
    return out, lse
