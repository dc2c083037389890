"""Messages of the Part 01 transformer exercises' tests (rmsnorm, rope, ffn, sampling, llama).
Keys: ``part01.*``."""

MESSAGES = {
    "part01.keeps_dtype": (
        "{name}: expected the input dtype {expected}, got {got}",
        "{name}：应保持输入的 dtype {expected}，实际是 {got}",
    ),
    "part01.attention_scaling_one": (
        "attention_scaling without scaling must be 1.0, got {got}",
        "不缩放时 attention_scaling 必须是 1.0，实际是 {got}",
    ),
    "part01.attention_scaling_type": (
        "attention_scaling must be a float, got {got}",
        "attention_scaling 必须是 float，实际是 {got}",
    ),
    "part01.attention_scaling_value": (
        "attention_scaling for {scaling}: expected {expected:.6g}, got {got}",
        "{scaling} 的 attention_scaling：应为 {expected:.6g}，实际是 {got}",
    ),
    "part01.yarn_nan": (
        "YaRN inv_freq for {scaling} has NaN: when low == high the ramp divides 0 by 0; guard it (high += 0.001)",
        "{scaling} 的 YaRN inv_freq 含有 NaN：low == high 时斜坡计算 0 除以 0；需要保护（high += 0.001）",
    ),
    "part01.cos_sin_tuple": (
        "rope_cos_sin must return the tuple (cos, sin), got {got}",
        "rope_cos_sin 必须返回 tuple (cos, sin)，实际是 {got}",
    ),
    "part01.filter_output": (
        "{name}: expected a (3, 17) bfloat16 tensor, got {dtype} {shape}",
        "{name}：应返回形状 (3, 17) 的 bfloat16 张量，实际是 {dtype} {shape}",
    ),
    "part01.outside_top_k": (
        "{count} of {total} draws picked a token outside the top-3",
        "{total} 次采样中有 {count} 次选中了 top-3 之外的 token",
    ),
    "part01.filter_alone": (
        "sample(..., {option}) must keep only each row's top token, but {count} of 500 draws picked another: "
        "the {name} filter was not applied when only {name} is given",
        "sample(..., {option}) 应只保留每行概率最高的 token，但 500 次采样中有 {count} 次选了别的："
        "只给 {name} 时没有应用 {name} 过滤",
    ),
    "part01.logits_dtype": (
        "logits dtype: expected torch.float32, got {got}",
        "logits 的 dtype：应为 torch.float32，实际是 {got}",
    ),
    "part01.logits_nan": (
        "logits contain NaN ({count} of {total} elements)",
        "logits 含有 NaN（{total} 个元素中有 {count} 个）",
    ),
    "part01.empty_rows_nan": (
        "output with empty rows: {count} NaN elements, expected zeros there",
        "含空行的输出：有 {count} 个 NaN 元素，这些位置应为 0",
    ),
    "part01.inv_freq_nan_pairs": (
        "inv_freq for {scaling}: NaN at pairs {pairs}",
        "{scaling} 的 inv_freq：第 {pairs} 对是 NaN",
    ),
}
