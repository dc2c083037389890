"""Messages of `infralab bench` and of hardware-profile detection. Keys: ``bench.*``."""

MESSAGES = {
    "bench.no_exercise": (
        "no single exercise named {name!r} (expected an exercise id such as part03_kernels.rmsnorm)",
        "没有唯一名为 {name!r} 的练习（应为练习编号，例如 part03_kernels.rmsnorm）",
    ),
    "bench.no_challenge": (
        "infralab bench: {exercise} declares no performance challenge",
        "infralab bench：{exercise} 没有声明性能挑战",
    ),
    "bench.no_challenge_named": (
        "infralab bench: {exercise} declares no performance challenge named {names}",
        "infralab bench：{exercise} 没有名为 {names} 的性能挑战",
    ),
    "bench.nothing_timed": (
        "infralab bench {exercise}: {reason}. No registered GPU: nothing was timed (on a CPU, `pytest` checks "
        "correctness under the Triton interpreter; that is a logic check, never a performance result).",
        "infralab bench {exercise}：{reason}。没有已注册的 GPU：没有计时（在 CPU 上，`pytest` 在 Triton 解释器下检查"
        "正确性；那是逻辑检查，从来不是性能结果）。",
    ),
    "bench.no_gpu": (
        "no CUDA GPU on this machine: performance challenges need a GPU with a registered profile",
        "这台机器没有 CUDA GPU：性能挑战需要一块有已注册硬件档案的 GPU",
    ),
    "bench.unknown_profile": (
        "--profile {name}: no such profile (registered: {known})",
        "--profile {name}：没有这个硬件档案（已注册：{known}）",
    ),
    "bench.profile_chosen": ("profile {name} chosen with --profile", "用 --profile 选择了硬件档案 {name}"),
    "bench.unregistered_gpu": (
        "{device} (sm_{capability}, {memory} GiB) has no registered profile: run `infralab profile calibrate` "
        "to measure it and register one",
        "{device}（sm_{capability}，{memory} GiB）没有已注册的硬件档案：运行 `infralab profile calibrate` 测量并注册",
    ),
    "bench.profile_matched": ("{device} matches profile {name} ({status})", "{device} 匹配硬件档案 {name}（{status}）"),
    "bench.table_title": ("profile {name} ({status})", "硬件档案 {name}（{status}）"),
    "bench.col_challenge": ("challenge", "挑战"),
    "bench.col_shape": ("shape", "形状"),
    "bench.col_achieved": ("achieved", "实测"),
    "bench.col_ceiling": ("% ceiling", "占上限比例"),
    "bench.col_baseline": ("vs baseline", "相对基线"),
    "bench.col_bar": ("bar", "门槛"),
    "bench.col_decision": ("decision", "结论"),
    "bench.environment": ("environment: {env}", "运行环境：{env}"),
    "bench.does_not_import": ("does not import: {error}", "无法导入：{error}"),
}
