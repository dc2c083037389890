"""Sampling and decoding (textbook 01 §1.2.5, 采样与解码).

Reference solution. See exercises/part01_transformer/sampling.py for the specification.
"""
from __future__ import annotations

import torch

NEG_INF = float("-inf")


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits / T, before any softmax."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature} (use sample(temperature=0) for greedy)")
    return logits / temperature


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep every logit >= the k-th largest of its row (ties at the boundary are kept)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    k = min(k, logits.shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (B, 1)
    return logits.masked_fill(logits < kth, NEG_INF)


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep a token iff the probability of the tokens strictly more likely than it is < p: tied
    tokens stay together (transformers' TopPLogitsWarper cuts inside a tie; the exercise says why)."""
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1], got {p}")
    if p == 1:
        return logits.clone()
    probs = torch.softmax(logits.float(), dim=-1)
    q = torch.sort(probs, dim=-1, descending=True).values  # (B, V)
    before = torch.cumsum(q, dim=-1) - q  # S_{j-1}: the mass ranked before j
    kept = (before < p).sum(dim=-1, keepdim=True)  # >= 1: the top token always stays
    cutoff = q.gather(-1, kept - 1)  # probability of the last kept token
    return logits.masked_fill(probs < cutoff, NEG_INF)  # ties with the cut-off stay together


def min_p_filter(logits: torch.Tensor, min_p: float) -> torch.Tensor:
    """Keep tokens with probability >= min_p * (the row's top probability)."""
    if not 0 <= min_p <= 1:
        raise ValueError(f"min_p must be in [0, 1], got {min_p}")
    probs = torch.softmax(logits.float(), dim=-1)
    threshold = min_p * probs.amax(dim=-1, keepdim=True)
    return logits.masked_fill(probs < threshold, NEG_INF)


def apply_repetition_penalty(logits: torch.Tensor, context_ids: torch.Tensor, penalty: float) -> torch.Tensor:
    """Seen tokens: positive logits / penalty, non-positive logits * penalty."""
    if penalty <= 0:
        raise ValueError(f"penalty must be > 0, got {penalty}")
    seen = torch.zeros_like(logits, dtype=torch.bool)
    seen.scatter_(-1, context_ids.long(), True)  # (B, V): a repeated id sets the same flag
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen, penalised, logits)


def sample(logits: torch.Tensor, seed: int, temperature: float = 1.0, top_k: int = 0,
           top_p: float = 1.0, min_p: float = 0.0) -> torch.Tensor:
    """Temperature -> top-k -> top-p -> min-p -> softmax -> one seeded draw per row."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(_warp(logits, temperature, top_k, top_p, min_p).float(), dim=-1)
    g = torch.Generator(device=logits.device).manual_seed(seed)
    return torch.multinomial(probs, 1, generator=g).squeeze(-1)  # (B,)


def _warp(logits: torch.Tensor, temperature: float, top_k: int, top_p: float, min_p: float) -> torch.Tensor:
    """The logits the sampler draws from: tempered, then filtered (disabled filters skipped)."""
    z = apply_temperature(logits, temperature)
    if top_k > 0:
        z = top_k_filter(z, top_k)
    if top_p < 1.0:
        z = top_p_filter(z, top_p)
    if min_p > 0.0:
        z = min_p_filter(z, min_p)
    return z
