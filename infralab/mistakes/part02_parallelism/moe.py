"""References and known mistakes of part02_parallelism.moe (routing, capacity, balance, the MoE block, the
expert-parallel all-to-all traffic)."""
import math

import torch
import torch.nn.functional as F

from infralab.distributed import Counts
from infralab.i18n import tr


def compute_dtype(dtype):
    return torch.promote_types(dtype, torch.float32)


def reference_routing(logits, k, renormalise=True):
    probs = F.softmax(logits.to(compute_dtype(logits.dtype)), dim=-1)
    weights, experts = torch.topk(probs, k, dim=-1)
    return (weights / weights.sum(-1, keepdim=True) if renormalise else weights), experts


def routing_mistakes(logits, k):
    return {("top-k of the softmax not renormalised (Qwen2-MoE with norm_topk_prob=False; the spec renormalises, as Mixtral)",
             "Top-k 概率没有重新归一化（相当于 Qwen2-MoE 的 norm_topk_prob=False；本题与 Mixtral 一样要归一化）"):
            lambda: reference_routing(logits, k, renormalise=False)[0]}


def reference_capacity(tokens, experts, k, factor):
    return math.ceil(factor * tokens * k / experts)


def capacity_mistakes(tokens, experts, k, factor):
    return {("capacity rounded down (floor) instead of up", "容量向下取整了，应向上取整"): math.floor(factor * tokens * k / experts),
            ("capacity without the k of top-k (tokens / experts x factor)", "容量公式漏了 top-k 的 k"):
            math.ceil(factor * tokens / experts)}


def reference_keep(experts, num_experts, capacity, choice_major=True):
    """Slots of each expert taken in GShard's priority: all first choices in token order, then second choices..."""
    tokens, k = experts.shape
    order = [(t, s) for s in range(k) for t in range(tokens)] if choice_major else \
        [(t, s) for t in range(tokens) for s in range(k)]
    keep, used = torch.zeros(tokens, k, dtype=torch.bool), torch.zeros(num_experts, dtype=torch.int64)
    for t, s in order:
        e = experts[t, s]
        if used[e] < capacity:
            used[e] += 1
            keep[t, s] = True
    return keep


def keep_mistakes(experts, num_experts, capacity):
    return {("slots filled token by token (token 0's choices, then token 1's...), not every first choice before any second",
             "按 token 顺序填槽（先处理 token 0 的全部选择），应先填所有 token 的第一选择，再填第二选择"):
            reference_keep(experts, num_experts, capacity, choice_major=False)}


def reference_balance_loss(logits, experts, num_experts, per_token=False, probs=None):
    tokens, k = experts.shape
    p = F.softmax(logits.to(compute_dtype(logits.dtype)), dim=-1) if probs is None else probs
    f = torch.bincount(experts.reshape(-1), minlength=num_experts).to(p.dtype) / (tokens * (1 if per_token else k))
    return num_experts * (f * p.mean(0)).sum()


def balance_mistakes(logits, experts, num_experts):
    k = experts.shape[1]
    topk_only = torch.zeros_like(F.softmax(logits.to(compute_dtype(logits.dtype)), -1))
    topk_only.scatter_(-1, experts, reference_routing(logits, k)[0])
    return {
        ("f_e counts assignments over T, not T k (transformers' load_balancing_loss_func: k times the Switch form)",
         "f_e 除以了 T 而不是 T·k（transformers 的 load_balancing_loss_func 的写法，是 Switch 形式的 k 倍）"):
            lambda: reference_balance_loss(logits, experts, num_experts, per_token=True),
        ("P_e averaged over the renormalised top-k weights instead of the full softmax",
         "P_e 用了重新归一化后的 top-k 权重，应使用对全部专家的 softmax 概率"):
            lambda: reference_balance_loss(logits, experts, num_experts, probs=topk_only),
        ("the factor E (number of experts) left out", "漏了系数 E（专家数）"):
            lambda: reference_balance_loss(logits, experts, num_experts) / num_experts,
    }


def reference_biased_routing(scores, bias, k, gate_from_biased=False):
    experts = torch.topk(scores + bias, k, dim=-1).indices
    w = (scores + bias if gate_from_biased else scores).gather(-1, experts)
    return w / w.sum(-1, keepdim=True), experts


