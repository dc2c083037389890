"""Messages of the Part 04 serving exercises' tests (scheduler, prefix_cache, speculative).
Keys: ``part04.*``."""

MESSAGES = {
    # scheduler
    "part04.sched_over_budget": (
        "step {step}: {total} tokens scheduled, over the token budget of {budget}: {batch}",
        "第 {step} 步：调度了 {total} 个 token，超过了 token 预算 {budget}：{batch}",
    ),
    "part04.sched_bad_entry": (
        "step {step}: the batch entry {entry} is not [seq_id, start, num_tokens] of a running sequence with "
        "num_tokens >= 1 and start = its num_computed_tokens before the step ({computed})",
        "第 {step} 步：批中的条目 {entry} 不是合法的 [序列号, 起始位置, token 数]：序列须在运行中，token 数 >= 1，"
        "起始位置须等于该步之前的已算 token 数（{computed}）",
    ),
    "part04.sched_twice": (
        "step {step}: sequence {seq} appears twice in the batch {batch}",
        "第 {step} 步：序列 {seq} 在批 {batch} 中出现了两次",
    ),
    "part04.sched_block_shared": (
        "block {block} is in the tables of sequences {first} and {second}: a block was allocated twice",
        "块 {block} 同时出现在序列 {first} 和 {second} 的块表中：同一个块被分配了两次",
    ),
    "part04.sched_block_count": (
        "{free} free blocks + {held} blocks in tables != the pool's {total} blocks: blocks leaked or were counted twice",
        "{free} 个空闲块 + 块表中的 {held} 个块 != 总块数 {total}：有块泄漏或被重复计数",
    ),
    "part04.sched_table_len": (
        "sequence {seq}: {got} blocks reserved for {tokens} tokens in blocks of {block_size}, expected {want}",
        "序列 {seq}：为 {tokens} 个 token（每块 {block_size} 个）预留了 {got} 个块，应为 {want} 个",
    ),
    "part04.sched_preempted_state": (
        "step {step}: the preempted sequence {seq} still holds blocks {table} or computed tokens ({computed}), "
        "or is not in the waiting queue {waiting}",
        "第 {step} 步：被抢占的序列 {seq} 仍占有块 {table} 或已算 token（{computed}），或不在等待队列 {waiting} 中",
    ),
    "part04.sched_starved": (
        "sequences {ids} did not finish within {steps} steps with no new arrivals (every step must advance the "
        "oldest running sequence: starvation or a livelock)",
        "在没有新请求的情况下，序列 {ids} 在 {steps} 步内没有结束（每一步都必须推进最老的运行序列：出现了饿死或活锁）",
    ),
    "part04.sched_lost_tokens": (
        "sequence {seq} finished after generating {got} tokens, expected {want} (a preempted sequence keeps the "
        "tokens it generated and finishes them)",
        "序列 {seq} 生成了 {got} 个 token 就结束了，应为 {want} 个（被抢占的序列保留已生成的 token，并继续生成完）",
    ),
    "part04.sched_differs": (
        "after event {index} ({event}) the scheduler's {what} is {got}, expected {expected}. Events so far: {history}",
        "第 {index} 个事件（{event}）之后，调度器的 {what} 为 {got}，应为 {expected}。到此为止的事件：{history}",
    ),
    "part04.sched_trace": (
        "{where}: {what} is {got}, expected {expected} (the hand-derived trace in the test's docstring)",
        "{where}：{what} 为 {got}，应为 {expected}（见测试文档字符串中手工推导的轨迹）",
    ),
    # the visible tests of scheduler
    "part04.sched_chunk_first": (
        "tokens 0..3 of the prompt first",
        "先调度 prompt 的第 0..3 个 token",
    ),
    "part04.sched_chunk_next": (
        "then tokens 4..7",
        "然后是第 4..7 个 token",
    ),
    "part04.sched_chunk_last": (
        "then the last 2: a chunk smaller than the budget",
        "然后是最后 2 个：一个小于预算的分块",
    ),
    "part04.sched_chunk_samples": (
        "the last chunk samples the first new token",
        "最后一个分块采样出第一个新 token",
    ),
    "part04.sched_then_decode": (
        "then one decode token",
        "然后是一个 decode token",
    ),
    "part04.sched_two_new_finish": (
        "2 new tokens: finished",
        "已生成 2 个新 token：结束",
    ),
    "part04.sched_fcfs_chunked": (
        "FCFS; B's prompt is chunked to fit the budget",
        "先来先服务；B 的 prompt 被分块以放进预算",
    ),
    "part04.sched_decode_first": (
        "A's decode token comes first (not C's waiting prompt), got {step}",
        "A 的 decode token 排在最前（而不是 C 等待中的 prompt），实际为 {step}",
    ),
    "part04.sched_no_budget_left": (
        "then B's remaining prompt chunk; no budget is left for C, got {step}",
        "然后是 B 剩余的 prompt 分块；没有预算留给 C，实际为 {step}",
    ),
    "part04.sched_newest_preempted": (
        "the newest running sequence (1) gives its blocks back, got {step}",
        "最新运行的序列（1）交还它的块，实际为 {step}",
    ),
    "part04.sched_no_admit_on_preempt": (
        "A decodes; nothing is admitted in a step that preempted",
        "A 做 decode；发生抢占的那一步不接纳新序列",
    ),
    "part04.sched_preempted_front": (
        "the preempted sequence goes to the front of the waiting queue",
        "被抢占的序列回到等待队列的最前面",
    ),
    "part04.sched_recompute_drops": (
        "recompute: its K/V is dropped",
        "重计算：它的 K/V 被丢弃",
    ),
    "part04.sched_keeps_generated": (
        "its generated token is kept",
        "它已生成的 token 被保留",
    ),
    "part04.sched_eos_finishes": (
        "an end-of-sequence token finishes it early",
        "序列结束 token 让它提前结束",
    ),
    # prefix_cache
    "part04.prefix_trace": (
        "{where}: {what} is {got}, expected {expected}",
        "{where}：{what} 为 {got}，应为 {expected}",
    ),
    "part04.prefix_differs": (
        "{what} is {got}, expected {expected} (a brute-force model of the rules). Operations so far: {ops}",
        "{what} 为 {got}，应为 {expected}（按规则逐一检查的暴力模型）。到此为止的操作：{ops}",
    ),
    # the visible tests of prefix_cache
    "part04.prefix_shared": (
        "[1, 2] and [1, 2, 3, 4] are cached: the second prompt shares them ({a} vs {b})",
        "[1, 2] 和 [1, 2, 3, 4] 已缓存：第二个 prompt 共享这些块（{a} 对 {b}）",
    ),
    "part04.prefix_third_differs": (
        "the third blocks hold different tokens",
        "两者的第三个块装的 token 不同",
    ),
    "part04.prefix_full_only": (
        "cached: [1,2], [1,2,3,4], [1,2,3,4,9,9]; a partly filled block never",
        "已缓存：[1,2]、[1,2,3,4]、[1,2,3,4,9,9]；未填满的块从不缓存",
    ),
    "part04.prefix_whole_key": (
        "block [3, 4] after [1, 2] is not a block [3, 4] at the start, or after [9, 9]: K/V depends on every "
        "earlier token, so the key is the whole prefix",
        "[1, 2] 之后的块 [3, 4] 不同于开头的块 [3, 4]，也不同于 [9, 9] 之后的块 [3, 4]："
        "K/V 取决于之前的每个 token，所以键是整个前缀",
    ),
    "part04.prefix_all_free": (
        "every block can be allocated again",
        "每个块都可以再次分配",
    ),
    "part04.prefix_freed_cached": (
        "but the full blocks are still cached: freeing does not forget",
        "但满的块仍在缓存中：释放并不会遗忘",
    ),
    "part04.prefix_evict_lru": (
        "no unused block: evict the LRU one, A's last block (released first)",
        "没有未用过的块：驱逐 LRU 的块，即 A 的最后一个块（最先释放）",
    ),
    "part04.prefix_unused_first": (
        "one block was never used: take it, keep the cache",
        "有一个块从未用过：用它，保留缓存",
    ),
    "part04.prefix_hit_evicted": (
        "got {table}: the hit block was evicted for the same request",
        "得到 {table}：命中的块被同一个请求驱逐了",
    ),
}
