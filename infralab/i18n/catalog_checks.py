"""Messages shared by the tests of several exercises: checks any function's answer can fail.
Keys: ``check.*``."""

MESSAGES = {
    # {what} is the code that was called (identifiers stay English); {note} a catalogue message saying why
    "check.value": (
        "{what}: expected {expected}, got {got}",
        "{what}：应为 {expected}，实际是 {got}",
    ),
    "check.value_note": (
        "{what}: expected {expected}, got {got} ({note})",
        "{what}：应为 {expected}，实际是 {got}（{note}）",
    ),
    "check.modified_input": (
        "{name} modified its input in place",
        "{name} 原地修改了它的输入",
    ),
    "check.seed_unused": (
        "{name}: seed and seed + 1 gave the same draws: the seed is not used",
        "{name}：seed 和 seed + 1 给出了相同的采样结果：没有使用 seed",
    ),
    "check.not_a_tuple": (
        "{name} must return a tuple of {count} ({fields}), got {got}",
        "{name} 必须返回由 {count} 个元素组成的 tuple（{fields}），实际是 {got}",
    ),
    "check.global_rng": (
        "{name} changed torch's global RNG state (torch.manual_seed, or draws without the seeded generator)",
        "{name} 改变了 torch 的全局随机数状态（调用了 torch.manual_seed，或没有用带种子的生成器采样）",
    ),
    "check.nan_elements": (
        "{name}: {count} NaN elements",
        "{name}：有 {count} 个 NaN 元素",
    ),
    "check.no_record": ("pytest wrote no record (exit {code}):\n{output}", "pytest 没有写出记录（退出码 {code}）：\n{output}"),
}
