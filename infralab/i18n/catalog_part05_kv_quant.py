"""Messages of part05_quantization.kv_quant's tests. Keys: ``part05.kv_quant.*``."""

MESSAGES = {
    "part05.kv_quant.scale_shape": (
        "scale (per {axis}): expected shape {expected}, got {got}",
        "scale（按 {axis}）：形状应为 {expected}，实际为 {got}",
    ),
    "part05.kv_quant.above_bound": (
        "{fmt} round trip: {count} elements exceed the error bound the scales allow "
        "(worst: error {err}, bound {bound})",
        "{fmt} 量化再反量化：有 {count} 个元素的误差超过了由 scale 推出的上界（最差：误差 {err}，上界 {bound}）",
    ),
    "part05.kv_quant.attention_above_bound": (
        "attention over the {fmt} cache differs from exact attention by {err}, more than the bound derived "
        "from the scales allows (smallest bound {bound})",
        "在 {fmt} 缓存上计算的注意力与精确注意力相差 {err}，超过了由 scale 推出的上界（最小上界 {bound}）",
    ),
    "part05.kv_quant.k_channel_not_better": (
        "keys with outlier channels: the int8 logit error per channel ({channel}) should be well below per token's "
        "({token}) (expected < 0.6x)",
        "K 有离群通道时，按通道 int8 量化的注意力分数误差（{channel}）应明显低于按 token 的（{token}）（应小于其 0.6 倍）",
    ),
    "part05.kv_quant.v_token_relative": (
        "per-token int8 values: a token's error reached {worst} of its own largest |v|; one scale per token "
        "bounds it by 1/254",
        "按 token 的 int8 V：某个 token 的误差达到其自身最大 |v| 的 {worst}；每个 token 一个 scale 时应不超过 1/254",
    ),
}
