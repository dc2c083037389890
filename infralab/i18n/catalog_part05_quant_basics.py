"""Messages of part05_quantization.quant_basics' tests. Keys: ``part05.quant_basics.*``."""

MESSAGES = {
    "part05.quant_basics.group_scale_shape": (
        "per-group scales must have shape (16, 4), got {got}",
        "分组的 scale 形状必须是 (16, 4)，实际是 {got}",
    ),
    "part05.quant_basics.above_half_step": (
        "round-trip error above half a quantisation step at {count} of {total} elements (worst error {err:.3g}; "
        "the groups' half steps are {low:.3g} to {high:.3g})",
        "{total} 个元素中有 {count} 个往返误差超过半个量化步长（最大误差 {err:.3g}；各组的半步长在 {low:.3g} 到 {high:.3g} 之间）",
    ),
    "part05.quant_basics.fp8_dtype": (
        "expected torch.float8_e4m3fn, got {got}",
        "应为 torch.float8_e4m3fn，实际是 {got}",
    ),
    "part05.quant_basics.channel_scale_shape": (
        "scale (channel): expected shape (2, 1), got {got}",
        "scale（按通道）：形状应为 (2, 1)，实际是 {got}",
    ),
    "part05.quant_basics.scale_shape": (
        "scale ({granularity}): expected shape {expected}, got {got}",
        "scale（{granularity}）：形状应为 {expected}，实际为 {got}",
    ),
}
