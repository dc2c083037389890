"""Messages of ``infralab release`` (infralab/release.py): the student version's folder, its leak
check and its stub check. Keys: ``release.*``."""

MESSAGES = {
    "release.out_not_release": (
        "{out} exists and is not an earlier release: give an empty or new folder",
        "{out} 已存在且不是之前生成的发布版本：请给出一个空的或新的文件夹",
    ),
    "release.out_inside_course": ("--out must be outside the course", "--out 必须位于课程文件夹之外"),
    "release.copy_of": ("{file} is a copy of {secret}", "{file} 是 {secret} 的副本"),
    "release.holds_body": ("{file} holds the body of {source}:{name}", "{file} 含有 {source}:{name} 的函数体"),
    "release.holds_text": ("{file} holds the text of {source}:{name}", "{file} 含有 {source}:{name} 的文本"),
    "release.pytest_status": ("pytest exited with status {status}: {output}", "pytest 以状态 {status} 退出：{output}"),
    "release.no_visible_test": ("{exercise}: no visible test was collected", "{exercise}：没有收集到任何可见测试"),
    "release.stub_fails_badly": (
        "{test}: fails on the stub with {message!r}, not NotImplementedError",
        "{test}：在存根上失败时报的是 {message!r}，而不是 NotImplementedError",
    ),
    "release.summary": ("release: {files} files in {out}", "发布：{out} 中共 {files} 个文件"),
    "release.leak_ok": ("leak check: no solution code found", "泄漏检查：未发现参考答案代码"),
    "release.leaks": ("leak check: {count} LEAKS", "泄漏检查：{count} 处泄漏"),
    "release.leak_line": ("  LEAK {line}", "  泄漏 {line}"),
    "release.stub_ok": (
        "stub check: {tests} visible tests, all fail cleanly on the stubs",
        "存根检查：{tests} 个可见测试，在存根上都干净地失败（NotImplementedError）",
    ),
    "release.stub_problems": (
        "stub check: {tests} visible tests, {count} problems",
        "存根检查：{tests} 个可见测试，{count} 个问题",
    ),
}
