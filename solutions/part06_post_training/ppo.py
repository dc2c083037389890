"""PPO: GAE with done masks, clipped policy and value losses, entropy bonus (textbook 15 §15.3.1).

Reference solution. 中文：参考实现（带终止掩码的 GAE、优势白化、截断策略损失、截断价值损失、熵奖励）。
"""
from __future__ import annotations

import torch


def gae(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, last_value: torch.Tensor,
        gamma: float = 0.99, lam: float = 0.95, normalize: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Reverse recursion A_t = delta_t + gamma*lam*(1-done_t)*A_{t+1}; returns = A + V (before whitening)."""
    N, T = rewards.shape
    not_done = 1.0 - dones.float()
    advantages = torch.zeros(N, T, dtype=torch.float32)
    carry = torch.zeros(N, dtype=torch.float32)
    next_value = last_value.float()
    for t in reversed(range(T)):
        delta = rewards[:, t] + gamma * next_value * not_done[:, t] - values[:, t]
        carry = delta + gamma * lam * not_done[:, t] * carry
        advantages[:, t] = carry
        next_value = values[:, t].float()
    returns = advantages + values
    if normalize:
        advantages = whiten(advantages)
    return advantages, returns


def whiten(x: torch.Tensor, mask: torch.Tensor | None = None, eps: float = 1e-8) -> torch.Tensor:
    """(x - mean) / (std + eps) over the masked elements (unbiased std); masked-out elements -> 0."""
    m = torch.ones_like(x, dtype=torch.bool) if mask is None else mask.bool()
    vals = x[m].float()
    out = (x.float() - vals.mean()) / (vals.std() + eps)
    return torch.where(m, out, torch.zeros_like(out))


def clipped_policy_loss(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor,
                        clip_range: float = 0.2) -> torch.Tensor:
    """-min(ratio * A, clip(ratio, 1 - c, 1 + c) * A) per token."""
    ratio = torch.exp(logps - old_logps)
    return -torch.min(ratio * advantages, torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range) * advantages)


def clipped_value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor,
                       clip_range: float = 0.2) -> torch.Tensor:
    """0.5 * max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2) per token."""
    clipped = old_values + torch.clamp(values - old_values, -clip_range, clip_range)
    return 0.5 * torch.max((values - returns) ** 2, (clipped - returns) ** 2)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """H = -sum_v p_v log p_v over the last dim, in fp32."""
    logp = logits.float().log_softmax(-1)
    return -(logp.exp() * logp).sum(-1)


def ppo_loss(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor, values: torch.Tensor,
             old_values: torch.Tensor, returns: torch.Tensor, entropy: torch.Tensor, mask: torch.Tensor,
             clip_range: float = 0.2, value_clip_range: float = 0.2, vf_coef: float = 0.5,
             ent_coef: float = 0.01) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """total = pg + vf_coef * vf - ent_coef * entropy, each a token mean over the mask."""
    m = mask.float()
    n = m.sum().clamp(min=1.0)
    pg = (clipped_policy_loss(logps, old_logps, advantages, clip_range) * m).sum() / n
    vf = (clipped_value_loss(values, old_values, returns, value_clip_range) * m).sum() / n
    ent = (entropy * m).sum() / n
    return pg + vf_coef * vf - ent_coef * ent, pg, vf, ent
