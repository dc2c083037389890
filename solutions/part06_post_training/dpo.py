"""Direct preference optimisation: DPO, IPO and conservative DPO (textbook 15 §15.3.1).

Reference solution. 中文：参考实现（序列对数概率、隐式奖励、DPO/cDPO/IPO 损失）。
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

LOSS_TYPES = ("sigmoid", "ipo")


def sequence_logps(logits: torch.Tensor, input_ids: torch.Tensor, response_mask: torch.Tensor,
                   average: bool = False) -> torch.Tensor:
    """Sum (or mean) of the response tokens' log-probabilities; logits[:, t] predicts token t+1."""
    logprobs = logits[:, :-1].float().log_softmax(-1)                          # (B, T-1, V)
    targets = input_ids[:, 1:]                                                 # (B, T-1)
    token_logps = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)       # (B, T-1)
    mask = response_mask[:, 1:].to(torch.float32)
    total = (token_logps * mask).sum(-1)
    if average:
        total = total / mask.sum(-1).clamp(min=1.0)
    return total


def dpo_rewards(policy_chosen_logps: torch.Tensor, policy_rejected_logps: torch.Tensor,
                ref_chosen_logps: torch.Tensor, ref_rejected_logps: torch.Tensor,
                beta: float = 0.1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    chosen = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected = beta * (policy_rejected_logps - ref_rejected_logps)
    return chosen, rejected, chosen - rejected


def _check_loss_args(beta: float, loss_type: str, label_smoothing: float) -> None:
    """ValueError for an unknown loss type, beta <= 0, or label smoothing outside [0, 0.5) (sigmoid only)."""
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    if not 0.0 <= label_smoothing < 0.5:
        raise ValueError(f"label_smoothing must lie in [0, 0.5), got {label_smoothing}")
    if loss_type == "ipo" and label_smoothing > 0:
        raise ValueError("label_smoothing applies to the sigmoid (DPO) loss only, not to IPO")


def dpo_loss(policy_chosen_logps: torch.Tensor, policy_rejected_logps: torch.Tensor,
             ref_chosen_logps: torch.Tensor, ref_rejected_logps: torch.Tensor,
             beta: float = 0.1, loss_type: str = "sigmoid", label_smoothing: float = 0.0) -> torch.Tensor:
    _check_loss_args(beta, loss_type, label_smoothing)
    h = (policy_chosen_logps - ref_chosen_logps) - (policy_rejected_logps - ref_rejected_logps)
    if loss_type == "ipo":
        return (h - 1.0 / (2.0 * beta)) ** 2
    eps = label_smoothing
    return -(1.0 - eps) * F.logsigmoid(beta * h) - eps * F.logsigmoid(-beta * h)
