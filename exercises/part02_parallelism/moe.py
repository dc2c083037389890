"""Mixture of experts: top-k routing, capacity and dropping, load balance, and expert parallelism.

Textbook 02 §2.2.5 (expert parallelism: all-to-all dispatch/combine, token drop); 09 §9.5-9.7 (DeepSeekMoE,
auxiliary-loss-free balancing).

A sparse MoE layer replaces one FFN by E experts (each a SwiGLU MLP) and a **router**: a linear
map ``(H) -> (E)`` giving one logit per expert. Each token goes to its top k experts and the
layer's output is the weighted sum of their outputs.

Conventions (the spec; where libraries differ we say so):

- Router (Mixtral, as transformers' ``MixtralTopKRouter``): probabilities = softmax of the logits
  over **all** E experts, computed in float32 (float64 logits stay float64); take the top k
  (``torch.topk``: descending, ties to the lower index); **renormalise** the k weights to sum to 1.
  Qwen2-MoE renormalises only when ``norm_topk_prob=True`` (its default is False); DeepSeek-V3
  uses sigmoid affinities and a bias (:func:`biased_routing`).
- Expert e: ``down_e(silu(gate_e(x)) * up_e(x))`` with ``gate_proj[e]``, ``up_proj[e]``:
  ``(I, H)`` and ``down_proj[e]``: ``(H, I)`` (``y = x @ W.T`` as ``nn.Linear``). transformers 5
  stores ``gate_up_proj[e] = cat([gate_proj[e], up_proj[e]])`` of shape ``(2I, H)``.
- Capacity (Switch / GShard): each expert takes at most
  ``C = ceil(capacity_factor * T * k / E)`` of the T tokens' k assignments; the slots are filled
  first by every token's first choice, in token order, then by the second choices, and so on
  (GShard's priority); an assignment that finds its expert full is **dropped** (the token keeps its
  residual path only).
- Auxiliary load-balancing loss (Switch Transformer, GShard; DeepSeek's expert-level balance loss
  without its alpha): ``L = E * sum_e f_e * P_e`` with ``f_e`` = (assignments to expert e) /
  (T k) and ``P_e`` = mean over tokens of the softmax probability of e (all E experts, before
  top-k). Perfect balance gives L = 1. transformers' ``load_balancing_loss_func`` divides the
  counts by T only, so it equals k times this.
- Auxiliary-loss-free balancing (DeepSeek-V3): a per-expert bias ``b`` is added to the affinity
  scores **only to choose** the top k; the gate weights come from the unbiased scores (then
  normalised). After each step, ``b_e += rate * sign(mean load - load_e)``: overloaded experts
  become less attractive, underloaded ones more.

Expert parallelism (:func:`expert_parallel_moe`): W ranks, each holding ``E / W`` experts (rank q
owns experts ``q*E/W .. (q+1)*E/W - 1``) and its own tokens. Each rank routes its tokens, sends
every token to the ranks owning its chosen experts (dispatch), the experts run, and the results go
back to the token's rank (combine), where they are weighted and summed. In production code each
exchange is one all-to-all: DeepSpeed-MoE and GShard pad every expert to its capacity (equal splits,
known in advance); Megatron-LM's dropless all-to-all token dispatcher uses uneven split sizes and
exchanges them first. We do as Megatron-LM: one ``dist.all_to_all_single`` of per-expert counts (the
split sizes), then one ``all_to_all_single`` with those split sizes for the dispatch and one for the
combine. The tests count each rank's
calls and bytes: exactly three all-to-alls, and only the tokens routed to a peer travel to it.

中文说明：
MoE 层由 E 个专家（SwiGLU MLP）和一个路由器组成。路由：对全部专家做 softmax（float32），取 top-k，
再把 k 个权重重新归一化（Mixtral 的做法；Qwen2-MoE 默认不归一化）。容量 C = ceil(容量因子 × T × k / E)，
先按 token 顺序填所有 token 的第一选择，再填第二选择，满了就丢弃。辅助负载均衡损失
L = E × Σ f_e × P_e（f_e 为分到专家 e 的比例，按 T·k 归一化；P_e 为平均路由概率），完全均衡时为 1。
DeepSeek-V3 的无辅助损失均衡：偏置只用于选专家，门控权重仍用原始分数；每步按负载更新偏置，
过载专家的偏置减小。专家并行：每个 rank 持有 E/W 个专家，按路由把 token 发给专家所在的 rank，
算完再发回原 rank 加权求和。与 Megatron-LM 一样，先用一次 all_to_all_single 交换每个专家的 token 数
（即切分大小），dispatch 与 combine 各用一次带不均匀切分的 all_to_all_single（教材 02 §2.2.5）。
"""
from __future__ import annotations

