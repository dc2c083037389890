"""Tensor parallelism, Megatron style: each rank holds a slice of every weight; activations meet in all-reduces."""
from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F


def _flat(t: torch.Tensor) -> torch.Tensor:
    """(..., k) -> (tokens, k)"""
    return t.reshape(-1, t.shape[-1])


def column_parallel_linear(x, weight_shard, bias_shard, rank, world_size):
    return F.linear(x, weight_shard, bias_shard)  # (..., out / n); forward of f is the identity


def column_parallel_linear_backward(grad_y_shard, x, weight_shard, rank, world_size):
    grad_x = grad_y_shard @ weight_shard  # this rank's part of dL/dx: (..., in)
    dist.all_reduce(grad_x)  # backward of f: sum over the output slices
    grad_w = _flat(grad_y_shard).T @ _flat(x)
    return grad_x, grad_w, _flat(grad_y_shard).sum(0)


def row_parallel_linear(x_shard, weight_shard, bias, rank, world_size):
    y = F.linear(x_shard, weight_shard)  # partial sum over this rank's input slice
    dist.all_reduce(y)  # forward of g
    return y if bias is None else y + bias  # the bias once, after the sum


def row_parallel_linear_backward(grad_y, x_shard, weight_shard, rank, world_size):
    grad_x = grad_y @ weight_shard  # (..., in / n): backward of g is the identity
    return grad_x, _flat(grad_y).T @ _flat(x_shard), _flat(grad_y).sum(0)


def tp_mlp(x, w1_shard, b1_shard, w2_shard, b2, rank, world_size):
    h = F.gelu(column_parallel_linear(x, w1_shard, b1_shard, rank, world_size))
    return row_parallel_linear(h, w2_shard, b2, rank, world_size)


def tp_mlp_backward(grad_y, x, w1_shard, b1_shard, w2_shard, rank, world_size):
    a = F.linear(x, w1_shard, b1_shard).detach().requires_grad_(True)  # recomputed pre-activation
    h = F.gelu(a)
    grad_h, grad_w2, grad_b2 = row_parallel_linear_backward(grad_y, h.detach(), w2_shard, rank, world_size)
    (grad_a,) = torch.autograd.grad(h, a, grad_h)
    grad_x, grad_w1, grad_b1 = column_parallel_linear_backward(grad_a, x, w1_shard, rank, world_size)
    return grad_x, grad_w1, grad_b1, grad_w2, grad_b2


def tp_attention(x, wq_shard, wk_shard, wv_shard, wo_shard, n_heads, rank, world_size):
    b, s, d = x.shape
    heads = n_heads // world_size
    head_dim = wq_shard.shape[0] // heads

    def split(w):  # (b, s, heads * head_dim) -> (b, heads, s, head_dim)
        return F.linear(x, w).reshape(b, s, heads, head_dim).transpose(1, 2)

    o = F.scaled_dot_product_attention(split(wq_shard), split(wk_shard), split(wv_shard), is_causal=True,
                                       scale=1 / math.sqrt(head_dim))
    return row_parallel_linear(o.transpose(1, 2).reshape(b, s, heads * head_dim), wo_shard, None, rank, world_size)


def vocab_parallel_embedding(ids, weight_shard, rank, world_size):
    rows = weight_shard.shape[0]
    local = ids - rank * rows
    outside = (local < 0) | (local >= rows)
    out = weight_shard[local.masked_fill(outside, 0)].masked_fill(outside.unsqueeze(-1), 0.0)
    dist.all_reduce(out)  # every id's row comes from the one rank that holds it
    return out


def _global_softmax_parts(logits_shard):
    """(global max, sum of exp(logit - max) over the whole vocabulary), both (tokens,)."""
    m = logits_shard.amax(-1)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    sum_exp = torch.exp(logits_shard - m.unsqueeze(-1)).sum(-1)
    dist.all_reduce(sum_exp)
    return m, sum_exp


def _target_mask(logits_shard, targets, rank):
    rows = logits_shard.shape[-1]
    local = targets - rank * rows
    outside = (local < 0) | (local >= rows)
    return local.masked_fill(outside, 0), outside


def vocab_parallel_cross_entropy(logits_shard, targets, rank, world_size):
    m, sum_exp = _global_softmax_parts(logits_shard)
    local, outside = _target_mask(logits_shard, targets, rank)
    target_logit = logits_shard.gather(-1, local.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0.0)
    dist.all_reduce(target_logit)
    return torch.log(sum_exp) + m - target_logit


def vocab_parallel_cross_entropy_backward(logits_shard, targets, grad_loss, rank, world_size):
    m, sum_exp = _global_softmax_parts(logits_shard)
    local, outside = _target_mask(logits_shard, targets, rank)
    grad = torch.exp(logits_shard - m.unsqueeze(-1)) / sum_exp.unsqueeze(-1)
    one_hot = F.one_hot(local, logits_shard.shape[-1]).to(grad.dtype) * (~outside).unsqueeze(-1)
    return (grad - one_hot) * grad_loss.unsqueeze(-1)
