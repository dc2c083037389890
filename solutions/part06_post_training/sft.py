"""Supervised fine-tuning: assistant-only labels, packing, segment-aware mask, token vs sequence mean (15 §15.3).

Reference solution. 中文：参考实现（只在助手 token 上计损失、打包、分段因果掩码、两种损失平均方式）。
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100
REDUCTIONS = ("token_mean", "sequence_mean")


def assistant_labels(input_ids: torch.Tensor, assistant_mask: torch.Tensor) -> torch.Tensor:
    """labels = input_ids on assistant tokens, IGNORE_INDEX elsewhere (unshifted)."""
    if input_ids.shape != assistant_mask.shape:
        raise ValueError(f"assistant_mask shape {tuple(assistant_mask.shape)} != input_ids shape {tuple(input_ids.shape)}")
    return torch.where(assistant_mask.bool(), input_ids.long(), torch.full_like(input_ids, IGNORE_INDEX, dtype=torch.long))


def pack_examples(input_ids: list[torch.Tensor], labels: list[torch.Tensor]):
    """Concatenate; positions restart at 0 per example; the first label of each example is ignored."""
    if not input_ids or len(input_ids) != len(labels):
        raise ValueError("need one labels tensor per example, and at least one example")
    if any(ids.ndim != 1 or ids.numel() == 0 or ids.shape != lab.shape for ids, lab in zip(input_ids, labels)):
        raise ValueError("every example must be a non-empty 1-D tensor with labels of the same length")
    first_ignored = [torch.cat([torch.full((1,), IGNORE_INDEX, dtype=torch.long), lab[1:].long()]) for lab in labels]
    return (torch.cat([ids.long() for ids in input_ids]),
            torch.cat(first_ignored),
            torch.cat([torch.arange(ids.numel()) for ids in input_ids]),
            torch.cat([torch.full((ids.numel(),), k, dtype=torch.long) for k, ids in enumerate(input_ids)]))


def segment_causal_mask(segment_ids: torch.Tensor) -> torch.Tensor:
    """mask[..., i, j] = (segment[i] == segment[j]) and j <= i."""
    T = segment_ids.shape[-1]
    same = segment_ids.unsqueeze(-1) == segment_ids.unsqueeze(-2)
    return same & torch.ones(T, T, dtype=torch.bool, device=segment_ids.device).tril()


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "token_mean",
                   segment_ids: torch.Tensor | None = None) -> torch.Tensor:
    """Cross-entropy of logits[:, t] against labels[:, t + 1], averaged per token or per sequence."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    targets = labels[:, 1:]                                              # (B, T-1): the shift by one
    nll = F.cross_entropy(logits[:, :-1].float().transpose(1, 2), targets.clamp(min=0), reduction="none")
    counted = (targets != IGNORE_INDEX).float()
    nll = nll * counted
    if reduction == "token_mean":
        return nll.sum() / counted.sum().clamp(min=1.0)
    if segment_ids is None:
        sums, counts = nll.sum(-1), counted.sum(-1)                      # one sequence per row
    else:
        seg = segment_ids[:, 1:].long()                                  # a label's sequence
        n_seg = int(segment_ids.max()) + 1
        sums = torch.zeros(seg.shape[0], n_seg).scatter_add_(1, seg, nll).reshape(-1)
        counts = torch.zeros(seg.shape[0], n_seg).scatter_add_(1, seg, counted).reshape(-1)
    has_labels = counts > 0
    if not bool(has_labels.any()):
        return nll.sum() * 0.0
    return (sums[has_labels] / counts[has_labels]).mean()
