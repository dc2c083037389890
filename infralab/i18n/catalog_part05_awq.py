"""Messages of part05_quantization.awq's tests. Keys: ``part05.awq.*``."""

MESSAGES = {
    "part05.awq.alpha_not_on_grid": (
        "alpha: expected a Python float i / {n_grid} (i in 0..{last}), got {got}",
        "alpha：应为 Python float 类型的 i / {n_grid}（i 取 0..{last}），实际为 {got}",
    ),
    "part05.awq.not_first_minimum": (
        "alpha = {alpha} (grid point {i}, error {error}) is not the first minimum of your own errors "
        "(grid point {first}, error {best})",
        "alpha = {alpha}（网格点 {i}，误差 {error}）不是你自己返回的误差中的第一个最小值"
        "（网格点 {first}，误差 {best}）",
    ),
    "part05.awq.alpha_differs": (
        "alpha: expected {expected}, got {got}",
        "alpha：应为 {expected}，实际为 {got}",
    ),
    "part05.awq.tie_not_first": (
        "every grid point has the same error; expected the first (alpha = 0.0), got alpha = {got}",
        "所有网格点误差相同，应取第一个（alpha = 0.0），实际 alpha = {got}",
    ),
    "part05.awq.bias_not_none": (
        "prev_bias=None: expected None back, got {got}",
        "prev_bias=None 时应返回 None，实际返回了 {got}",
    ),
    "part05.awq.not_below_rtn": (
        "{inputs}: AWQ's output error {awq} is not well below round-to-nearest's {rtn} (expected < 0.8x)",
        "{inputs}：AWQ 的输出误差 {awq} 没有明显低于直接四舍五入（RTN）的 {rtn}（应小于其 0.8 倍）",
    ),
    "part05.awq.calibration_inputs": ("calibration inputs", "校准输入"),
    "part05.awq.held_out_inputs": ("held-out inputs", "未参与校准的新输入"),
}
