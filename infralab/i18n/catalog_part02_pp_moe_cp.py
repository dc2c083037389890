"""Messages of the Part 02 exercises pipeline, moe and context_parallel (their tests and references).
Keys: ``part02.pipeline.*``, ``part02.moe.*``, ``part02.cp.*``."""

MESSAGES = {
    "part02.pipeline.simulate_result": (
        "simulate must return a dict with makespan, bubble_ratio and peak_in_flight; got {got}",
        "simulate 应返回包含 makespan、bubble_ratio、peak_in_flight 的字典；实际得到 {got}",
    ),
    "part02.pipeline.step_result": (
        "{where}rank {rank}: expected (grad_weight, grad_bias, loss), got {got}",
        "{where}rank {rank}：应返回 (grad_weight, grad_bias, loss)，实际得到 {got}",
    ),
    "part02.pipeline.collectives": (
        "rank {rank} called library collectives {names}; the pipeline talks through send/recv only",
        "rank {rank} 调用了库里的集合通信 {names}；流水线只能用 send/recv 通信",
    ),
    "part02.pipeline.message_sizes": (
        "rank {rank} moved messages of {sizes} elements; every activation and gradient is one message of {numel} "
        "elements (one micro-batch of shape (b, d))",
        "rank {rank} 发送/接收的消息大小为 {sizes}；每个激活和梯度都应是一条 {numel} 个元素的消息（一个 (b, d) 的 micro-batch）",
    ),
    "part02.pipeline.modified_input": (
        "pipeline_1f1b_step modified its weight in place",
        "pipeline_1f1b_step 原地修改了传入的 weight",
    ),
    "part02.pipeline.loss_not_none": (
        "rank {rank} is not the last stage: its loss should be None, got {got}",
        "rank {rank} 不是最后一段：loss 应为 None，实际得到 {got}",
    ),
    "part02.moe.not_a_pair": (
        "{what}: expected a pair (weights, experts), got {got}",
        "{what}：应返回 (weights, experts) 二元组，实际得到 {got}",
    ),
    "part02.moe.dropped_with_room": (
        "an assignment was dropped although every expert has room ({capacity} slots)",
        "每个专家都还有空位（容量 {capacity}），却有分配被丢弃了",
    ),
    "part02.moe.modified_input": (
        "update_routing_bias modified its input bias in place",
        "update_routing_bias 原地修改了传入的 bias",
    ),
    "part02.moe.every_token_to_every_rank": (
        "every token sent to every rank (W copies of the batch, or an all-gather), not only those routed to its "
        "experts",
        "把所有 token 发给了所有 rank（整个 batch 发了 W 份，或用了 AllGather），应只发送路由到对方专家的 token",
    ),
    "part02.moe.point_to_point": (
        "the exchange built from dist.isend/dist.recv per peer: dispatch and combine are one dist.all_to_all_single "
        "each, after one all_to_all_single of the per-expert counts",
        "用逐个对端的 dist.isend/dist.recv 实现了交换：应先用一次 all_to_all_single 交换每个专家的计数，"
        "dispatch 和 combine 各用一次 dist.all_to_all_single",
    ),
    "part02.gloo.peer_gone": (
        "{function} on gloo: a rank lost its peer ({error})",
        "{function} 在 gloo 上运行时，某个 rank 的对端进程已退出（{error}）",
    ),
    "part02.cp.not_a_pair": (
        "{what}: expected a pair (out, lse), got {got}",
        "{what}：应返回 (out, lse) 二元组，实际得到 {got}",
    ),
    "part02.cp.nan": (
        "{name}: {count} NaN elements",
        "{name}：有 {count} 个 NaN 元素",
    ),
    "part02.cp.unbalanced": (
        "unmasked causal scores per rank: {work}; the balanced layout gives every rank the same (contiguous blocks "
        "give {contiguous})",
        "各 rank 在因果掩码下计算的有效分数个数：{work}；负载均衡的切分应使各 rank 相同（连续切块为 {contiguous}）",
    ),
    "part02.cp.modified_input": (
        "ring_attention modified its inputs in place",
        "ring_attention 原地修改了传入的张量",
    ),
}
