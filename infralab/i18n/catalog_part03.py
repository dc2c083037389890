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
        "{level} ({decision}): {reason}",
        "{level}（判定：{decision}）：{reason}",
    ),
}
