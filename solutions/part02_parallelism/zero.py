"""ZeRO: a flat, padded parameter buffer split evenly over ranks, and a sharded AdamW step.

Reference solution (textbook 02 §2.2.8).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

BYTES_PARAM, BYTES_GRAD, BYTES_OPTIMIZER = 2, 2, 12  # ZeRO paper: fp16 params and grads, K = 12


def shard_size(total_numel: int, world_size: int) -> int:
    """Elements per rank: ceil(total / world_size); the flat buffer holds shard_size * world_size."""
    return -(-total_numel // world_size)


def flatten_and_pad(tensors: list[torch.Tensor], world_size: int) -> torch.Tensor:
    """All tensors flattened back to back, zero-padded to a multiple of world_size."""
    flat = torch.cat([t.detach().reshape(-1) for t in tensors])
    padded = torch.zeros(shard_size(flat.numel(), world_size) * world_size, dtype=flat.dtype)
    padded[: flat.numel()] = flat
    return padded


def owner_map(numels: list[int], world_size: int) -> list[tuple[int, int, int, int]]:
    """(rank, param_index, start, end) for every non-empty piece; sorted by rank, then parameter."""
    size = shard_size(sum(numels), world_size)
    return _pieces(numels, [(rank * size, (rank + 1) * size) for rank in range(world_size)])


def _pieces(numels: list[int], ranges: list[tuple[int, int]]) -> list[tuple[int, int, int, int]]:
    """(rank, param_index, start, end) of each parameter's overlap with each rank's buffer range."""
    pieces = []
    for rank, (lo, hi) in enumerate(ranges):
        offset = 0
        for index, numel in enumerate(numels):
            start, end = max(lo, offset), min(hi, offset + numel)
            if start < end:
                pieces.append((rank, index, start - offset, end - offset))
            offset += numel
    return pieces


def memory_per_rank(num_params: int, world_size: int, stage: int) -> dict[str, int]:
    """Bytes of fp16 params, fp16 grads and fp32 optimizer states on one rank at a ZeRO stage."""
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {stage!r}")
    shard = shard_size(num_params, world_size)
    params = BYTES_PARAM * (shard if stage >= 3 else num_params)
    grads = BYTES_GRAD * (shard if stage >= 2 else num_params)
    optimizer = BYTES_OPTIMIZER * (shard if stage >= 1 else num_params)
    return {"params": params, "grads": grads, "optimizer": optimizer, "total": params + grads + optimizer}


def adamw_update(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor,
                 step: int, lr: float, betas: tuple[float, float], eps: float,
                 weight_decay: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One AdamW step on plain tensors (torch.optim.AdamW's formula); returns new tensors."""
    beta1, beta2 = betas
    param = param * (1 - lr * weight_decay)  # decoupled weight decay
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    m_hat = exp_avg / (1 - beta1 ** step)
    v_hat = exp_avg_sq / (1 - beta2 ** step)
    param = param - lr * m_hat / (v_hat.sqrt() + eps)
    return param, exp_avg, exp_avg_sq


def zero_adamw_step(flat_param: torch.Tensor, flat_grad: torch.Tensor, exp_avg: torch.Tensor,
                    exp_avg_sq: torch.Tensor, step: int, rank: int, world_size: int, lr: float,
                    betas: tuple[float, float], eps: float,
                    weight_decay: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Reduce-scatter the gradient (mean), AdamW on this rank's shard, all-gather the parameters."""
    size = flat_param.numel() // world_size
    grad_shard = _mean_gradient_shard(flat_grad, size, world_size)
    mine = flat_param[rank * size:(rank + 1) * size]
    new_shard, exp_avg, exp_avg_sq = adamw_update(mine, grad_shard, exp_avg, exp_avg_sq, step, lr, betas, eps,
                                                  weight_decay)
    return _gather_shards(new_shard, flat_param), exp_avg, exp_avg_sq


def _mean_gradient_shard(flat_grad: torch.Tensor, size: int, world_size: int) -> torch.Tensor:
    """This rank's (size,) shard of the gradient, averaged over ranks (reduce-scatter, then / N)."""
    grad_shard = torch.empty(size, dtype=flat_grad.dtype)
    dist.reduce_scatter_tensor(grad_shard, flat_grad.contiguous())
    return grad_shard / world_size


def _gather_shards(shard: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Every rank's updated shard, all-gathered into a buffer shaped like the flat parameters."""
    gathered = torch.empty_like(like)
    dist.all_gather_into_tensor(gathered, shard.contiguous())
    return gathered