import torch
import torch.distributed as dist  # noqa: F401  (what expert_parallel_moe talks through)


def top_k_routing(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mixtral's router: softmax over all experts, top k, renormalised.

    Args:
        logits: ``(T, E)`` router logits, any float dtype.
        k: experts per token, ``1 <= k <= E``.

    Returns:
        ``(weights, experts)``: ``(T, k)`` weights in the compute dtype (float32, or float64 for
        float64 logits), each row summing to 1, in descending order; ``(T, k)`` int64 expert ids
        (``torch.topk``'s order).

    中文：先对全部专家做 softmax（至少 float32），取 top-k，再把这 k 个概率归一化到和为 1。
    """
    raise NotImplementedError("top_k_routing")


def expert_capacity(num_tokens: int, num_experts: int, k: int, capacity_factor: float) -> int:
    """Slots per expert: ``ceil(capacity_factor * num_tokens * k / num_experts)`` (an int).

    Example: 10 tokens, 4 experts, top-2, factor 1.25: ``ceil(6.25) = 7``.

    中文：每个专家的容量 = ceil(容量因子 × token 数 × k / 专家数)。
    """
    raise NotImplementedError("expert_capacity")


def capacity_mask(experts: torch.Tensor, num_experts: int, capacity: int) -> torch.Tensor:
    """Which assignments fit in their expert's capacity (GShard's priority).

    Args:
        experts: ``(T, k)`` int64 expert ids (column 0 = each token's first choice).
        num_experts: E; capacity: slots per expert (>= 0).

    Returns:
        ``(T, k)`` bool: True where the assignment is kept. Slots are taken in the order
        ``(token 0, choice 0), (token 1, choice 0), ..., (token T-1, choice 0), (token 0, choice 1), ...``;
        an assignment whose expert already has ``capacity`` kept assignments is dropped (False).

    中文：按"先所有 token 的第一选择、再第二选择"的顺序占用专家槽位，满了的置 False（丢弃）。
    """
    raise NotImplementedError("capacity_mask")


def load_balancing_loss(logits: torch.Tensor, experts: torch.Tensor, num_experts: int) -> torch.Tensor:
    """Switch/GShard auxiliary loss ``E * sum_e f_e * P_e``.

    Args:
        logits: ``(T, E)`` router logits.
        experts: ``(T, k)`` int64 chosen experts.
        num_experts: E.

    Returns:
        0-d tensor (compute dtype, as :func:`top_k_routing`): ``f_e`` = number of entries equal to e
        in ``experts`` / (T k); ``P_e`` = mean over the T tokens of ``softmax(logits)[:, e]``.
        Equals 1 when both are uniform. (transformers' ``load_balancing_loss_func`` = k times this.)

    中文：辅助负载均衡损失 E × Σ f_e × P_e，f_e 按 T·k 归一化，P_e 用全部专家上的 softmax 概率。
    """
    raise NotImplementedError("load_balancing_loss")


def biased_routing(scores: torch.Tensor, bias: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """DeepSeek-V3 routing with the load-balancing bias.

    Args:
        scores: ``(T, E)`` affinities (DeepSeek-V3: sigmoid of the logits; here given, positive).
        bias: ``(E,)`` per-expert bias.
        k: experts per token.

    Returns:
        ``(weights, experts)``: experts = ``topk(scores + bias, k)`` indices ``(T, k)`` int64 (descending
        biased score); weights = the **unbiased** scores of those experts, divided by their row sum,
        ``(T, k)`` in scores' dtype.

    中文：偏置只参与选专家（对 scores + bias 取 top-k），门控权重用原始分数并归一化。
    """
    raise NotImplementedError("biased_routing")


def update_routing_bias(bias: torch.Tensor, experts: torch.Tensor, num_experts: int, rate: float) -> torch.Tensor:
    """DeepSeek-V3's auxiliary-loss-free bias update after one step.

    Args:
        bias: ``(E,)``; not modified.
        experts: ``(T, k)`` int64 experts chosen in the step; load_e = how many times e appears.
        num_experts: E; rate: the update speed gamma.

    Returns:
        New ``(E,)`` bias (bias' dtype): ``bias + rate * sign(mean(load) - load)`` (sign(0) = 0).

    中文：按负载更新偏置：负载高于平均的专家偏置减 rate，低于平均的加 rate，相等不变。
    """
    raise NotImplementedError("update_routing_bias")


def moe_forward(x: torch.Tensor, router_weight: torch.Tensor, gate_proj: torch.Tensor, up_proj: torch.Tensor,
                down_proj: torch.Tensor, k: int) -> torch.Tensor:
    """The sparse MoE block (transformers' ``MixtralSparseMoeBlock`` in eval mode, no capacity limit).

    Args:
        x: ``(..., H)`` tokens; router_weight: ``(E, H)`` (logits = ``x @ router_weight.T``);
        gate_proj, up_proj: ``(E, I, H)``; down_proj: ``(E, H, I)``; k: experts per token.

    Returns:
        Tensor of x's shape and dtype: for every token,
        ``sum_j weights[j] * down_e(silu(gate_e(x)) * up_e(x))`` over its top-k experts
        ``e = experts[j]`` (weights and experts from :func:`top_k_routing`).

    中文：稀疏 MoE 前向：每个 token 取 top-k 专家，专家输出按路由权重加权求和。
    """
    raise NotImplementedError("moe_forward")


def expert_parallel_moe(x: torch.Tensor, router_weight: torch.Tensor, gate_proj: torch.Tensor, up_proj: torch.Tensor,
                        down_proj: torch.Tensor, k: int, rank: int, world_size: int) -> torch.Tensor:
    """The MoE block with experts split over ranks (SPMD): dispatch, local experts, combine.

    Args:
        x: ``(T_r, H)`` this rank's tokens (T_r may differ between ranks, and may be 0).
        router_weight: ``(E, H)``, the same on every rank.
        gate_proj, up_proj: ``(E/W, I, H)``; down_proj: ``(E/W, H, I)``: this rank's experts, global ids
            ``rank*E/W .. (rank+1)*E/W - 1``.
        k: experts per token; rank, world_size: this rank and W (E divisible by W).

    Returns:
        ``(T_r, H)``: equal to :func:`moe_forward` of this rank's tokens with all E experts.

    Protocol (Textbook 02 §2.2.5; every rank makes the same three calls, in this order):

    1. Route this rank's tokens (:func:`top_k_routing`). Sort the ``T_r * k`` assignments by global
       expert id, ties by token then slot (a stable sort of ``experts.reshape(-1)``).
    2. Split sizes: ``sent = bincount(experts, minlength=E)`` (int64, ``(E,)``: chunk q, elements
       ``q*E/W .. (q+1)*E/W - 1``, is what goes to rank q's experts). One
       ``dist.all_to_all_single(received, sent)`` (equal splits of E/W) gives ``received`` ``(E,)``:
       chunk q = how many rows rank q sends to each of your local experts (Megatron-LM exchanges the
       counts this way).
    3. Dispatch: one ``dist.all_to_all_single(rows, x[tokens in sorted order], output_split_sizes,
       input_split_sizes)`` with ``input_split_sizes[q]`` = sum of sent's chunk q and
       ``output_split_sizes[q]`` = sum of received's chunk q (python ints). ``rows`` arrive grouped
       by source rank, and within one source by local expert, in that rank's sorted order.
    4. Run each local expert on its rows (no routing weight applied on the expert's side).
    5. Combine: one ``dist.all_to_all_single`` sending the results back (the split sizes of step 3
       swapped): you get your ``T_r * k`` results in your sorted order; multiply each by its routing
       weight and add it to its token.

    Each rank's traffic is exactly three ``all_to_all_single`` calls of ``E * 8 + T_r * k * H * s +
    R_r * H * s`` input bytes in all (s = bytes per element, R_r = assignments of all ranks' tokens to
    this rank's experts; an all-to-all is counted by its whole input, the share that stays on the rank
    included); no other ``torch.distributed`` call. Sending every token to every rank gives
    the right output with W copies of the batch on the wire: the tests diagnose it from the traffic.
    ``torch.distributed.all_to_all_single`` splits along dim 0 and takes python lists of split sizes.

    中文：专家并行（教材 02 §2.2.5）。每个 rank 路由自己的 token，按专家编号稳定排序；先用一次
    all_to_all_single 交换"发给每个专家多少行"（E 个 int64 计数，得到切分大小），再用一次带不均匀切分的
    all_to_all_single 发送 token 行（dispatch），本地专家计算后用一次 all_to_all_single 按原路发回
    （combine，切分大小对调），最后在原 rank 上乘路由权重累加。只发送路由到对方专家的 token，
    不要把所有 token 发给所有 rank（结果虽对，但整个 batch 被发了 W 份，测试会按流量诊断出来）。
    """
    raise NotImplementedError("expert_parallel_moe")