def biased_mistakes(scores, bias, k):
    return {("gate weights taken from the biased scores (the bias must only choose the experts)",
             "门控权重用了加偏置后的分数（偏置只用于选专家，不参与加权）"):
            lambda: reference_biased_routing(scores, bias, k, gate_from_biased=True)[0]}


def reference_bias_update(bias, experts, num_experts, rate, sign=1.0):
    load = torch.bincount(experts.reshape(-1), minlength=num_experts).to(bias.dtype)
    return bias + sign * rate * torch.sign(load.mean() - load)


def bias_update_mistakes(bias, experts, num_experts, rate):
    return {("sign flipped: overloaded experts got a larger bias", "符号反了：过载专家的偏置被调大"):
            lambda: reference_bias_update(bias, experts, num_experts, rate, sign=-1.0)}


def expert_mlp(x, gate, up, down):
    return (F.silu(x @ gate.T) * (x @ up.T)) @ down.T


def reference_moe(x, router_weight, gate_proj, up_proj, down_proj, k, renormalise=True):
    flat = x.reshape(-1, x.shape[-1])
    weights, experts = reference_routing(flat @ router_weight.T, k, renormalise)
    out = torch.zeros_like(flat)
    for t in range(flat.shape[0]):
        for s in range(k):
            e = experts[t, s]
            out[t] += weights[t, s].to(x.dtype) * expert_mlp(flat[t:t + 1], gate_proj[e], up_proj[e], down_proj[e])[0]
    return out.reshape(x.shape)


def moe_mistakes(x, router_weight, gate_proj, up_proj, down_proj, k):
    flat = x.reshape(-1, x.shape[-1])
    return {
        ("top-k weights not renormalised", "Top-k 权重没有重新归一化"):
            lambda: reference_moe(x, router_weight, gate_proj, up_proj, down_proj, k, renormalise=False),
        ("gate and up projections swapped (silu applied to up)", "gate 与 up 投影用反了（silu 作用在 up 上）"):
            lambda: reference_moe(x, router_weight, up_proj, gate_proj, down_proj, k),
        ("the expert outputs were not weighted (plain sum of the k experts)", "专家输出没有乘路由权重（直接相加）"):
            lambda: sum(expert_mlp(flat, gate_proj[e], up_proj[e], down_proj[e]) *
                        (reference_routing(flat @ router_weight.T, k)[1] == e).any(-1, keepdim=True)
                        for e in range(router_weight.shape[0])).reshape(x.shape),
    }


def ep_expected_bytes(xs, router_weight, k, world_size, num_experts, hidden):
    """Input bytes of rank r's three ``all_to_all_single`` calls in expert-parallel MoE, one int per rank:
    the E int64 counts, its ``T_r k`` dispatched rows and the results of the rows routed to its experts
    (each row ``hidden`` elements of x's dtype)."""
    local, row = num_experts // world_size, hidden * xs[0].element_size()
    routed = torch.zeros(world_size, dtype=torch.int64)  # assignments of all ranks' tokens to rank q's experts
    for x in xs:
        routed += torch.bincount(reference_routing(x @ router_weight.T, k)[1].reshape(-1) // local, minlength=world_size)
    return [num_experts * 8 + (x.shape[0] * k + int(routed[r])) * row for r, x in enumerate(xs)]


def ep_traffic(xs, router_weight, k, world_size, num_experts, hidden):
    """Per rank: exactly three all_to_all_single calls (counts, dispatch, combine) of ep_expected_bytes."""
    return [{"all_to_all_single": Counts(3, b)} for b in ep_expected_bytes(xs, router_weight, k, world_size,
                                                                          num_experts, hidden)]


def ep_traffic_mistakes(xs, hidden):
    """Traffic patterns (one per rank) of known expert-parallel mistakes, for assert_traffic."""
    tokens, row = [x.shape[0] for x in xs], hidden * xs[0].element_size()

    def moved(traffic):
        return sum(c.bytes for c in traffic.values())

    def whole_batch(r):  # every rank's tokens on every rank: W copies of mine out (or an all-gather), all back
        return lambda t: any(kind.startswith("all_gather") for kind in t) or \
            moved(t) >= (len(xs) * tokens[r] + sum(tokens)) * row
    return {tr("part02.moe.point_to_point"): lambda t: "send" in t or "recv" in t,  # first: sends add up to a lot
            tr("part02.moe.every_token_to_every_rank"): [whole_batch(r) for r in range(len(xs))]}
