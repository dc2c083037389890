"""Messages of the isolated judge's cage and lifecycle (infralab/judge/cage.py, isolated.py's
executors, the plugin's record of the route). Keys: ``cage.*``."""

MESSAGES = {
    "cage.died_at_memory_limit": (
        "during {what} (the kernel killed a process at the memory limit of the executor's process tree, "
        "{limit} bytes)",
        "发生在 {what} 期间（执行器进程树达到内存上限 {limit} 字节，内核杀死了其中的进程）",
    ),
    "cage.executors_per_exercise": (
        "one per exercise: its own process, time budget and death limit",
        "每个练习一个执行器：各自的进程、时间预算与崩溃次数上限",
    ),
    "cage.ipc_namespace": (
        "System V IPC objects of its own, removed with it (IPC namespace)",
        "独立的 System V IPC 对象，随执行器一起销毁（IPC 命名空间）",
    ),
    "cage.memory_tree": (
        "memory cgroup: {limit} bytes for the executor and every process it starts, together",
        "内存 cgroup：执行器及其启动的所有进程合计 {limit} 字节",
    ),
    "cage.missing": (
        "MISSING: {reason}",
        "缺失：{reason}",
    ),
    "cage.memory_tree_missing": (
        "MISSING: {reason}; only RLIMIT_AS per process holds (each process of a tree may hold that much)",
        "缺失：{reason}；只有每个进程的 RLIMIT_AS 生效（进程树中的每个进程都可占用这么多）",
    ),
    "cage.filesystem": (
        "a root of its own (mount namespace, pivot_root): /usr, /etc, /opt, Python and its own tree, read-only; "
        "a fresh /proc; /proc/self/mountinfo lists only these",
        "独立的根文件系统（挂载命名空间，pivot_root）：只读的 /usr、/etc、/opt、Python 与自己的目录树；"
        "新挂载的 /proc；/proc/self/mountinfo 只列出这些",
    ),
    "cage.in_process_note": (
        "in-process: the submission ran in the tests' interpreter and could change the tests and their verdicts; "
        "a check for the student, never a grade (infralab grade isolates)",
        "进程内运行：提交的代码与测试在同一解释器中运行，可以改动测试及其判定；"
        "这只是学生自查，绝不作为成绩（infralab grade 会隔离运行）",
    ),
    # --- the executor's calls (infralab/judge/isolated.py) ------------------------------------
    "cage.importing": ("importing {origin}", "导入 {origin}"),
    "cage.on_ranks": ("{module} on {world_size} ranks", "{module}（{world_size} 个 rank）"),
    "cage.during": ("during {what}", "发生在 {what} 期间"),
    "cage.ran_out_of_time": ("{what} ran out of time", "{what} 超时"),
    "cage.not_started": (
        "the isolated executor did not start ({error}): {output}",
        "隔离执行器未能启动（{error}）：{output}",
    ),
    "cage.bad_greeting": ("the isolated executor sent a malformed greeting", "隔离执行器发送了格式错误的握手消息"),
    "cage.died_too_often": (
        "{what}: the executor died {deaths} times (exited or was killed during a call); "
        "further calls fail without running",
        "{what}：执行器已崩溃 {deaths} 次（在调用中退出或被杀死）；之后的调用不再运行，直接失败",
    ),
    "cage.budget_spent": (
        "{what}: the submission's time budget of {budget:g} s is spent; this call was not made",
        "{what}：该提交 {budget:g} 秒的时间预算已用完；此调用未执行",
    ),
    "cage.call_timeout": (
        "{what} did not return within {timeout:g} s; the executor was stopped",
        "{what} 在 {timeout:g} 秒内未返回；执行器已被停止",
    ),
    "cage.died_in_call": (
        "{what}: the executor died during the call (it exited or was killed)",
        "{what}：执行器在调用期间崩溃（退出或被杀死）",
    ),
    "cage.malformed_answer": ("{what}: malformed answer from the executor ({error})", "{what}：执行器的应答格式错误（{error}）"),
    "cage.no_result": ("malformed answer from the executor (no result)", "执行器的应答格式错误（没有结果）"),
    "cage.no_module_handle": (
        "malformed answer from the executor (no module handle)",
        "执行器的应答格式错误（没有模块句柄）",
    ),
    "cage.lost_on_restart": (
        "this object was lost when the executor was restarted",
        "执行器重启时此对象已丢失",
    ),
    "cage.lost_on_stop": (
        "this {type} was lost when the executor was stopped (an earlier call hung or crashed it)",
        "执行器被停止时此 {type} 已丢失（之前的某次调用使其卡住或崩溃）",
    ),
    "cage.cannot_pass": (
        "cannot pass a {type} to the isolated implementation: only tensors, numbers, strings, None, dtypes, "
        "containers of those and objects it returned (docs/authoring.md)",
        "不能把 {type} 传给隔离的实现：只能传张量、数字、字符串、None、dtype、由它们组成的容器，"
        "以及该实现返回的对象（见 docs/authoring.md）",
    ),
    "cage.callable_marker": ("unexpected callable marker", "意外的可调用对象标记"),
    "cage.no_attribute": ("{type} has no attribute {name!r}", "{type} 没有属性 {name!r}"),
    "cage.not_a_method": (
        "{type}.{name} is not a method: objects returned by the implementation under test are used through "
        "their methods only (docs/authoring.md)",
        "{type}.{name} 不是方法：被测实现返回的对象只能通过其方法使用（见 docs/authoring.md）",
    ),
    "cage.methods_only": (
        "objects from the implementation under test are used through their methods only",
        "被测实现中的对象只能通过其方法使用",
    ),
    "cage.strikes": (
        "{what} ran out of time {strikes} times; further calls fail without running",
        "{what} 已超时 {strikes} 次；之后的调用不再运行，直接失败",
    ),
    # --- the executor's memory group (infralab/judge/cgroup.py) --------------------------------
    "cage.no_cgroup_hierarchy": (
        "no memory cgroup hierarchy under /sys/fs/cgroup",
        "/sys/fs/cgroup 下没有内存 cgroup 层级",
    ),
    "cage.no_cgroup": ("no memory cgroup for the executor ({error})", "执行器无法使用内存 cgroup（{error}）"),
    "cage.no_cgroup_platform": (
        "no memory cgroup: the cage is not made on this platform",
        "没有内存 cgroup：此平台上不建立隔离笼",
    ),
}
