"""Messages of the sampling checks (infralab/stats.py: draws that must follow a distribution).
Keys: ``stats.*``."""

MESSAGES = {
    "stats.no_draws": ("{name}: no draws", "{name}：没有任何抽样结果"),
    "stats.outside_range": ("{name}: drew outcome {outcome}, outside 0..{last}", "{name}：抽到了结果 {outcome}，超出 0..{last}"),
    "stats.impossible": (
        "{name}: drew outcome {outcome} {times} times, but its probability is 0 (it should have been filtered out)",
        "{name}：结果 {outcome} 被抽到 {times} 次，但它的概率为 0（本应被过滤掉）",
    ),
    "stats.not_following": (
        "{name}: the {draws} draws do not follow the expected distribution: total-variation distance "
        "{tv:.4f} > {eps:.4f} (a correct sampler exceeds it with probability < {false_alarm:g}); "
        "worst outcome {worst}: frequency {frequency:.4f}, probability {probability:.4f}",
        "{name}：这 {draws} 次抽样不符合期望的分布：总变差距离 {tv:.4f} > {eps:.4f}"
        "（正确的采样器超过它的概率 < {false_alarm:g}）；偏差最大的结果 {worst}：频率 {frequency:.4f}，概率 {probability:.4f}",
    ),
}
