"""Group relative policy optimisation: advantages, clipped surrogate, k3 KL, aggregation (15 §15.3.1).

Reference solution. 中文：参考实现（组内归一化优势、逐 token 截断代理目标、k3 KL、三种聚合方式）。
"""
from __future__ import annotations

import torch

AGGREGATIONS = ("token_mean", "sequence_mean", "constant")


def group_advantages(rewards: torch.Tensor, group_size: int, scale: bool = True,
                     eps: float = 1e-4) -> torch.Tensor:
    """(r - group mean) / (group std + eps); Dr. GRPO (scale=False): r - group mean."""
    if group_size < 2 or rewards.numel() % group_size != 0:
        raise ValueError(f"group_size must be >= 2 and divide {rewards.numel()}, got {group_size}")
    groups = rewards.float().view(-1, group_size)                      # (num_groups, G)
    centred = groups - groups.mean(dim=1, keepdim=True)
    if scale:
        centred = centred / (groups.std(dim=1, keepdim=True) + eps)     # unbiased std (G - 1)
    return centred.reshape(-1)


def kl_k3(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || pi_ref) per token: exp(ref - logp) - (ref - logp) - 1 >= 0."""
    log_ratio = ref_logps - logps
    return torch.exp(log_ratio) - log_ratio - 1.0


def grpo_per_token_loss(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor,
                        ref_logps: torch.Tensor | None = None, beta: float = 0.0,
                        eps_low: float = 0.2, eps_high: float | None = None) -> torch.Tensor:
    """-min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A) + beta * k3, per token."""
    if beta != 0.0 and ref_logps is None:
        raise ValueError("beta != 0 needs ref_logps")
    eps_high = eps_low if eps_high is None else eps_high
    ratio = torch.exp(logps - old_logps)                               # (B, T)
    adv = advantages.unsqueeze(-1)                                     # (B, 1)
    surrogate = torch.min(ratio * adv, torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * adv)
    loss = -surrogate
    if beta != 0.0:
        loss = loss + beta * kl_k3(logps, ref_logps)
    return loss


def aggregate_loss(per_token_loss: torch.Tensor, mask: torch.Tensor, mode: str = "token_mean",
                   max_len: int | None = None) -> torch.Tensor:
    """token_mean: sum/num tokens; sequence_mean: mean of per-sequence means; constant: sum/(B*max_len)."""
    if mode not in AGGREGATIONS:
        raise ValueError(f"mode must be one of {AGGREGATIONS}, got {mode!r}")
    m = mask.to(per_token_loss.dtype)
    masked = per_token_loss * m
    if mode == "token_mean":
        return masked.sum() / m.sum().clamp(min=1.0)
    if mode == "sequence_mean":
        return (masked.sum(-1) / m.sum(-1).clamp(min=1.0)).mean()
    if max_len is None or max_len < 1:
        raise ValueError("mode='constant' needs max_len >= 1")
    return masked.sum() / (per_token_loss.shape[0] * max_len)
