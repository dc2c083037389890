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
    # --- argparse's own messages (infralab.options.OneLineParser), in the run's language ---------
    "core.argparse_argument": ("argument {option}: {problem}", "参数 {option}：{problem}"),
    "core.argparse_invalid_choice": (
        "invalid choice: {value} (choose from {choices})",
        "无效的选项值：{value}（可选：{choices}）",
    ),
    "core.argparse_invalid_value": ("invalid {type} value: {value}", "无效的 {type} 值：{value}"),
    "core.argparse_required": ("the following arguments are required: {names}", "缺少以下必需参数：{names}"),
    "core.argparse_unrecognized": ("unrecognized arguments: {names}", "无法识别的参数：{names}"),
    "core.argparse_one_argument": ("expected one argument", "需要一个参数值"),
    "core.argparse_one_of_required": ("one of the arguments {names} is required", "参数 {names} 中必须给出一个"),
    "core.argparse_not_allowed_with": ("not allowed with argument {option}", "不能与参数 {option} 同时使用"),
    "core.argparse_ambiguous": ("ambiguous option: {option} could match {matches}", "有歧义的选项：{option} 可匹配 {matches}"),
}
