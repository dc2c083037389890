"""Messages of the golden expectations of visible tests (infralab.golden) and the release's dev-only checks.
Keys: ``golden.*``."""

MESSAGES = {
    "golden.stale": (
        "GoldenStale: the golden of {exercise}, test {test}, is stale: {what}. Record it again in the dev tree: "
        "pytest {file} --target solutions --update-golden -n 0",
        "GoldenStale：{exercise} 的测试 {test} 的快照已过期：{what}。请在开发目录中重新录制："
        "pytest {file} --target solutions --update-golden -n 0",
    ),
    "golden.replay": (
        "the recorded expectations of {exercise}, test {test}, do not fit this run: {what} "
        "(was the test file edited, or does this torch draw other random numbers? reinstall the release's files)",
        "{exercise} 的测试 {test} 的录制期望与本次运行不符：{what}"
        "（测试文件是否被修改过，或当前 torch 生成的随机数不同？请恢复发布版中的原文件）",
    ),
    "golden.no_call": (
        "call {index} (golden.ref.{name}) was not recorded",
        "第 {index} 次调用（golden.ref.{name}）没有录制",
    ),
    "golden.inputs": (
        "the arguments of call {index} (golden.ref.{name}) differ from the recorded ones",
        "第 {index} 次调用（golden.ref.{name}）的参数与录制时不同",
    ),
    "golden.value": (
        "call {index} (golden.ref.{name}) now returns another value than the recorded one",
        "第 {index} 次调用（golden.ref.{name}）的返回值与录制时不同",
    ),
    "golden.constant": (
        "the constant golden.ref.{name} was not recorded or has changed",
        "常量 golden.ref.{name} 没有录制或已改变",
    ),
    "golden.update_in_release": (
        "--update-golden: this is a student release (no references to record from)",
        "--update-golden：这是学生发布版（没有可录制的参考实现）",
    ),
    "golden.update_parallel": (
        "--update-golden writes one file per exercise: run it without xdist (-n 0)",
        "--update-golden 按练习写文件：请不用 xdist 运行（-n 0）",
    ),
    "golden.release_stale": (
        "{exercise}: stale golden ({test}): {message}",
        "{exercise}：快照已过期（{test}）：{message}",
    ),
    "golden.release_dev_only": (
        "{path} is dev-only ({package}) and must not ship",
        "{path} 属于仅限开发的 {package}，不得发布",
    ),
    "golden.release_imports": (
        "{path} imports the dev-only {package} (line {line}): use the golden fixture (infralab.golden)",
        "{path} 导入了仅限开发的 {package}（第 {line} 行）：请改用 golden fixture（infralab.golden）",
    ),
    "golden.release_summary_ok": (
        "golden check: every golden is up to date",
        "快照检查：所有快照均为最新",
    ),
    "golden.release_summary_stale": (
        "golden check: {count} problems (stale goldens or failing visible tests on the solutions)",
        "快照检查：{count} 个问题（快照过期，或可见测试在参考解上失败）",
    ),
    "golden.record_dict_keys": (
        "only dicts keyed by strings or (english, chinese) pairs can be recorded",
        "只有以字符串或 (english, chinese) 二元组为键的 dict 能被记录",
    ),
    "golden.record_type": ("a {type} cannot be recorded in a golden", "{type} 不能记录到 golden 中"),
    "golden.ref_type": (
        "golden.ref: an argument of type {type} cannot be fingerprinted "
        "(pass tensors, numbers, strings, tuples, dicts or golden.ref functions)",
        "golden.ref：类型为 {type} 的参数无法计算指纹（请传张量、数字、字符串、元组、dict 或 golden.ref 函数）",
    ),
    "golden.fixture_scope": (
        "the golden fixture serves the visible tests of a course's exercises",
        "golden fixture 只用于课程练习的可见测试",
    ),
}
