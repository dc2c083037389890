"""Messages of the grading routes: nbgrader wrappers, Gradescope bundle, student release. Keys: ``routes.*``."""

MESSAGES = {
    "routes.nbgrader_missing": (
        "nbgrader is not installed in this environment ({path} is missing): pip install 'infralab[nbgrader]'",
        "当前环境没有安装 nbgrader（缺少 {path}）：请运行 pip install 'infralab[nbgrader]'",
    ),
    "routes.nbgrader_next": (
        "next: {command}",
        "下一步：{command}",
    ),
    "routes.nbgrader_failed": (
        "nbgrader {action} exited with status {status}",
        "nbgrader {action} 以状态 {status} 退出",
    ),
    "routes.partial": (
        "PARTIAL {name}: {passed} of {cases} cases passed, {won} of {points} points",
        "部分通过 {name}：{cases} 个用例中通过 {passed} 个，得 {won} / {points} 分",
    ),
}
MESSAGES.update({
    "routes.bundle_out_is_dir": (
        "--out {path} is a folder: give the zip file to write, e.g. autograder.zip",
        "--out {path} 是一个文件夹：请给出要写入的 zip 文件，例如 autograder.zip",
    ),
    "routes.bundle_needs_out": (
        "--out is required: the autograder zip to write, e.g. --out autograder.zip",
        "缺少 --out：要写入的评分包 zip，例如 --out autograder.zip",
    ),
    "routes.bundle_no_exercise": (
        "no exercise matches --part/--exercise",
        "没有与 --part/--exercise 匹配的练习",
    ),
    "routes.bundle_written": (
        "autograder bundle: {path} ({files} files; {exercises} exercise(s), {points} points). "
        "Upload it as the assignment's autograder on Gradescope.",
        "评分包：{path}（{files} 个文件；{exercises} 个练习，共 {points} 分）。请在 Gradescope 上把它作为作业的自动评分器上传。",
    ),
    "routes.bundle_no_submission": (
        "expected one submission in /autograder/submission, found {found}",
        "/autograder/submission 中应有一份提交，实际找到 {found} 份",
    ),
    "routes.bundle_failed": (
        "The autograder could not grade this submission: {error}",
        "评分器无法评这份提交：{error}",
    ),
})
MESSAGES.update({
    "routes.no_hidden_tests": (
        "the hidden tests are not in this tree ({root}; missing for {exercises}): grading needs the "
        "instructor's copy of the course, not a student release",
        "此目录（{root}）中没有隐藏测试（缺少：{exercises}）：评分需要教师版课程，而不是学生版",
    ),
})
