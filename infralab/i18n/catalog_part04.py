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
    # prefix_cache
    "part04.prefix_trace": (
        "{where}: {what} is {got}, expected {expected}",
        "{where}：{what} 为 {got}，应为 {expected}",
    ),
    "part04.prefix_differs": (
        "{what} is {got}, expected {expected} (a brute-force model of the rules). Operations so far: {ops}",
        "{what} 为 {got}，应为 {expected}（按规则逐一检查的暴力模型）。到此为止的操作：{ops}",
    ),
}
