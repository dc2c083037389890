"""Messages of the part02 topology and tensor_parallel tests. Keys: ``part02_tp.*``."""

MESSAGES = {
    "part02_tp.loss_traffic": (
        "{name}: rank {rank} communicated {got}; the vocabulary-parallel loss moves per-token numbers only "
        "(at most 3 x {tokens} elements)",
        "{name}：rank {rank} 的通信为 {got}；词表并行的损失只应传每个 token 的数（最多 3 × {tokens} 个元素）",
    ),
    "part02_tp.not_ints": (
        "{name}: expected ints (a dict of ints, or a list of lists of ints), got {got}",
        "{name}：应返回整数（整数字典，或整数列表的列表），实际为 {got}",
    ),
}
