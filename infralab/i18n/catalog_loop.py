"""Messages of the student's loop: the kit's assertions (infralab.testing), the pytest plugin's
reports, ``infralab check``, the feedback page and the notebook headings. Keys: ``loop.*``."""

MESSAGES = {
    # infralab.testing: what differs
    "loop.not_a_tensor": (
        "{name}: expected a torch.Tensor, got {got}",
        "{name}：应为 torch.Tensor，实际是 {got}",
    ),
    "loop.tensor_subclass": (
        "{name}: expected a plain torch.Tensor, got the subclass {got}",
        "{name}：应为普通的 torch.Tensor，实际是它的子类 {got}",
    ),
    "loop.wrong_shape": (
        "{name}: expected shape {expected}, got {got}",
        "{name}：形状应为 {expected}，实际是 {got}",
    ),
    "loop.wrong_dtype": (
        "{name}: expected dtype {expected}, got {got}",
        "{name}：dtype 应为 {expected}，实际是 {got}",
    ),
    "loop.nan_elements": (
        "{name}: {count} of {total} elements are NaN",
        "{name}：{total} 个元素中有 {count} 个是 NaN",
    ),
    "loop.differ": (
        "{name}: {count} of {total} elements ({percent:.1f}%) differ beyond rtol={rtol:g}, atol={atol:g}",
        "{name}：{total} 个元素中有 {count} 个（{percent:.1f}%）超出容差 rtol={rtol:g}, atol={atol:g}",
    ),
    "loop.worst": (
        "{head}; worst at index {index}: got {got:.6g}, expected {expected:.6g}",
        "{head}；差得最多的位置 {index}：实际 {got:.6g}，应为 {expected:.6g}",
    ),
    "loop.inf_elements": (
        "{name}: contains Inf where finite values were expected",
        "{name}：在应为有限值的位置出现了 Inf",
    ),
    "loop.not_equal": (
        "{name}: expected {expected}, got {got}",
        "{name}：应为 {expected}，实际是 {got}",
    ),
    "loop.never_written": (
        "{name}: {count} of {total} elements were never written or are NaN (first at index {first}); "
        "fresh output memory is NaN-filled in the tests",
        "{name}：{total} 个元素中有 {count} 个从未写入或是 NaN（第一个在位置 {first}）；"
        "测试中新分配的输出内存预先填满了 NaN",
    ),
    # the pytest plugin
    "loop.did_not_raise": (
        "the call returned without raising {expected}: the docstring's Raises section says these arguments must be "
        "rejected",
        "调用没有抛出 {expected} 就返回了：文档字符串的 Raises 一节规定这些参数必须被拒绝",
    ),
    "loop.not_implemented": (
        "NotImplementedError: {detail} is not implemented yet ({where})",
        "NotImplementedError：{detail} 尚未实现（{where}）",
    ),
    "loop.this_function": (
        "this function",
        "这个函数",
    ),
    "loop.falsifying_example": (
        "falsifying example: {example}",
        "反例（使测试失败的输入）：{example}",
    ),
    "loop.repeat_seed": (
        "repeat this run's inputs with --seed {seed}",
        "用 --seed {seed} 可以重现这次运行的输入",
    ),
    "loop.header": (
        "infralab: course {course}, target {target}, seed {seed}",
        "infralab：课程 {course}，测试对象 {target}，种子 {seed}",
    ),
    "loop.skip_no_gpu": (
        "needs a CUDA GPU; this machine has none",
        "需要 CUDA GPU；这台机器没有",
    ),
    "loop.skip_triton_cpu": (
        "a CPU test of a Triton kernel: runs under TRITON_INTERPRET=1 (set when there is no GPU); "
        "on a GPU the gpu tests run instead",
        "Triton 核的 CPU 测试：在 TRITON_INTERPRET=1 下运行（没有 GPU 时自动设置）；有 GPU 时改为运行 gpu 测试",
    ),
    "loop.not_in_course": (
        "not inside an infralab course (no course.yml found)",
        "不在 infralab 课程目录中（找不到 course.yml）",
    ),
    "loop.marker_gpu": (
        "gpu: needs a CUDA GPU (skipped elsewhere)",
        "gpu: 需要 CUDA GPU（其他机器上跳过）",
    ),
    "loop.marker_weight": (
        "weight(n): this test's share of its exercise's points (default 1)",
        "weight(n): 这个测试在本练习分数中所占的份额（默认 1）",
    ),
    "loop.marker_slow": (
        "slow: takes more than a few seconds on a CPU",
        "slow: 在 CPU 上需要几秒以上",
    ),
    "loop.marker_part": (
        "{part}: tests of {title}",
        "{part}: {title} 的测试",
    ),
    "loop.interpreter_versions": (
        "TRITON_INTERPRET=1 with triton {triton} and numpy {numpy}: the interpreter fails inside kernel loops "
        "('only 0-dimensional arrays can be converted to Python scalars'); install numpy<2.3 "
        "(pip install 'numpy<2.3', as the kit's triton extra pins)",
        "TRITON_INTERPRET=1 配合 triton {triton} 与 numpy {numpy}：解释器在核函数的循环里会出错"
        "（'only 0-dimensional arrays can be converted to Python scalars'）；请安装 numpy<2.3"
        "（pip install 'numpy<2.3'，与本套件的 triton 依赖一致）",
    ),
    # infralab check: the progress view (infralab.outputs.progress)
    "loop.status_passed": ("passed", "通过"),
    "loop.status_partial": ("partial", "部分通过"),
    "loop.status_failed": ("failed", "未通过"),
    "loop.status_not_implemented": ("not implemented", "尚未实现"),
    "loop.status_not_run": ("not run", "未运行"),
    "loop.status_error": ("error", "出错"),
    "loop.col_exercise": ("exercise", "练习"),
    "loop.col_passed": ("passed", "通过"),
    "loop.col_points": ("points", "分数"),
    "loop.col_status": ("status", "状态"),
    "loop.total": ("total", "合计"),
    "loop.check_title": (
        "infralab check · course {course} · target {target}",
        "infralab check · 课程 {course} · 测试对象 {target}",
    ),
    "loop.check_ran_visible": (
        "Ran the visible tests (exercises/*/tests): they show your progress; points at grading come from "
        "the hidden tests, which check more shapes, seeds and edge cases.",
        "运行的是公开测试（exercises/*/tests）：它们显示你的进度；评分时的分数来自隐藏测试，"
        "隐藏测试会检查更多形状、随机种子和边界情况。",
    ),
    "loop.check_ran_hidden": (
        "Ran the visible and the hidden tests: points are those of the hidden tests.",
        "运行了公开测试和隐藏测试：分数按隐藏测试计算。",
    ),
    "loop.first_failures": (
        "First failure of each exercise:",
        "每个练习的第一个失败：",
    ),
    "loop.unfinished": (
        "Not implemented yet ({count}):",
        "尚未实现（{count} 个）：",
    ),
    "loop.skipped": (
        "Skipped {count} tests:",
        "跳过了 {count} 个测试：",
    ),
    "loop.check_seed": (
        "The inputs were drawn with seed {seed}: infralab check --seed {seed} repeats them.",
        "这次的输入用种子 {seed} 生成：infralab check --seed {seed} 可以重现。",
    ),
    "loop.check_no_match": (
        "infralab check: no exercise matches --part {part} --exercise {exercise}",
        "infralab check：没有练习匹配 --part {part} --exercise {exercise}",
    ),
    "loop.check_hidden_needs_graders": (
        "infralab check: --hidden needs the graders/ folder (the instructor's copy)",
        "infralab check：--hidden 需要 graders/ 文件夹（教师版才有）",
    ),
    # the HTML feedback page (infralab.outputs.html)
    "loop.html_title": ("Feedback · {student}", "评分反馈 · {student}"),
    "loop.html_sub": ("course {course} · mode {mode}", "课程 {course} · 模式 {mode}"),
    "loop.html_total": ("{points} / {max_points} points", "{points} / {max_points} 分"),
    "loop.html_exercise": ("exercise", "练习"),
    "loop.html_tests": ("tests", "测试"),
    "loop.html_test": ("test", "测试"),
    "loop.html_visibility": ("visibility", "可见性"),
    "loop.html_result": ("result", "结果"),
    "loop.html_flags": ("Flags for the instructor", "给教师的提示"),
    "loop.html_environment": ("environment and protections", "运行环境与防护"),
    "loop.outcome_passed": ("passed", "通过"),
    "loop.outcome_failed": ("failed", "未通过"),
    "loop.outcome_skipped": ("skipped", "跳过"),
    "loop.visibility_visible": ("visible", "公开"),
    "loop.visibility_hidden": ("hidden", "隐藏"),
}
