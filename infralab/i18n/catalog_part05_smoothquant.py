"""Messages of part05_quantization.smoothquant's tests. Keys: ``part05.smoothquant.*``."""

MESSAGES = {
    "part05.smoothquant.not_below_plain": (
        "with outlier activation channels the smoothed W8A8 error {smooth} is not well below the unsmoothed {plain} "
        "(expected < 0.6x)",
        "激活有离群通道时，平滑后的 W8A8 误差 {smooth} 没有明显低于未平滑的 {plain}（应小于其 0.6 倍）",
    ),
}
