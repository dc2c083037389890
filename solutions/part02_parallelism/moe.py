"""Reference solution of part02_parallelism.moe: routing, capacity, load balance, the MoE block, and
expert-parallel dispatch/combine over send/recv."""
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


def _exchange(outgoing: list[torch.Tensor | None], incoming: list[torch.Tensor | None], rank: int) -> None:
    """Send outgoing[q] to rank q and fill incoming[q] from rank q (None or empty: no message)."""
    requests = [dist.isend(t.contiguous(), q) for q, t in enumerate(outgoing)
                if q != rank and t is not None and t.numel()]
    for q, t in enumerate(incoming):
        if q != rank and t is not None and t.numel():
            dist.recv(t, q)
    for request in requests:
        request.wait()


def expert_parallel_moe(x: torch.Tensor, router_weight: torch.Tensor, gate_proj: torch.Tensor, up_proj: torch.Tensor,
                        down_proj: torch.Tensor, k: int, rank: int, world_size: int) -> torch.Tensor:
    n, local = world_size, gate_proj.shape[0]  # rank q owns experts q*local .. (q+1)*local - 1
    weights, experts = top_k_routing(x @ router_weight.T, k)
    order = torch.sort(experts.reshape(-1), stable=True).indices  # assignments by expert, then token, then slot
    token, expert = order // k, experts.reshape(-1)[order]
    owner = expert // local
    # dispatch: how many rows for each of the peer's local experts, then the rows themselves
    counts = [torch.bincount(expert[owner == q] - q * local, minlength=local) for q in range(n)]
    received_counts = [torch.empty(local, dtype=torch.int64) for _ in range(n)]
    received_counts[rank] = counts[rank]
    _exchange(counts, received_counts, rank)
    outgoing = [x[token[owner == q]] for q in range(n)]
    incoming = [torch.empty(int(c.sum()), x.shape[-1], dtype=x.dtype) for c in received_counts]
    incoming[rank] = outgoing[rank]
    _exchange(outgoing, incoming, rank)
    # the local experts on every peer's rows, in the order they came
    results = []
    for q in range(n):
        pieces = incoming[q].split(received_counts[q].tolist())
        results.append(torch.cat([_expert(rows, gate_proj[e], up_proj[e], down_proj[e]) for e, rows in enumerate(pieces)]))
    # combine: the rows come back in dispatch order; weight them and add them to their tokens
    returned = [torch.empty_like(outgoing[q]) for q in range(n)]
    returned[rank] = results[rank]
    _exchange(results, returned, rank)
    weight = weights.reshape(-1)[order].to(x.dtype)
    return torch.zeros_like(x).index_add_(0, token, torch.cat(returned) * weight[:, None])
