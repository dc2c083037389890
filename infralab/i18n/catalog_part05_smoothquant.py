"""Messages of part05_quantization.smoothquant's tests. Keys: ``part05.smoothquant.*``."""

MESSAGES = {
    "part05.smoothquant.not_below_plain": (
        "with outlier activation channels the smoothed W8A8 squared error {smooth} is not well below the unsmoothed "
        "{plain} (expected < 0.7x)",
        "激活有离群通道时，平滑后的 W8A8 平方误差 {smooth} 没有明显低于未平滑的 {plain}（应小于其 0.7 倍）",
    ),
}
