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
}
