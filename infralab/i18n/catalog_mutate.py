"""Messages of ``infralab validate --mutate`` (infralab.mutate, infralab.mutate_report). Keys: ``mutate.*``."""

MESSAGES = {
    "mutate.equivalents_unreadable": (
        "{file}: not readable as YAML: {error}",
        "{file}：无法按 YAML 读取：{error}",
    ),
    "mutate.equivalents_bad_entry": (
        "{file}: entry {index}: expected a mapping with non-empty text keys {keys}",
        "{file}：第 {index} 项：应为含非空文本键 {keys} 的映射",
    ),
    "mutate.session_failed": (
        "{exercise}: the mutation test session {why} before running any test:\n{output}",
        "{exercise}：变异测试会话在运行任何测试之前{why}：\n{output}",
    ),
    "mutate.reference_crashed": (
        "{exercise}: the hidden tests {why} on the reference solution itself: fix that first (pytest graders --target solutions)",
        "{exercise}：隐藏测试在参考解上就已{why}：请先修复（pytest graders --target solutions）",
    ),
    "mutate.mutant_crashed": (
        "{exercise}: mutant {mutant} {why}: counted as killed; going on from the next mutant",
        "{exercise}：变异体 {mutant} {why}：记为已杀死；从下一个变异体继续",
    ),
    "mutate.stale_missing": (
        "`{mutant}`: no such mutant is generated from the reference any more",
        "`{mutant}`：参考解已不再生成该变异体",
    ),
    "mutate.stale_line": (
        "`{mutant}`: line {line} now reads `{now}`, the entry says `{was}`",
        "`{mutant}`：第 {line} 行现在是 `{now}`，条目记录的是 `{was}`",
    ),
    "mutate.stale_killed": (
        "`{mutant}`: marked equivalent, but the hidden tests kill it: remove the entry",
        "`{mutant}`：被标为等价，但隐藏测试能杀死它：请删除该条目",
    ),
    "mutate.progress": (
        "{exercise}: {killed}/{tested} mutants killed, {survivors} survivors, {equivalent} equivalent, {given} given, "
        "{unreached} unreached, kill rate {rate} ({seconds} s)",
        "{exercise}：杀死 {killed}/{tested} 个变异体，存活 {survivors} 个，等价 {equivalent} 个，给定代码 {given} 个，"
        "未触及 {unreached} 个，杀死率 {rate}（{seconds} 秒）",
    ),
    "mutate.report_title": (
        "Mutation report: {exercise}",
        "变异测试报告：{exercise}",
    ),
    "mutate.report_header": (
        "Reference `{reference}`, hidden tests only, seed {seed}, per-test timeout {timeout} s (a test that runs "
        "past it fails and kills its mutant; so does a mutant that crashes or stalls the test process). "
        "Took {seconds} s on {machine}, {date}.",
        "参考解 `{reference}`，只跑隐藏测试，种子 {seed}，单个测试超时 {timeout} 秒（超时的测试判为失败，"
        "即杀死该变异体；让测试进程崩溃或停滞的变异体同样记为杀死）。用时 {seconds} 秒，机器 {machine}，{date}。",
    ),
    "mutate.report_capped": (
        "Capped: {tested} of the {generated} mutants were tested (chosen by a hash of their ids, the same every run).",
        "已设上限：{generated} 个变异体中测试了 {tested} 个（按 id 的哈希选取，每次运行相同）。",
    ),
    "mutate.report_reference_failed": (
        "Hidden tests the reference fails (left out for every mutant)",
        "参考解自身未通过的隐藏测试（对所有变异体均不计）",
    ),
    "mutate.report_stale": (
        "Stale entries in fixtures/mutation/equivalent.yml",
        "fixtures/mutation/equivalent.yml 中的过期条目",
    ),
    "mutate.report_survivors": (
        "Survivors: holes in the hidden tests",
        "存活的变异体：隐藏测试的漏洞",
    ),
    "mutate.report_equivalents": (
        "Reviewed equivalent mutants",
        "经审阅的等价变异体",
    ),
    "mutate.report_given": (
        "Given: the stub gives this code verbatim (a default, a field, a constant, a whole helper), so no student "
        "writes it; left out of the kill rate",
        "给定代码：骨架文件原样提供这段代码（默认值、字段、常量、完整的辅助函数），学生不会写它；不计入杀死率",
    ),
    "mutate.report_unreached": (
        "Not reached: no hidden test runs this statement on this machine (a GPU-only branch under the CPU "
        "interpreter, say); left out of the kill rate",
        "未触及：在本机上没有隐藏测试执行这条语句（例如 CPU 解释器下只在 GPU 上走的分支）；不计入杀死率",
    ),
    "mutate.summary_title": (
        "Mutation testing of the reference solutions",
        "参考解的变异测试",
    ),
    "mutate.summary_intro": (
        "Written by `infralab validate --mutate`; one page per exercise lists every survivor with its diff. "
        "The kill rate leaves out reviewed equivalent mutants (fixtures/mutation/equivalent.yml) and mutants of "
        "statements no hidden test runs on the machine that wrote the page (unreached: GPU-only branches), and "
        "mutants of code the exercise's stub gives verbatim (given: no student writes it).",
        "由 `infralab validate --mutate` 生成；每个练习一页，列出每个存活变异体及其差异。"
        "杀死率不计经审阅的等价变异体（fixtures/mutation/equivalent.yml），也不计在生成本页的机器上没有隐藏测试"
        "执行的语句上的变异体（未触及：只在 GPU 上走的分支），也不计骨架文件原样提供的代码上的变异体（给定代码：学生不会写）。",
    ),
    "mutate.table_title": (
        "mutation testing · {course}",
        "变异测试 · {course}",
    ),
    "mutate.bad_cap": (
        "--max-mutants {value}: expected a positive whole number",
        "--max-mutants {value}：应为正整数",
    ),
    "mutate.bad_timeout": (
        "--mutant-timeout {value}: expected a positive number of seconds",
        "--mutant-timeout {value}：应为正的秒数",
    ),
    "mutate.already_killed": ("mutant already killed", "该变异体已被杀死"),
    "mutate.reference_fails": ("the reference fails this test", "参考实现未通过此测试"),
    "mutate.kernel_edit": (
        "edit of {function}: {old!r} occurs {found} times in the reference kernel, not {want}",
        "{function} 的修改：{old!r} 在参考 kernel 中出现 {found} 次，而不是 {want} 次",
    ),
}
