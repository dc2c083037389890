"""Messages of part05_quantization.gptq's tests. Keys: ``part05.gptq.*``."""

MESSAGES = {
    "part05.gptq.codes_not_replayed": (
        "{name}: {count} of {total} codes are not GPTQ's rounding of the value fed forward to them "
        "(replayed with your own earlier codes); first at row {row}, column {col}: code {code}, "
        "value {value:.3f} grid steps",
        "{name}：{total} 个编码中有 {count} 个不是 GPTQ 对前向传递到该列的值的取整"
        "（已用你自己前面的编码重放）；第一个在第 {row} 行第 {col} 列：编码 {code}，值为 {value:.3f} 个网格步长",
    ),
}
