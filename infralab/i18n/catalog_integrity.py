"""Messages of the verdict's integrity: the flag kinds (the one table of them), the guards around
every call into an implementation, and the static scan of submitted source. Keys: ``integrity.*``.

``integrity.flag.<kind>`` keys ARE the table of flag kinds: a flag whose kind has no key here is
refused by the judge (and recorded as ``flag-forged``). See :mod:`infralab.judge.flags`.
"""

MESSAGES = {
    # -- flag kinds: what each one means, for the instructor ----------------------------------
    "integrity.flag.tampering": (
        "replaced a torch comparison routine (torch.allclose, assert_close, Tensor.__eq__, ...)",
        "替换了 torch 的比较函数（torch.allclose、assert_close、Tensor.__eq__ 等）",
    ),
    "integrity.flag.harness-import": (
        "imported the test harness (pytest, infralab, solutions, graders)",
        "导入了测试框架（pytest、infralab、solutions、graders）",
    ),
    "integrity.flag.read-hidden": (
        "tried to read hidden folders (graders, solutions, fixtures, .git)",
        "试图读取隐藏目录（graders、solutions、fixtures、.git）",
    ),
    "integrity.flag.write-outside": (
        "tried to write a file outside its own home folder",
        "试图在自己的主目录之外写文件",
    ),
    "integrity.flag.network": ("tried to use the network", "试图使用网络"),
    "integrity.flag.process": ("started a process (fork, subprocess, exec)", "启动了进程（fork、subprocess、exec）"),
    "integrity.flag.signal": ("sent a signal to a process", "向进程发送了信号"),
    "integrity.flag.tensor-subclass": (
        "returned a tensor subclass (only its raw data was used)",
        "返回了 Tensor 子类（只使用了其原始数据）",
    ),
    "integrity.flag.forged-object": (
        "returned an object that overrides __eq__",
        "返回了重写 __eq__ 的对象",
    ),
    "integrity.flag.banned-call": (
        "called a torch routine this exercise bans",
        "调用了本练习禁止使用的 torch 例程",
    ),
    "integrity.flag.timeout": ("a call ran out of time", "某次调用超时"),
    "integrity.flag.executor-died": (
        "the executor exited or was killed during a call",
        "执行进程在调用中退出或被杀死",
    ),
    "integrity.flag.output": ("printed more than the output cap", "输出超过了上限"),
    "integrity.flag.misnamed-module": (
        "a submitted module's name or folder is not the course's (the closest name is suggested)",
        "提交的模块名或目录名与课程不符（给出了最接近的名称）",
    ),
    "integrity.flag.ambiguous-module": (
        "a module uploaded without its folder exists in several parts: the folder is needed",
        "未带目录上传的模块在多个部分中都存在：需要提供目录",
    ),
    "integrity.flag.unreadable-submission": (
        "the submission could not be read (a corrupt zip, ...): nothing was graded",
        "无法读取该提交（zip 损坏等）：未进行评分",
    ),
    "integrity.flag.empty-submission": (
        "the submission holds no file: nothing was graded",
        "该提交不包含任何文件：未进行评分",
    ),
    "integrity.flag.ignored-file": (
        "a submitted file that could be code was ignored (conftest.py, .pth, a link, ...)",
        "忽略了可能是代码的提交文件（conftest.py、.pth、符号链接等）",
    ),
    "integrity.flag.grading-error": ("grading this submission failed", "评分此提交时出错"),
    "integrity.flag.input-modified": (
        "a call changed an input tensor the specification does not let it change",
        "某次调用修改了规格不允许修改的输入张量",
    ),
    "integrity.flag.guard-disabled": (
        "a guard around the call was removed or replaced (mode stack, call wrapper, launch watch)",
        "调用周围的检查被移除或替换（模式栈、调用包装、内核启动监视）",
    ),
    "integrity.flag.not-kernel-output": (
        "a Triton exercise returned a tensor that none of its own kernels wrote",
        "Triton 练习返回了一个不是由其自身内核写入的张量",
    ),
    "integrity.flag.suspicious-source": (
        "the submitted source holds something that has no place in an answer (see the detail)",
        "提交的源代码中含有不应出现在答案中的内容（见详情）",
    ),
    "integrity.flag.flag-channel": (
        "the executor's flag channel was closed or carried garbage",
        "执行进程的标记通道被关闭或收到了无法解析的数据",
    ),
    "integrity.flag.flag-forged": (
        "a flag of an unknown kind was sent from the executor (refused)",
        "执行进程发来了未知类型的标记（已拒绝）",
    ),
    "integrity.flag.flags-capped": (
        "more flags of one kind than the record keeps; the rest were counted, not kept",
        "同一类型的标记超过记录上限；其余只计数不保留",
    ),
    # -- the guards around a call --------------------------------------------------------------
    "integrity.banned": (
        "{where} called {op} ({op_class} routine), which this exercise bans: write the computation "
        "yourself (banned here: {banned})",
        "{where} 调用了 {op}（{op_class} 类例程），本练习禁止使用：请自己实现这部分计算（本练习禁止：{banned}）",
    ),
    "integrity.op_side_stream": (
        "{where} ran {op} on CUDA stream {stream:#x}, not on the stream it is timed on ({timed:#x}): work on a "
        "side stream runs beside the judge's clock; issue every op and kernel of a timed call on the current stream",
        "{where} 在 CUDA 流 {stream:#x} 上执行了 {op}，而不是在计时所用的流（{timed:#x}）上：副流上的工作"
        "在评测时钟之外运行；计时调用中的每个算子和内核都必须在当前流上发出",
    ),
    "integrity.triton_torch_side": (
        "{where} called {op} in torch: in a Triton exercise the torch side may only allocate, view, copy, "
        "cast and fill; compute in your @triton.jit kernels",
        "{where} 在 torch 中调用了 {op}：Triton 练习中 torch 部分只能分配、取视图、复制、转换类型和填充；"
        "请在你的 @triton.jit 内核中计算",
    ),
    "integrity.no_launch": (
        "{where} returned without launching a Triton kernel: this exercise must compute its result in a "
        "@triton.jit kernel launched as kernel[grid](...), not with torch operations",
        "{where} 没有启动任何 Triton 内核就返回了：本练习必须在以 kernel[grid](...) 启动的 @triton.jit "
        "内核中计算结果，而不是用 torch 运算",
    ),
    "integrity.not_kernel_output": (
        "{where}: returned tensor {index} was not written by a @triton.jit kernel defined in your files; "
        "return the buffers your kernels write",
        "{where}：返回的第 {index} 个张量不是由你文件中定义的 @triton.jit 内核写入的；请返回内核写入的缓冲区",
    ),
    "integrity.input_modified": (
        "{where} changed its input `{argument}`, which the specification does not let it change; "
        "compute on a copy",
        "{where} 修改了输入 `{argument}`，而规格不允许修改它；请在副本上计算",
    ),
    "integrity.guard_disabled": (
        "{where}: a guard around the call was removed ({what}); the call does not count",
        "{where}：调用周围的检查被移除（{what}）；本次调用无效",
    ),
    # -- course.yml keys of this area ----------------------------------------------------------
    "integrity.course.banned_name": (
        "an op class ({classes}) or a routine name that maps to one",
        "一个算子类（{classes}）或能映射到算子类的例程名",
    ),
    "integrity.course.mutates_function": (
        "a public function of the exercise (or Class.method of a public class): one of {public}",
        "本练习的公开函数（或公开类的 Class.method）：{public} 之一",
    ),
    "integrity.course.mutates_argument": (
        "a parameter of {function} in {file}: one of {parameters}",
        "{file} 中 {function} 的参数：{parameters} 之一",
    ),
}
