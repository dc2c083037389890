"""Messages of infralab.tiny_llama (the tiny LLaMA / Qwen2 / Qwen3 models of the tests)."""

MESSAGES = {
    "tiny_llama.unknown_family": (
        "tiny_model: unknown model family {family!r}: expected one of {families}",
        "tiny_model：未知的模型族 {family!r}，应为 {families} 之一",
    ),
    "tiny_llama.unknown_keys": (
        "tiny_model: not {family} config keys: {keys}",
        "tiny_model：{keys} 不是 {family} 的 config 键",
    ),
    "tiny_llama.weights_misfit": (
        "the weights do not fit {model}: missing {missing}, unexpected {unexpected}",
        "权重与 {model} 不匹配：缺少 {missing}，多出 {unexpected}",
    ),
}
