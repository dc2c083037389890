"""Reference solution of part02_parallelism.moe: routing, capacity, load balance, the MoE block, and
expert-parallel dispatch/combine with all_to_all_single."""
from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F


def top_k_routing(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    probs = logits.to(torch.promote_types(logits.dtype, torch.float32)).softmax(dim=-1)  # (T, E), over every expert
    weights, experts = probs.topk(k, dim=-1)  # (T, k), descending
    return weights / weights.sum(dim=-1, keepdim=True), experts


def expert_capacity(num_tokens: int, num_experts: int, k: int, capacity_factor: float) -> int:
    return math.ceil(capacity_factor * num_tokens * k / num_experts)


def capacity_mask(experts: torch.Tensor, num_experts: int, capacity: int) -> torch.Tensor:
    tokens, k = experts.shape
    keep = torch.zeros(tokens, k, dtype=torch.bool)
    used = [0] * num_experts
    for slot in range(k):  # every token's first choice before any second choice (GShard)
        for token in range(tokens):
            e = int(experts[token, slot])
            if used[e] < capacity:
                used[e] += 1
                keep[token, slot] = True
    return keep


def load_balancing_loss(logits: torch.Tensor, experts: torch.Tensor, num_experts: int) -> torch.Tensor:
    tokens, k = experts.shape
    mean_prob = logits.to(torch.promote_types(logits.dtype, torch.float32)).softmax(dim=-1).mean(dim=0)  # P_e
    fraction = torch.bincount(experts.reshape(-1), minlength=num_experts).to(mean_prob.dtype) / (tokens * k)  # f_e
    return num_experts * (fraction * mean_prob).sum()


def biased_routing(scores: torch.Tensor, bias: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    experts = (scores + bias).topk(k, dim=-1).indices  # the bias only chooses
    weights = scores.gather(-1, experts)  # the gate uses the unbiased affinities
    return weights / weights.sum(dim=-1, keepdim=True), experts


def update_routing_bias(bias: torch.Tensor, experts: torch.Tensor, num_experts: int, rate: float) -> torch.Tensor:
    load = torch.bincount(experts.reshape(-1), minlength=num_experts).to(bias.dtype)
    return bias + rate * torch.sign(load.mean() - load)


def _expert(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor) -> torch.Tensor:
    return (F.silu(x @ gate.T) * (x @ up.T)) @ down.T  # SwiGLU: (n, H) -> (n, I) -> (n, H)


def moe_forward(x: torch.Tensor, router_weight: torch.Tensor, gate_proj: torch.Tensor, up_proj: torch.Tensor,
                down_proj: torch.Tensor, k: int) -> torch.Tensor:
    flat = x.reshape(-1, x.shape[-1])
    weights, experts = top_k_routing(flat @ router_weight.T, k)
    out = torch.zeros_like(flat)
    for e in range(router_weight.shape[0]):
        token, slot = torch.where(experts == e)
        if token.numel():
            y = _expert(flat[token], gate_proj[e], up_proj[e], down_proj[e])
            out.index_add_(0, token, (y * weights[token, slot, None]).to(out.dtype))
    return out.reshape(x.shape)


def expert_parallel_moe(x: torch.Tensor, router_weight: torch.Tensor, gate_proj: torch.Tensor, up_proj: torch.Tensor,
                        down_proj: torch.Tensor, k: int, rank: int, world_size: int) -> torch.Tensor:
    local = gate_proj.shape[0]  # rank q owns experts q*local .. (q+1)*local - 1
    weights, experts = top_k_routing(x @ router_weight.T, k)
    order = torch.sort(experts.reshape(-1), stable=True).indices  # assignments by expert, then token, then slot
    token = order // k
    # the split sizes: how many of my rows go to each expert, swapped for how many come to each of mine
    sent_per_expert = torch.bincount(experts.reshape(-1), minlength=router_weight.shape[0])  # (E,), int64
    received_per_expert = torch.empty_like(sent_per_expert)  # (W * local,): from rank q, for my local experts
    dist.all_to_all_single(received_per_expert, sent_per_expert)
    send_splits = sent_per_expert.reshape(world_size, local).sum(-1).tolist()
    recv_splits = received_per_expert.reshape(world_size, local).sum(-1).tolist()
    # dispatch: the rows of the sorted assignments, each rank's share to it
    rows = x.new_empty(sum(recv_splits), x.shape[-1])
    dist.all_to_all_single(rows, x[token], recv_splits, send_splits)
    # the local experts on their rows: grouped by source rank, then by local expert
    pieces = rows.split(received_per_expert.tolist())
    results = torch.cat([_expert(p, gate_proj[i % local], up_proj[i % local], down_proj[i % local])
                         for i, p in enumerate(pieces)]).to(x.dtype)
    # combine: the results go back the way they came; weight them and add them to their tokens
    returned = x.new_empty(order.numel(), x.shape[-1])
    dist.all_to_all_single(returned, results, send_splits, recv_splits)
    weight = weights.reshape(-1)[order].to(x.dtype)
    return torch.zeros_like(x).index_add_(0, token, returned * weight[:, None])
