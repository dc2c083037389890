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
