"""Messages of the Part 03 kernel exercises' tests. Keys: ``part03.*``."""

MESSAGES = {
    "part03.lse_shape": (
        "lse: expected shape (1, 2, 40) and dtype torch.float32, got {shape} {dtype}",
        "lse：形状应为 (1, 2, 40)，dtype 应为 torch.float32，实际是 {shape} {dtype}",
    ),
    "part03.perf_gate": (
        "correctness gate: {reason}",
        "正确性检查未通过：{reason}",
    ),
    "part03.perf_decision": (
        "{level} ({decision}): {reason}; measured: {measured}",
        "{level}（判定：{decision}）：{reason}；实测：{measured}",
    ),
    "part03.out_of_bounds": (
        "out-of-bounds tl.{op}: {bad} of {lanes} active lanes point outside every tensor passed to the kernel; "
        "mask the {op} (e.g. mask=offsets < n_elements) or fix the offsets",
        "越界的 tl.{op}：{lanes} 个活跃 lane 中有 {bad} 个指向传给 kernel 的所有张量之外；"
        "请为 {op} 加掩码（例如 mask=offsets < n_elements）或修正偏移量",
    ),
}
