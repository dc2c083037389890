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
}
