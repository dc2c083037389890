"""Messages of the exported notebooks (headings and instructions, written in both languages at
export: see docs/notebooks.md) and of the notebook runner and `infralab nbgrader` (in the language
in force). Keys: ``notebook.*``."""

MESSAGES = {
    # written into the notebook at export, English and Chinese together
    "notebook.meta": (
        "`{exercise}` · {points} points · textbook: {textbook}",
        "`{exercise}` · {points} 分 · 教材：{textbook}",
    ),
    "notebook.setup_comment": (
        "Setup (read-only): loads the course's test runner for the %%infralab_test cells below; run it first.",
        "准备单元（只读）：为下面的 %%infralab_test 单元加载课程的测试运行器；请先运行它。",
    ),
    "notebook.answer_heading": ("Your answer", "你的实现"),
    "notebook.answer_intro": (
        "Fill in the function bodies below; keep the names and signatures. Helpers you need go in this "
        "cell too: only this cell is graded.",
        "在下面补全函数体，不要改函数名和参数。需要的辅助函数也写在这个单元里：只有这个单元会被评分。",
    ),
    "notebook.visible_heading": ("Tests you can run", "可见测试"),
    "notebook.visible_intro": (
        "Run these cells after your answer cell: each prints `PASSED`, or `FAILED` with what differs and "
        "which known mistake it looks like. Warnings are printed but never count against you.",
        "写完上面的答案单元后运行这些单元：每个单元打印 `PASSED`，或打印 `FAILED` 并说明哪里不同、像哪种常见错误。"
        "警告只会打印出来，不会扣分。",
    ),
    "notebook.hidden_heading": ("Graded tests", "评分测试"),
    "notebook.hidden_intro": (
        "These cells hold the hidden tests: they are empty in your copy and run when your notebook is graded.",
        "这些单元存放隐藏测试：你拿到的版本中它们是空的，评分时才运行。",
    ),
    # the runner, in the kernel (the language in force there)
    "notebook.hidden_empty": (
        "(hidden tests: they run when your notebook is graded)",
        "（隐藏测试：评分时运行）",
    ),
    "notebook.origin": ("your notebook's answer cell", "你的 notebook 的答案单元"),
    "notebook.no_setup": (
        "run the notebook's setup cell first (it calls infralab.nbgrader.notebook.setup)",
        "请先运行 notebook 的准备单元（它调用 infralab.nbgrader.notebook.setup）",
    ),
    "notebook.other_module": (
        "this notebook implements {module}; a test asked for {asked}",
        "这个 notebook 实现的是 {module}；有测试请求了 {asked}",
    ),
    "notebook.unknown_fixture": (
        "{test} needs the fixture `{name}`, which notebooks do not provide",
        "{test} 需要 fixture `{name}`，notebook 不提供它",
    ),
    "notebook.warnings": (
        "{count} warning(s), not counted against you: {kinds}",
        "{count} 条警告，不扣分：{kinds}",
    ),
    # infralab nbgrader export / check
    "notebook.exported": (
        "{notebook}  ({points} points, {tests} test cells)",
        "{notebook}  （{points} 分，{tests} 个测试单元）",
    ),
    "notebook.exported_total": (
        "{count} notebook(s) in {seconds} s",
        "{count} 个 notebook，用时 {seconds} 秒",
    ),
    "notebook.no_part": (
        "infralab nbgrader export: --part {parts}: no such part in course.yml (expected one of {known})",
        "infralab nbgrader export：--part {parts}：course.yml 中没有这个部分（应为 {known} 之一）",
    ),
    "notebook.none_found": (
        "infralab nbgrader check: no <part>/<exercise>.ipynb under {folder}",
        "infralab nbgrader check：{folder} 下没有 <part>/<exercise>.ipynb",
    ),
    "notebook.nbgrader_failed": ("nbgrader {command} failed:\n{output}", "nbgrader {command} 失败：\n{output}"),
    "notebook.no_answer_cell": (
        "the notebook has no answer cell (nbgrader solution cell)",
        "该 notebook 没有答案单元格（nbgrader solution cell）",
    ),
    "notebook.not_submitted_folder": (
        "{path}: expected nbgrader's submitted/ folder or the course directory holding it",
        "{path}：应为 nbgrader 的 submitted/ 文件夹或包含它的课程目录",
    ),
    "notebook.not_in_gradebook": (
        "assignment {name!r} is not in the gradebook {db}: run `nbgrader generate_assignment {name}` first",
        "作业 {name!r} 不在成绩册 {db} 中：请先运行 `nbgrader generate_assignment {name}`",
    ),
    "notebook.empty_body": ("`{name}` has an empty body", "`{name}` 的函数体为空"),
    "notebook.solution_missing": ("the solution has no `{name}`", "参考答案中没有 `{name}`"),
    "notebook.solution_method_missing": (
        "the solution's class `{cls}` has no method `{method}`",
        "参考答案的类 `{cls}` 没有方法 `{method}`",
    ),
    "notebook.test_class": (
        "{path}: test class {name}: notebooks run test functions only",
        "{path}：测试类 {name}：notebook 只运行测试函数",
    ),
    "notebook.unknown_fixtures": (
        "{path}: {name} needs fixture(s) {unknown}; notebooks provide {known}",
        "{path}：{name} 需要 fixture {unknown}；notebook 只提供 {known}",
    ),
}
