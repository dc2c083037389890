"""Messages of the Part 04 engine capstone's tests and benchmark. Keys: ``engine.*``."""

MESSAGES = {
    "engine.outputs_count": (
        "{what}: expected the outputs of {want} requests, got {got}",
        "{what}：应返回 {want} 个请求的输出，实际为 {got}",
    ),
    "engine.tokens_differ": (
        "{what}: request {rid} differs from the request decoded alone at generated token {at}: got {got}, "
        "expected {want}",
        "{what}：请求 {rid} 在第 {at} 个生成 token 处与单独解码的结果不同：得到 {got}，应为 {want}",
    ),
    "engine.no_preemption": (
        "the test expected preemptions with {blocks} blocks of {block_size} tokens, stats() counted none: {stats}",
        "测试预期在 {blocks} 个块（每块 {block_size} 个 token）下会发生抢占，但 stats() 一次也没有记录：{stats}",
    ),
    "engine.preemptions_counted": (
        "stats()['preemptions'] = {got}, but metrics() of the requests add up to {want}",
        "stats()['preemptions'] = {got}，但各请求 metrics() 的抢占次数之和为 {want}",
    ),
    "engine.cached_tokens": (
        "{what}: cached_tokens = {got}, expected {want} (whole blocks of the longest cached prefix, the last "
        "prompt token never taken from the cache)",
        "{what}：cached_tokens = {got}，应为 {want}（最长已缓存前缀的整块数 × 块大小，prompt 的最后一个 token "
        "永远不从缓存取）",
    ),
    "engine.computed_tokens": (
        "stats()['computed_tokens'] = {got}, expected {want}: the prompt tokens plus all generated tokens but the "
        "last, minus the cached ones",
        "stats()['computed_tokens'] = {got}，应为 {want}：prompt token 加上除最后一个以外的生成 token，减去缓存命中的",
    ),
    "engine.not_reproducible": (
        "the same requests with the same seeds gave different tokens: {first} then {second}",
        "同样的请求、同样的种子，两次得到的 token 不同：{first}，然后是 {second}",
    ),
    "engine.sampled_differs": (
        "request {rid} (seed {seed}): sampled {got}, expected {want}: the i-th token is "
        "sampling.sample(logits of its last position, seed + i, its own temperature, top_k, top_p, min_p)",
        "请求 {rid}（种子 {seed}）：采样得到 {got}，应为 {want}：第 i 个 token 是 "
        "sampling.sample(最后位置的 logits, seed + i, 它自己的 temperature、top_k、top_p、min_p)",
    ),
    "engine.metric": (
        "metrics({rid})[{metric!r}] = {got}, expected {want}",
        "metrics({rid})[{metric!r}] = {got}，应为 {want}",
    ),
    "engine.metric_keys": (
        "metrics() keys {got}, expected exactly {want}",
        "metrics() 的键为 {got}，应当正好是 {want}",
    ),
    "engine.stats_keys": (
        "stats() keys {got}, expected exactly {want}",
        "stats() 的键为 {got}，应当正好是 {want}",
    ),
    "engine.finished_ids": (
        "step {step} returned {got} as finished, expected {want}",
        "第 {step} 步返回的已结束请求为 {got}，应为 {want}",
    ),
    "engine.bad_request": (
        "add_request({what}) should raise ValueError",
        "add_request({what}) 应当抛出 ValueError",
    ),
    "engine.good_request_refused": (
        "add_request({what}) raised {error}, but the ids 0 and vocab_size - 1 are inside [0, vocab_size)",
        "add_request({what}) 抛出了 {error}，但 id 0 与 vocab_size - 1 都在 [0, vocab_size) 之内",
    ),
    "engine.cached_total": (
        "stats()['cached_tokens'] = {got}, but the requests' metrics() add up to {want}",
        "stats()['cached_tokens'] = {got}，但各请求 metrics() 的缓存命中数之和为 {want}",
    ),
    # benchmark
    "engine.bench_header": (
        "engine throughput: {requests} requests, prompts {prompts}, outputs {outputs}, {params} parameters, "
        "{dtype} on {device}",
        "引擎吞吐：{requests} 个请求，prompt 长度 {prompts}，输出长度 {outputs}，{params} 个参数，{dtype}，设备 {device}",
    ),
    "engine.bench_line": (
        "{name}: {tokens} tokens in {seconds:.2f} s = {tps:.1f} tokens/s; TTFT p50 {ttft50:.3f} s p99 {ttft99:.3f} s; "
        "TPOT p50 {tpot50:.4f} s p99 {tpot99:.4f} s",
        "{name}：{tokens} 个 token，用时 {seconds:.2f} 秒 = 每秒 {tps:.1f} 个 token；TTFT p50 {ttft50:.3f} 秒 "
        "p99 {ttft99:.3f} 秒；TPOT p50 {tpot50:.4f} 秒 p99 {tpot99:.4f} 秒",
    ),
    "engine.bench_decision": (
        "speed-up {speedup:.1f}x over the naive loop (target {target}x): {verdict}",
        "相对朴素逐个请求循环加速 {speedup:.1f} 倍（目标 {target} 倍）：{verdict}",
    ),
    "engine.bench_agreement": (
        "greedy agreement with the naive loop: {same}/{total} requests identical; first differences "
        "[request, token]: {first}",
        "与朴素循环的贪心结果一致性：{same}/{total} 个请求完全相同；首个不同处 [请求, token]：{first}",
    ),
    "engine.bench_agreement_fp32": (
        "the same in fp32 ({tokens} tokens at most): {same}/{total} requests identical; first differences "
        "[request, token]: {first}",
        "同样的请求改用 fp32（最多 {tokens} 个 token）：{same}/{total} 个请求完全相同；首个不同处 [请求, token]：{first}",
    ),
    "engine.bench_met": ("met", "达到"),
    "engine.bench_not_met": ("not met", "未达到"),
    "engine.bench_written": (
        "record written to {path}",
        "记录已写入 {path}",
    ),
}
