"""Messages of the Part 06 post-training exercises' tests (dpo, grpo, lora, ppo, sft). Keys: ``part06.*``."""

MESSAGES = {
    "part06.k3_negative": (
        "k3 is exp(x) - x - 1 >= 0 for every token, got {count} negative values (smallest {got:.4g})",
        "k3 = exp(x) - x - 1 对每个 token 都 >= 0，实际有 {count} 个负值（最小 {got:.4g}）",
    ),
    "part06.lora_scaling": (
        "lora_scaling({alpha}, {r}{rslora}): expected {expected:g}, got {got} ({note})",
        "lora_scaling({alpha}, {r}{rslora})：应为 {expected:g}，实际是 {got}（{note}）",
    ),
    "part06.scaling_alpha_over_r": (
        "LoRA scaling is alpha / r",
        "LoRA 的缩放系数是 alpha / r",
    ),
    "part06.scaling_rslora": (
        "rsLoRA scaling is alpha / sqrt(r)",
        "rsLoRA 的缩放系数是 alpha / sqrt(r)",
    ),
    "part06.lora_shapes": (
        "A is (r, in) = {want_a}, B is (out, r) = {want_b}; got A {got_a}, B {got_b}",
        "A 应为 (r, in) = {want_a}，B 应为 (out, r) = {want_b}；实际 A 为 {got_a}，B 为 {got_b}",
    ),
    "part06.lora_a_range": (
        "A is uniform on [-1/sqrt(in), 1/sqrt(in)] = ±{bound:.4g}: max |A| is {got:.4g} (expected in ({low:.4g}, "
        "{bound:.4g}])",
        "A 应在 [-1/sqrt(in), 1/sqrt(in)] = ±{bound:.4g} 上均匀分布：max |A| 为 {got:.4g}（应在 ({low:.4g}, {bound:.4g}] 内）",
    ),
    "part06.lora_a_shape_dtype": (
        "A must be ({r}, {fan_in}) float32, got {shape} {dtype}",
        "A 必须是 ({r}, {fan_in}) 的 float32，实际是 {shape} {dtype}",
    ),
    "part06.lora_a_bound": (
        "A exceeds the bound 1/sqrt(in) = {bound:.4g} (max |A| = {got:.4g}); kaiming_uniform_ with a=0 gives "
        "sqrt(6/in), a normal init is unbounded",
        "A 超出了界 1/sqrt(in) = {bound:.4g}（max |A| = {got:.4g}）；a=0 的 kaiming_uniform_ 给出 sqrt(6/in)，"
        "正态初始化没有界",
    ),
    "part06.lora_a_std": (
        "A's std {std:.4g} is not that of U(-{bound:.4g}, {bound:.4g}) ({expected:.4g})",
        "A 的标准差 {std:.4g} 不是 U(-{bound:.4g}, {bound:.4g}) 的标准差（{expected:.4g}）",
    ),
    "part06.lora_a_mean": (
        "A's mean {mean:.4g} is far from 0 (at most {limit:.4g})",
        "A 的均值 {mean:.4g} 离 0 太远（至多 {limit:.4g}）",
    ),
    "part06.same_seed_same_a": (
        "the same seed must give the same A",
        "相同的 seed 必须给出相同的 A",
    ),
    "part06.nf4_codes_shape": (
        "codes must be ({numel},) uint8, got {shape} {dtype}",
        "codes 必须是 ({numel},) 的 uint8，实际是 {shape} {dtype}",
    ),
    "part06.nf4_codes_range": (
        "codes must lie in [0, 16), got codes up to {got}",
        "codes 必须在 [0, 16) 内，实际最大为 {got}",
    ),
    "part06.nf4_not_nearest": (
        "code {code} at index {index} is not the nearest NF4 level to {value:.6g} (nearest: {nearest}); codes index "
        "the ascending NF4_CODE table",
        "位置 {index} 的码字 {code} 不是离 {value:.6g} 最近的 NF4 级别（最近的是 {nearest}）；码字是升序 NF4_CODE 表的索引",
    ),
    "part06.nf4_block_resolution": (
        "blocks without the outlier lost their resolution (max error {err:.3g}, at most {limit:.3g}): absmax must be "
        "per block",
        "没有离群值的块失去了精度（最大误差 {err:.3g}，至多 {limit:.3g}）：absmax 必须按块计算",
    ),
    "part06.nf4_round_trip": (
        "an NF4 round trip moved {count} of {total} values by more than half a level gap",
        "NF4 往返后 {total} 个值中有 {count} 个移动超过了相邻级别间距的一半",
    ),
    "part06.dpo_sign": (
        "raising the chosen response's log-prob must lower the DPO loss; it did not at {count} of {total} pairs "
        "(sign flipped?)",
        "提高 chosen 回复的对数概率必须降低 DPO 损失；{total} 对中有 {count} 对没有降低（符号反了？）",
    ),
    "part06.lora_scaling_value": (
        "lora_scaling({alpha}, {r}, use_rslora={rs}) = {got}, expected {expected}",
        "lora_scaling({alpha}, {r}, use_rslora={rs}) = {got}，应为 {expected}",
    ),
}
