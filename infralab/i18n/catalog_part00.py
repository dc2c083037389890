"""Messages of the Part 00 foundations exercises' tests (memory_budget, numerics, roofline).
Keys: ``part00.*``."""

MESSAGES = {
    # memory_budget
    "part00.zero_totals": (
        "totals per GPU (GB) for ZeRO stages 0-3: got {got}, expected {expected}; stage 1 partitions the optimizer "
        "states, stage 2 the gradients too, stage 3 the parameters too",
        "ZeRO 0-3 各阶段每张 GPU 的总量（GB）：实际 {got}，应为 {expected}；stage 1 切分优化器状态，"
        "stage 2 再切分梯度，stage 3 再切分参数",
    ),
    "part00.adam_states": (
        "got {got}, expected {expected}: mixed-precision Adam keeps fp32 master weights, momentum and variance "
        "(12 bytes), not only momentum and variance (8)",
        "实际 {got}，应为 {expected}：混合精度 Adam 保存 fp32 主权重、动量和方差（12 字节），"
        "而不只是动量和方差（8 字节）",
    ),
    "part00.activations_no_recompute": (
        "activation bytes without recomputation: got {got:.6g}, expected {expected:.6g} "
        "(L * s*b*h * (34 + 5*a*s/h), Korthikanti et al.)",
        "不重计算时的激活字节数：实际 {got:.6g}，应为 {expected:.6g}（L * s*b*h * (34 + 5*a*s/h)，Korthikanti 等）",
    ),
    "part00.activations_full_recompute": (
        "activation bytes with full recomputation: got {got:.6g}, expected {expected:.6g}: full recomputation "
        "keeps each layer's 16-bit input only",
        "完全重计算时的激活字节数：实际 {got:.6g}，应为 {expected:.6g}：完全重计算只保留每层的 16 位输入",
    ),
    "part00.pp_activations": (
        "pp=4 gave {four:.4g} bytes, pp=1 {one:.4g}: under 1F1B the first stage holds pp micro-batches in flight, "
        "each through L/pp layers, so pipeline parallelism does not divide activation memory",
        "pp=4 得到 {four:.4g} 字节，pp=1 得到 {one:.4g}：1F1B 下第一个 stage 同时持有 pp 个在途的 micro-batch，"
        "每个经过 L/pp 层，所以流水线并行不会分摊激活内存",
    ),
    "part00.states_dict": (
        "expected a dict with keys params, grads, optimizer, total; got {got}",
        "应返回键为 params、grads、optimizer、total 的 dict；实际是 {got}",
    ),
    # numerics
    "part00.bf16_nan_quiet": (
        "NaN inputs must give quiet NaN patterns (like 0x7FC0), got {got}; 0x7F80 is infinity: rounding a NaN's "
        "bits like a number's carries it into the exponent",
        "NaN 输入必须得到 quiet NaN 的位模式（如 0x7FC0），实际是 {got}；0x7F80 是无穷大："
        "把 NaN 的位当作普通数来舍入会进位到指数",
    ),
    "part00.fp8_scale": (
        "{fmt} scale: expected amax / max = {expected:g}, got {got}",
        "{fmt} 的 scale：应为 amax / max = {expected:g}，实际是 {got}",
    ),
    "part00.fp8_nan_stays_nan": (
        "{fmt}: NaN inputs must stay NaN in a tensor of shape (3,), got {got}",
        "{fmt}：NaN 输入必须仍为 NaN（形状 (3,) 的张量），实际是 {got}",
    ),
    "part00.fp8_given_scale": (
        "the given scale must be used as is: gave {scale}, got {got}",
        "给定的 scale 必须原样使用：给的是 {scale}，实际返回 {got}",
    ),
    "part00.fp8_zero_scale": (
        "an all-zero tensor has no amax: the scale must be 1.0, got {got}",
        "全零张量没有 amax：scale 必须是 1.0，实际是 {got}",
    ),
    # roofline
    "part00.ridge_point": (
        "ridge point of the H200: got {got}, expected peak / bandwidth = {expected:.6g} FLOP/byte",
        "H200 的屋脊点：实际 {got}，应为 峰值 / 带宽 = {expected:.6g} FLOP/字节",
    ),
    "part00.lower_ceiling": (
        "attainable FLOP/s at intensity {intensity:g}: got {got}, expected {expected:.6g}; the roofline is the lower "
        "of the two ceilings: min(P, I*W), not max",
        "算术强度 {intensity:g} 处可达的 FLOP/s：实际 {got}，应为 {expected:.6g}；屋顶线取两条上限中较低的一条："
        "min(P, I*W)，不是 max",
    ),
    "part00.roofline_time": (
        "roofline time: got {got}, expected {expected:g} s (memory takes {memory:g} s, compute {compute:g} s): "
        "the slower side (max, not min, not the sum) sets the time",
        "屋顶线时间：实际 {got}，应为 {expected:g} 秒（访存需 {memory:g} 秒，计算需 {compute:g} 秒）："
        "由较慢的一侧决定（取 max，不是 min，也不是求和）",
    ),
    "part00.fp8_nan_not_quiet": (
        "{name}: {count} NaN inputs gave non-quiet-NaN patterns, e.g. {examples} (a quiet NaN is like 0x7FC0)",
        "{name}：有 {count} 个 NaN 输入得到的不是 quiet NaN 的位模式，例如 {examples}（quiet NaN 形如 0x7FC0）",
    ),
}
