"""Messages of the roofline plot (infralab.perf.roofline) and of the feedback page's performance
section. Keys: ``roofline.*``."""

MESSAGES = {
    "roofline.no_matplotlib": (
        "roofline not drawn: matplotlib is not installed (pip install -e '.[dev]', or pip install matplotlib)",
        "未绘制 roofline：没有安装 matplotlib（pip install -e '.[dev]'，或 pip install matplotlib）",
    ),
    "roofline.no_gpu_entry": (
        "roofline not drawn: the record has no GPU measurement (a CPU run is never a performance result)",
        "未绘制 roofline：记录中没有 GPU 测量结果（CPU 运行从来不是性能结果）",
    ),
    "roofline.no_profile": (
        "roofline not drawn: hardware profile {profile!r} is not registered under {folder}",
        "未绘制 roofline：{folder} 下没有注册硬件档案 {profile!r}",
    ),
    "roofline.no_intensity": (
        "roofline not drawn: no measured challenge declares both `bytes` and `flops` in course.yml "
        "(the arithmetic intensity is flops / bytes)",
        "未绘制 roofline：course.yml 中没有哪个已测量的挑战同时声明 `bytes` 和 `flops`（算术强度 = flops / bytes）",
    ),
    "roofline.written": ("roofline: {path}", "roofline 图：{path}"),
    "roofline.title": (
        "Roofline on {profile} ({status})",
        "{profile} 上的 roofline（{status}）",
    ),
    "roofline.x_label": ("arithmetic intensity (FLOP/byte)", "算术强度（FLOP/字节）"),
    "roofline.y_label": ("achieved TFLOP/s", "实测 TFLOP/s"),
    "roofline.memory_measured": (
        "memory, measured copy: {gbps} GB/s",
        "内存，实测拷贝带宽：{gbps} GB/s",
    ),
    "roofline.memory_datasheet": (
        "memory, datasheet: {gbps} GB/s",
        "内存，数据手册：{gbps} GB/s",
    ),
    "roofline.compute_measured": (
        "{dtype} compute, measured matmul: {tflops} TFLOP/s",
        "{dtype} 算力，实测矩阵乘：{tflops} TFLOP/s",
    ),
    "roofline.compute_datasheet": (
        "{dtype} compute, datasheet: {tflops} TFLOP/s",
        "{dtype} 算力，数据手册：{tflops} TFLOP/s",
    ),
    "roofline.kernel": ("kernel (filled) · baseline (hollow)", "内核（实心）· 基线（空心）"),
    "roofline.point": (
        "{label}: {achieved} {unit}, {ratio}x {baseline}",
        "{label}：{achieved} {unit}，为 {baseline} 的 {ratio} 倍",
    ),
    # the feedback page
    "roofline.html_heading": ("GPU performance", "GPU 性能"),
    "roofline.html_alt": (
        "roofline of the measured kernels on hardware profile {profile}",
        "硬件档案 {profile} 上所测内核的 roofline 图",
    ),
    "roofline.html_challenge": ("challenge", "挑战"),
    "roofline.html_shape": ("shape", "形状"),
    "roofline.html_achieved": ("achieved", "实测"),
    "roofline.html_ceiling": ("% of ceiling", "占上限比例"),
    "roofline.html_baseline": ("vs baseline", "相对基线"),
    "roofline.html_decision": ("decision", "结论"),
}
