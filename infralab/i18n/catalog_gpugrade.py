"""Messages of caged GPU grading (``infralab grade --gpu``, infralab.perf.caged). Keys: ``gpugrade.*``."""

MESSAGES = {
    "gpugrade.timed_output_wrong": (
        "a timed batch's output was wrong (call {call} of {calls}, drawn by the judge after the gate had "
        "passed): {problem}",
        "计时批次的输出错误（第 {call}/{calls} 次调用，由评测方在正确性门通过后随机抽取）：{problem}",
    ),
    "gpugrade.gate_ragged": (
        "at the ragged shape {shape}{dtype}: {problem}",
        "在不规则形状 {shape}{dtype} 上：{problem}",
    ),
    "gpugrade.evidence_timing": (
        "the judge's clock around synchronised batches run in the caged executor, each enqueued beforehand "
        "behind a device-side wait that the judge's clock releases (the host's enqueueing is not timed, as the "
        "bench's spin kernel hides it); the cage's own timer is a cross-check only",
        "评测方自己的时钟，计时隔离执行器中已同步的整批调用；每批先在设备端的等待之后排队，由评测方开始计时时放行"
        "（主机端的排队开销不计入，与 bench 的 spin kernel 相同）；隔离环境内部的计时仅作交叉核对",
    ),
    "gpugrade.clock_disagreement": (
        "the cage's timer ({inner_ms} ms per batch) disagrees with the judge's clock ({judge_ms} ms) by more "
        "than {rel} + {abs_ms} ms: the timer was changed, or work ran outside what the cage timed",
        "隔离环境内的计时（每批 {inner_ms} ms）与评测方时钟（{judge_ms} ms）相差超过 {rel} + {abs_ms} ms："
        "计时器被改动过，或有工作在隔离环境计时范围之外运行",
    ),
    "gpugrade.memory_retry": (
        "the device ran out of memory ({where}): timed again with {scale} of the memory budget for a batch's sets "
        "and outputs",
        "设备内存不足（{where}）：将批次输入与输出的内存预算缩小为原来的 {scale} 后再次计时",
    ),
    "gpugrade.memory_where_judge": ("in the judge's own work", "发生在评测方自己的工作中"),
    "gpugrade.memory_where_cage": ("in the caged executor", "发生在隔离执行器中"),
    "gpugrade.judge_out_of_memory": (
        "the judge's own work ran out of device memory, even after {retries} retries with batches half as large "
        "({error}): the submission was not timed; grade this shape again on a GPU with more free memory",
        "评测方自己的工作耗尽了设备内存，批次减半重试 {retries} 次后仍然如此（{error}）：该提交未被计时；"
        "请在空闲内存更多的 GPU 上重新评测此形状",
    ),
    "gpugrade.arming_failed": (
        "a batch enqueued behind the device-side wait was not released by the judge within {seconds:g} s (a call "
        "that waits on the device, such as .item(), blocks it): timed without arming, so the host's enqueueing "
        "counts",
        "在设备端等待之后排队的批次未能在 {seconds:g} 秒内由评测方放行（等待设备的调用，如 .item()，会阻塞它）："
        "改为不预先排队计时，主机端的排队开销计入成绩",
    ),
    "gpugrade.graph_failed": (
        "the calls could not be captured in a CUDA graph ({error}): timed in armed batches of at most 256 calls, "
        "where the cage's handling of each batch weighs more on short calls",
        "这些调用无法捕获进 CUDA graph（{error}）：改用每批最多 256 次调用的预排队批次计时，"
        "对很短的调用，隔离环境处理每批请求的时间占比更大",
    ),
    "gpugrade.gate_not_filling": (
        "the filling gate was asked for but a runner waited behind the one-block gate ({problem}): a kernel the "
        "candidate launched on a side stream while a batch was enqueued could run before the judge's clock",
        "要求使用占满设备的闸门，但有一方仍在单块闸门之后等待（{problem}）：批次入队期间候选在旁路流上启动的内核"
        "可能在裁判计时开始前运行",
    ),
    "gpugrade.gate_fill_test_failed": (
        "its self-test saw a kernel on another stream run behind the closed gate ({blocks} blocks of {threads} threads)",
        "自检发现另一个流上的内核在关闭的闸门之后运行了（{blocks} 个块，每块 {threads} 个线程）",
    ),
    "gpugrade.graph_blocked": (
        "replaying a CUDA graph of {calls} calls behind the device-side wait blocked the host (released after "
        "{seconds:g} s): timed again with graphs of half as many calls",
        "在设备端等待之后重放含 {calls} 次调用的 CUDA graph 阻塞了主机（{seconds:g} 秒后被放行）：改用调用数减半的 graph 重新计时",
    ),
    "gpugrade.device_busy": (
        "the judge's own device copy, interleaved with the baseline, read {gbps} GB/s, {fraction} of this profile's "
        "calibrated {copy} GB/s (at least {min} expected): something else ran on the GPU while the judge timed, "
        "such as work the submission left running, which slows the baseline and lifts the candidate's ratio",
        "评测方自己的设备内存拷贝（与基线交替运行）只测得 {gbps} GB/s，为该硬件配置标定值 {copy} GB/s 的 {fraction}"
        "（应不低于 {min}）：评测计时期间 GPU 上还有其他工作在运行（例如提交代码遗留运行的任务），这会拖慢基线并抬高候选实现的速度比",
    ),
    "gpugrade.unresolved": (
        "below the bar on the judge's clock ({ratio}x the baseline) but not on the cage's timer ({cage_ratio}x): a "
        "batch of {batch_ms} ms is too short for the judge's clock alone (under {resolved_ms} ms it still holds the "
        "cage's own handling of the request, 0.4-1 ms a batch on the H200); the instructor decides",
        "按评测方时钟低于门槛（基线的 {ratio} 倍），但按隔离环境计时并未低于（{cage_ratio} 倍）：{batch_ms} ms 的批次太短，"
        "评测方时钟无法单独判定（短于 {resolved_ms} ms 时仍包含隔离环境处理请求本身的时间，在 H200 上每批 0.4-1 ms）；由教师决定",
    ),
    "gpugrade.flagged": (
        "flagged for the instructor's review (the figure is the judge's own): {flags}",
        "已标记，交由教师复核（成绩数字来自评测方自己的时钟）：{flags}",
    ),
    "gpugrade.no_cuda": (
        "--gpu: this machine has no CUDA GPU ({reason}); grade without --gpu (Triton kernels are then checked "
        "under the interpreter and the GPU tests skip), or run on a GPU machine",
        "--gpu：这台机器没有 CUDA GPU（{reason}）；去掉 --gpu 评测（Triton 核在解释器下检查，GPU 测试跳过），"
        "或在有 GPU 的机器上运行",
    ),
    "gpugrade.bad_devices": (
        "--gpu: CUDA_VISIBLE_DEVICES={value!r} names no device; expected a comma-separated list of device ids",
        "--gpu：CUDA_VISIBLE_DEVICES={value!r} 没有给出任何设备；应为逗号分隔的设备编号列表",
    ),
    "gpugrade.skip_isolated_gpu": (
        "GPU tests and performance challenges run in the isolated judge only with --gpu (infralab grade --gpu) "
        "on a machine with a CUDA GPU; without it Triton kernels are checked under the interpreter",
        "GPU 测试和性能挑战只有在有 CUDA GPU 的机器上加 --gpu（infralab grade --gpu）时才在隔离评测中运行；"
        "否则 Triton 核在解释器下检查",
    ),
    "gpugrade.cage_gpu": (
        "GPU visible (CUDA_VISIBLE_DEVICES={devices}), CUDA started before student code, its device nodes bound; "
        "no address-space limit (CUDA needs it), the memory cgroup still holds",
        "GPU 可见（CUDA_VISIBLE_DEVICES={devices}），CUDA 在学生代码之前初始化，设备节点已绑定；"
        "不限制地址空间（CUDA 需要），内存 cgroup 仍然生效",
    ),
}
