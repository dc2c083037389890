"""Messages of part05_quantization.gptq's tests. Keys: ``part05.gptq.*``."""

MESSAGES = {
    "part05.gptq.codes_not_replayed": (
        "{name}: {count} of {total} codes are not GPTQ's rounding of the value fed forward to them "
        "(replayed with your own earlier codes); first at row {row}, column {col}: code {code}, "
        "value {value:.3f} grid steps",
        "{name}：{total} 个编码中有 {count} 个不是 GPTQ 对前向传递到该列的值的取整"
        "（已用你自己前面的编码重放）；第一个在第 {row} 行第 {col} 列：编码 {code}，值为 {value:.3f} 个网格步长",
    ),
    "part05.gptq.codes_differ": (
        "{name}: {percent:.1f}% of the codes differ from the reference (at most {budget:.0f}% may flip from fp32 "
        "rounding order)",
        "{name}：{percent:.1f}% 的编码与参考实现不同（因 fp32 舍入顺序最多允许 {budget:.0f}% 翻转）",
    ),
    "part05.gptq.output_error_above_reference": (
        "output error {err:.4g} above the reference GPTQ's {ref:.4g} (+2%)",
        "输出误差 {err:.4g} 高于参考 GPTQ 的 {ref:.4g}（+2%）",
    ),
    "part05.gptq.not_below_rtn": (
        "GPTQ's output error {gptq:.4g} should be below RTN's {rtn:.4g}",
        "GPTQ 的输出误差 {gptq:.4g} 应低于 RTN 的 {rtn:.4g}",
    ),
    "part05.gptq.not_clearly_below_rtn": (
        "GPTQ output error {gptq:.4g} is not clearly below RTN's {rtn:.4g} (at most 0.9x): is the error fed back to "
        "the later columns?",
        "GPTQ 的输出误差 {gptq:.4g} 没有明显低于 RTN 的 {rtn:.4g}（至多 0.9 倍）：误差有没有反馈到后面的列？",
    ),
    "part05.gptq.group_size_one_refused": (
        "quantize_rtn(group_size=1) raised ValueError({error}): group_size=1 (one column per group) is valid; only "
        "group_size <= 0 (other than -1) or one not dividing the input dimension is refused",
        "quantize_rtn(group_size=1) 抛出了 ValueError({error})：group_size=1（每列一组）是合法的；只有 group_size <= 0"
        "（-1 除外）或不能整除输入维度时才拒绝",
    ),
    "part05.gptq.default_group_size": (
        "default group_size is -1 (one group per row): scales of shape {got}, expected (3, 1)",
        "默认 group_size 为 -1（每行一组）：scales 的形状是 {got}，应为 (3, 1)",
    ),
    "part05.gptq.default_bits": (
        "default bits is 4 (codes 0..15), got codes up to {got}",
        "默认 bits 为 4（编码 0..15），实际编码最大到 {got}",
    ),
    "part05.gptq.non_finite": (
        "{count} of {total} dequantised weights are not finite (group_size={group_size})",
        "反量化后的权重中有 {count} / {total} 个不是有限值（group_size={group_size}）",
    ),
    "part05.gptq.hessian_shape": (
        "Hessian: expected shape ({cols}, {cols}), got ({n}, {n})",
        "Hessian：形状应为 ({cols}, {cols})，实际是 ({n}, {n})",
    ),
    "part05.gptq.group_scales_shape": (
        "scales: expected shape (8, 4), one per group, got (8, 1)",
        "scales：形状应为 (8, 4)，每组一个，实际是 (8, 1)",
    ),
    "part05.gptq.bad_scales": (
        "scales: {count} are zero, negative or not finite",
        "scales：有 {count} 个为零、负数或非有限值",
    ),
    "part05.gptq.dead_inputs": (
        "dequantised weights of dead inputs {dead} are not all 0 (group_size={group_size})",
        "死输入 {dead} 的反量化权重不全为 0（group_size={group_size}）",
    ),
    "part05.gptq.singular_hessian": (
        "gptq_quantize failed on a singular Hessian: {error}",
        "gptq_quantize 在奇异的 Hessian 上失败了：{error}",
    ),
    "part05.gptq.group_size_one_raised": (
        "group_size=1 raised ValueError ({error})",
        "group_size=1 抛出了 ValueError（{error}）",
    ),
    "part05.gptq.default_scales_shape": (
        "{name}: scales of shape {got}, expected (4, 1)",
        "{name}：scales 的形状为 {got}，应为 (4, 1)",
    ),
    "part05.gptq.codes_beyond_4_bits": (
        "{name}: codes up to {got}, but 4 bits allow 0..15",
        "{name}：编码最大到 {got}，但 4 位只允许 0..15",
    ),
    "part05.gptq.with_block_size": (
        "with block_size={block}: {message}",
        "block_size={block} 时：{message}",
    ),
}
