"""Messages of the seed sweep and the soundness report (``infralab validate``). Keys: ``seeds.*``."""

MESSAGES = {
    "seeds.bad_count": (
        "--seeds {value}: expected a whole number of seeds, at least 1",
        "--seeds {value}：种子个数应为不小于 1 的整数",
    ),
    "seeds.repeat": (
        "repeat this run's inputs with --seed {seed}",
        "用 --seed {seed} 可重现本次运行的输入",
    ),
    "seeds.table_title": (
        "soundness · {course} · seed {seed}, {seeds} seed(s) for the solution",
        "测试可靠性 · {course} · 种子 {seed}，参考解 {seeds} 个种子",
    ),
    "seeds.col_exercise": ("exercise", "练习"),
    "seeds.col_solution": ("solution passes", "参考解通过"),
    "seeds.col_stub": ("stub fails", "桩代码失败"),
    "seeds.col_hidden": ("mutants caught (hidden)", "变异体捕获（隐藏）"),
    "seeds.col_visible": ("caught (visible)", "捕获（可见）"),
    "seeds.col_verdict": ("verdict", "结论"),
    "seeds.sound": ("sound", "可靠"),
    "seeds.holes": ("holes", "有漏洞"),
    "seeds.visible_escapes": (
        "{exercise}: no visible test catches {mutants}",
        "{exercise}：没有可见测试能发现 {mutants}",
    ),
    "seeds.summary": (
        "mutants caught: {hidden}/{total} by hidden tests, {visible}/{total} by visible tests ({seconds} s)",
        "捕获的变异体：隐藏测试 {hidden}/{total}，可见测试 {visible}/{total}（{seconds} 秒）",
    ),
    "seeds.kind_visible": ("visible", "可见"),
    "seeds.kind_hidden": ("hidden", "隐藏"),
    "seeds.mutant_broken": (
        "mutant {mutant} does not load, so no test catches it (rebuild it against the current reference): {message}",
        "错误实现 {mutant} 无法加载，因此没有任何测试真正抓住它（请按当前参考实现重建）：{message}",
    ),
    "seeds.stub_passes": (
        "the stub passes {visibility} test {test}",
        "桩代码通过了{visibility}测试 {test}",
    ),
    "seeds.solution_fails": (
        "solution fails {test} at {failed} of {seeds} seeds (repeat: pytest '{test}' --target solutions "
        "--seed {first}): {message}",
        "参考解在 {seeds} 个种子中的 {failed} 个上未通过 {test}（重现：pytest '{test}' --target solutions "
        "--seed {first}）：{message}",
    ),
    "seeds.no_solution_test": (
        "no test ran on the solution",
        "没有任何测试在参考解上运行",
    ),
    "seeds.mutant_survives": (
        "mutant {mutant} passes every hidden test",
        "变异体 {mutant} 通过了所有隐藏测试",
    ),
    "seeds.mutant_escapes": (
        "mutant {mutant} passes every hidden test at {escaped} of {seeds} seeds (repeat: infralab validate "
        "--exercise {exercise} --seed {first}): only some draws catch it",
        "变异体 {mutant} 在 {seeds} 个种子中的 {escaped} 个上通过了所有隐藏测试（重现：infralab validate "
        "--exercise {exercise} --seed {first}）：只有部分随机抽样能抓住它",
    ),
    "seeds.few_mutants": (
        "only {count} mutants in {folder} (at least {least} wanted)",
        "{folder} 中只有 {count} 个变异体（至少需要 {least} 个）",
    ),
}
