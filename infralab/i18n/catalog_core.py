"""Messages of the kit's core: language choice and generic errors. Keys: ``core.*``."""

MESSAGES = {
    "core.unknown_language": (
        "unknown language {lang!r}: expected en or zh",
        "未知语言 {lang!r}：应为 en 或 zh",
    ),
    "core.looks_like": (
        "This looks like: {diagnosis}",
        "看起来像：{diagnosis}",
    ),
    "core.cli_error": ("infralab {command}: {error}", "infralab {command} 出错：{error}"),
    "core.option_error": ("{option}: {problem}", "选项 {option}：{problem}"),
}
