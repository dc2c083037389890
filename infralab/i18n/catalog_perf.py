"""Messages of the performance checks and the leaderboard. Keys: ``perf.*``."""

MESSAGES = {
    "perf.audit_no_own_kernel": (
        "the profiled timed batch ran none of the submission's own @triton.jit kernels; it ran: {kernels}",
        "抽查的计时批次中没有运行提交代码自己的 @triton.jit 内核；实际运行的是：{kernels}",
    ),
    "perf.audit_side_stream": (
        "kernel {kernel} ran on stream {stream}, not on the timed stream {timed}: work on a side stream "
        "escapes the timer",
        "内核 {kernel} 运行在流 {stream} 上，而不是计时流 {timed}：放在旁路流上的工作逃过了计时",
    ),
    "perf.audit_baseline_side_stream": (
        "while the judge timed its baseline, {kernel} ran on stream {stream}, not on the timed stream {timed}: "
        "work the submission left running between its calls (a thread?) slows the baseline and lifts the "
        "candidate's ratio",
        "评测方计时基线时，{kernel} 运行在流 {stream} 上，而不是计时流 {timed}：提交代码在两次调用之间留下的工作"
        "（线程？）拖慢了基线，抬高了候选实现的比值",
    ),
    "perf.submission_thread": (
        "the submission left code running in a thread while the judge measured: {threads}; a call must "
        "return its outputs, and work left running between calls can slow the judge's baseline",
        "评测方测量时，提交代码仍在线程中运行：{threads}；一次调用应返回其输出，在调用之间继续运行的工作"
        "可能拖慢评测方的基线",
    ),
    "perf.profiled_baseline_rejected": (
        "profiled baseline batch (round {round}): {problem}",
        "抽查的基线批次（第 {round} 轮）：{problem}",
    ),
    "perf.audit_foreign_kernel": (
        "the profiled timed batch ran {kernel}, a {family} kernel: a Triton exercise computes in its own "
        "@triton.jit kernels (torch may only allocate, copy and fill)",
        "抽查的计时批次运行了 {kernel}，这是{family}内核：Triton 练习必须在自己的 @triton.jit 内核中计算"
        "（torch 只能分配、复制和填充）",
    ),
    "perf.family_inductor": ("torch.compile (Inductor)", "torch.compile（Inductor）生成的"),
    "perf.family_cudnn": ("cuDNN (convolution)", "cuDNN（卷积）"),
    "perf.family_attention_library": ("library attention", "库实现的注意力"),
    "perf.family_cublas": ("cuBLAS/CUTLASS (matrix multiply)", "cuBLAS/CUTLASS（矩阵乘）"),
    "perf.family_aten_compute": ("torch (aten) compute", "torch（aten）计算"),
    "perf.family_unknown": ("foreign (not the submission's own Triton)", "外来的（不是提交代码自己的 Triton）"),
    "perf.audit_not_via_triton": (
        "kernel {kernel} ran {count} times but Triton launched it {launched} times: a kernel named like "
        "the submission's own was launched by something else",
        "内核 {kernel} 运行了 {count} 次，但 Triton 只启动了 {launched} 次：与提交代码内核同名的内核由别的途径启动",
    ),
    "perf.timed_no_launch": (
        "{where}: a timed call launched no Triton kernel (it computed with torch, or only in some calls)",
        "{where}：一次计时调用没有启动任何 Triton 内核（用 torch 计算，或只在部分调用中启动）",
    ),
    "perf.timed_side_stream": (
        "{where}: a timed call launched Triton kernel {kernel} on CUDA stream {stream:#x}, not on the stream it is "
        "timed on ({timed:#x}): work on a side stream runs beside the timed stream, untimed while the batch is enqueued",
        "{where}：一次计时调用在 CUDA 流 {stream:#x} 上启动了 Triton 内核 {kernel}，而不是在计时所用的流（{timed:#x}）上："
        "旁路流上的工作与计时流并行执行，在批次入队期间不被计时",
    ),
    "perf.timed_foreign_launch": (
        "{where}: a timed call launched Triton kernel(s) {kernels}, which the submission's files do not "
        "define (its @triton.jit functions: {own}); torch.compile writes such kernels",
        "{where}：一次计时调用启动了 Triton 内核 {kernels}，提交文件中并未定义它们（其 @triton.jit 函数：{own}）；"
        "torch.compile 会生成这类内核",
    ),
    "perf.torch_compile": (
        "{file}, {where}: torch.compile (dynamo/Inductor) in a Triton exercise: write the kernel with "
        "@triton.jit yourself",
        "{file}，{where}：Triton 练习中使用了 torch.compile（dynamo/Inductor）：请自己用 @triton.jit 编写内核",
    ),
    "perf.graph_failed": (
        "the short calls could not be captured in a CUDA graph ({error}): timed in eager batches after an L2 "
        "flush, where the launches' gaps weigh on a call of a few microseconds",
        "这些短调用无法捕获进 CUDA graph（{error}）：改为在清空 L2 后逐次启动的批次计时，"
        "对只有几微秒的调用，启动之间的间隙会压低成绩",
    ),
    "perf.tampered": (
        "the timer's functions were replaced while the submission ran: {names}",
        "提交代码运行期间替换了计时函数：{names}",
    ),
    "perf.timed_call_failed": (
        "a timed call failed: {error}",
        "一次计时调用失败：{error}",
    ),
    "perf.profiled_rejected": (
        "profiled timed batch (round {round}): {problem}",
        "抽查的计时批次（第 {round} 轮）：{problem}",
    ),
    "perf.leaderboard_no_records": (
        "{path}: no result record with performance entries (expected *.json written by "
        "`infralab bench --record`, `infralab grade` or benchmarks/h200_suite.py)",
        "{path}：没有含性能条目的结果记录（应为 `infralab bench --record`、`infralab grade` 或 "
        "benchmarks/h200_suite.py 写出的 *.json）",
    ),
    "perf.leaderboard_bad_record": (
        "{path}: not a result record ({error}); skipped",
        "{path}：不是结果记录（{error}）；已跳过",
    ),
    "perf.leaderboard_written": (
        "leaderboard: {rankings} ranking(s), {entries} entries -> {out}",
        "排行榜：{rankings} 个排名，{entries} 个条目 -> {out}",
    ),
    "perf.leaderboard_provisional": (
        "provisional profile: thresholds derived from the datasheet",
        "临时硬件档案：阈值由数据手册推算",
    ),
    "perf.lb_title": ("GPU performance leaderboard", "GPU 性能排行榜"),
    "perf.lb_intro": (
        "One ranking per exercise, challenge, shape and hardware profile: each submission's best accepted "
        "figure, then the submissions without an accepted figure (unranked). Figures of different "
        "hardware profiles are never ranked together; each row's evidence is its record.",
        "每个练习、挑战、形状和硬件档案各一个排名：每份提交的最佳通过成绩，其后是没有通过成绩的提交（不排名）。"
        "不同硬件档案的成绩从不放在同一排名中；每行的证据就是它的结果记录。",
    ),
    "perf.lb_profile": ("profile", "硬件档案"),
    "perf.compiled_object": (
        "`{name}` is a torch.compile'd function",
        "`{name}` 是经 torch.compile 编译的函数",
    ),
    # --- a perf: entry of course.yml (infralab/perf/spec.py) ------------------------------------
    "perf.spec.not_arithmetic": ("not an arithmetic expression: {problem}", "不是算术表达式：{problem}"),
    "perf.spec.unknown_name": ("unknown name {name!r} (known: {known})", "未知名称 {name!r}（已知：{known}）"),
    "perf.spec.only_arithmetic": (
        "only numbers, names and + - * / // ** are allowed, got {node}",
        "只允许数字、名称和 + - * / // **，实际为 {node}",
    ),
    "perf.spec.threshold_mapping": (
        "a mapping {{fraction: number, of: <ceiling>|baseline}}",
        "映射 {{fraction: number, of: <ceiling>|baseline}}",
    ),
    "perf.spec.threshold_of": (
        "'baseline' or a profile ceiling ({ceilings})",
        "'baseline' 或硬件配置的某个上限（{ceilings}）",
    ),
    "perf.spec.threshold_fraction": (
        "a number in (0, 10) for 'of: baseline' (10x is flagged), in (0, 2] for a ceiling",
        "'of: baseline' 时为 (0, 10) 内的数（10 倍会被标记），上限时为 (0, 2] 内的数",
    ),
    "perf.spec.lower_case_name": ("a lower-case name", "小写名称"),
    "perf.spec.formula_needed": (
        "a formula string (metric {metric} needs it)",
        "公式字符串（指标 {metric} 需要它）",
    ),
    "perf.spec.formula": ("a formula string", "公式字符串"),
    "perf.spec.baseline": (
        "one of workload {workload}'s baselines {baselines}",
        "负载 {workload} 的基线之一 {baselines}",
    ),
    "perf.spec.options": ("a mapping with keys from {keys}", "键取自 {keys} 的映射"),
    "perf.spec.shapes": ("a non-empty list of {{dim: size}} mappings", "非空的 {{dim: size}} 映射列表"),
    "perf.spec.shape_dims": (
        "a mapping with exactly the dimensions {dims}",
        "恰好包含维度 {dims} 的映射",
    ),
    "perf.spec.positive_integer": ("a positive integer", "正整数"),
    "perf.spec.valid_formula": ("a valid formula", "合法的公式"),
    "perf.spec.positive_amount": ("a positive amount at shape {shape}", "在形状 {shape} 下为正的数量"),
    "perf.spec.challenge_at_least_pass": (
        "at least pass.fraction ({fraction:g})",
        "不小于 pass.fraction（{fraction:g}）",
    ),
    # --- a hardware profile (hardware_profiles/*.yml, infralab/perf/profiles.py) ------------------
    "perf.profile.ceiling_referred": (
        "this ceiling (a challenge's threshold refers to it)",
        "此上限（某个挑战的阈值引用了它）",
    ),
    "perf.profile.number_above": ("a number > {minimum:g}", "大于 {minimum:g} 的数"),
    "perf.profile.identifier": ("a lower-case identifier", "小写标识符"),
    "perf.profile.file_stem": ("the file's stem {stem!r}", "文件名（不含扩展名）{stem!r}"),
    "perf.profile.name_patterns": ("a non-empty list of regular expressions", "非空的正则表达式列表"),
    "perf.profile.valid_regex": ("a valid regular expression", "合法的正则表达式"),
    "perf.profile.capability": ("[major, minor]", "[major, minor]（主版本号, 次版本号）"),
    "perf.profile.memory_range": ("[min, max] in GiB", "以 GiB 为单位的 [min, max]"),
    "perf.profile.min_le_max": ("min <= max", "min <= max（下限不大于上限）"),
    "perf.profile.datasheet_peak": ("this datasheet peak", "此数据手册峰值"),
    "perf.profile.ceiling_missing": ("this ceiling: {meaning}", "此上限：{meaning}"),
    "perf.profile.ceiling_above_peak": (
        "at most 1.05x peaks.{peak} ({value:g})",
        "不超过 peaks.{peak} 的 1.05 倍（{value:g}）",
    ),
    "perf.profile.measured_date": (
        "the date the ceilings were measured or estimated",
        "测量或估计这些上限的日期",
    ),
    "perf.profile.calibrated_needs": ("present on a calibrated profile", "已校准的配置中必须存在"),
    # what each ceiling a profile must give means
    "perf.ceiling.copy_gbps": (
        "device-to-device copy, bytes read + written per second (GB/s)",
        "设备内拷贝，每秒读取 + 写入的字节数（GB/s）",
    ),
    "perf.ceiling.read_gbps": ("read-only reduction over a large buffer (GB/s)", "对大缓冲区的只读归约（GB/s）"),
    "perf.ceiling.matmul_bf16_tflops": ("torch.matmul bf16 at 8192^3 (TFLOP/s)", "8192^3 规模的 bf16 torch.matmul（TFLOP/s）"),
    "perf.ceiling.matmul_fp16_tflops": ("torch.matmul fp16 at 8192^3 (TFLOP/s)", "8192^3 规模的 fp16 torch.matmul（TFLOP/s）"),
    # --- a performance verdict (infralab/perf/decision.py) ------------------------------------
    "perf.verdict.incorrect": ("correctness gate failed: {message}", "未通过正确性检查：{message}"),
    "perf.verdict.flagged": ("flagged for the instructor's review: {flags}", "已标记，交由教师复核：{flags}"),
    "perf.verdict.challenge": ("challenge bar met: {bar}{provisional}", "达到挑战线：{bar}{provisional}"),
    "perf.verdict.pass": ("pass bar met: {bar}{provisional}", "达到及格线：{bar}{provisional}"),
    "perf.verdict.below_pass": ("below the pass bar: {bar}{provisional}", "未达到及格线：{bar}{provisional}"),
    "perf.verdict.provisional": (
        " (provisional profile: thresholds from the datasheet)",
        "（临时硬件配置：阈值来自数据手册）",
    ),
    "perf.flag.above_peak": (
        "{achieved:,.0f} {unit} is above {factor}x the datasheet peak ({peak:,.0f} {unit})",
        "{achieved:,.0f} {unit} 超过了数据手册峰值（{peak:,.0f} {unit}）的 {factor} 倍",
    ),
    "perf.flag.above_reference": (
        "{ratio:.1f}x faster than the baseline: over {factor:g}x the reference",
        "比基线快 {ratio:.1f} 倍：超过参考实现的 {factor:g} 倍",
    ),
    "perf.flag.wall_mismatch": (
        "host wall time far above CUDA-event time: work outside the timed stream",
        "主机墙钟时间远高于 CUDA 事件计时：有工作在被计时的流之外",
    ),
    "perf.bar.ratio": (">= {fraction:g}x baseline", ">= 基线的 {fraction:g} 倍"),
    "perf.bar.absolute": (
        ">= {value:,.0f} {unit} ({fraction:.0%} of {ceiling})",
        ">= {value:,.0f} {unit}（{ceiling} 的 {fraction:.0%}）",
    ),
    "perf.bar.small_set": (
        ">= {ratio:g}x baseline (working set < {factor}x L2: relative check only, with a margin for timing noise)",
        ">= 基线的 {ratio:g} 倍（工作集 < {factor} 倍 L2：只做相对比较，并为计时噪声留出余量）",
    ),
    # --- infralab profile show|detect|calibrate (infralab/perf/profile_cmd.py) --------------------
    "perf.profile_cmd.unknown": ("no profile {name!r} (registered: {names})", "没有硬件配置 {name!r}（已注册：{names}）"),
    "perf.profile_cmd.no_perf": ("runs no perf challenge", "不运行性能挑战"),
    "perf.profile_cmd.detected": (
        "profile: {name} ({status}), ceilings: {ceilings}",
        "硬件配置：{name}（{status}），上限：{ceilings}",
    ),
    "perf.profile_cmd.none": ("none", "无"),
    "perf.profile_cmd.no_gpu": (
        "infralab profile calibrate: no CUDA GPU on this machine; nothing to measure",
        "infralab profile calibrate：本机没有 CUDA GPU；无可测量",
    ),
    "perf.profile_cmd.wrote": ("wrote {path} (calibrated: {ceilings})", "已写入 {path}（已校准：{ceilings}）"),
    "perf.challenge_other_profiles": (
        "challenge {id} is declared for {profiles}, not {profile}",
        "挑战 {id} 只为 {profiles} 声明，不适用于 {profile}",
    ),
    "perf.too_few_outputs": (
        "expected {expected} outputs ({names}), got {got}",
        "应有 {expected} 个输出（{names}），实际为 {got} 个",
    ),
}
