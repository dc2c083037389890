"""Independent references (written from the paper's formulas, in float64 where no rounding grid is
involved) and known mistakes of part05_quantization.awq."""
import torch

MAX_INSTEAD_OF_MEAN = ("activation statistic max|x| (SmoothQuant's) instead of AWQ's mean|x|",
                       "激活统计用了 max|x|（SmoothQuant 的做法），AWQ 用的是 mean|x|")
WEIGHT_ERROR = ("the search minimised the weight error ||W - W_q|| instead of the layer's output error on the "
                "calibration inputs", "搜索最小化的是权重误差 ||W − W_q||，而不是校准输入上的层输出误差")
DIVIDED_WEIGHT = ("the weight columns were divided by s (Q(W / s) * s) instead of multiplied",
                  "权重的列被除以了 s（Q(W/s)·s），应当乘以 s")
NOT_UNSCALED = ("Q(W diag(s)) was compared with W without dividing by s again",
                "Q(W·s) 没有再除回 s 就与 W 比较")
FOLD_MULTIPLIED = ("1/s must go into the previous op: it was multiplied by s instead",
                   "前一算子应当除以 s（折叠 1/s），这里却乘了 s")
FOLD_WRONG_AXIS = ("the previous linear layer was scaled along its columns (inputs) instead of its rows (the "
                   "channels of x)", "上一层线性层按列（输入维）缩放了，应当按行（即 x 的通道）缩放")


def reference_stats(x, stat="mean"):
    a = x.reshape(-1, x.shape[-1]).double().abs()
    return (a.mean(0) if stat == "mean" else a.amax(0)).float()


def reference_scales(x_mean, alpha):
    s = x_mean.double().pow(alpha).clamp(min=1e-4)
    return (s / (s.max() * s.min()).sqrt()).float()


def reference_group_codes(w, bits, group_size):
    """One group at a time, as quant_basics' zero-point quantiser (fp32 arithmetic, so codes are exact):
    (q uint8 (out, in), scale float32 (out, G), zero int32 (out, G))."""
    out, cols = w.shape
    top = 2 ** bits - 1
    w = w.float()
    q = torch.empty(out, cols)
    scale, zero = torch.empty(out, cols // group_size), torch.empty(out, cols // group_size)
    for r in range(out):
        for g, c in enumerate(range(0, cols, group_size)):
            block = w[r, c:c + group_size]
            scale[r, g] = torch.clamp(block.max() - block.min(), min=1e-5) / top
            zero[r, g] = torch.clamp(-torch.round(block.min() / scale[r, g]), 0, top)
            q[r, c:c + group_size] = torch.clamp(torch.round(block / scale[r, g]) + zero[r, g], 0, top)
    return q.to(torch.uint8), scale, zero.to(torch.int32)


def dequantize_groups(q, scale, zero):
    gs = q.shape[1] // scale.shape[1]
    return (q.float() - zero.float().repeat_interleave(gs, 1)) * scale.repeat_interleave(gs, 1)


def reference_fake_quantize(w, bits, group_size):
    return dequantize_groups(*reference_group_codes(w, bits, group_size))


def _fast_fake_quantize(w, bits, group_size):
    """The same quantiser vectorised over groups, for the grid search's many calls."""
    out, cols = w.shape
    g = w.float().reshape(out, cols // group_size, group_size)
    top = 2 ** bits - 1
    lo, hi = g.amin(-1, keepdim=True), g.amax(-1, keepdim=True)
    scale = (hi - lo).clamp(min=1e-5) / top
    zero = torch.clamp(-torch.round(lo / scale), 0, top)
    return ((torch.clamp(torch.round(g / scale) + zero, 0, top) - zero) * scale).reshape(out, cols)


def reference_search(w, x, bits, group_size, n_grid=20, *, stat="mean", objective="output", direction=1,
                     unscale=True):
    """(s, alpha, errors); the keyword arguments produce the known mistakes."""
    x = x.reshape(-1, x.shape[-1]).float()
    w = w.float()
    x_mean = reference_stats(x, stat)
    y = x.double() @ w.double().T
    errors, best = [], None
    for i in range(n_grid):
        alpha = i / n_grid
        s = reference_scales(x_mean, alpha) ** direction
        w_q = _fast_fake_quantize(w * s, bits, group_size)
        if unscale:
            w_q = w_q / s
        if objective == "output":
            err = float(((y - x.double() @ w_q.double().T) ** 2).mean())
        else:
            err = float(((w.double() - w_q.double()) ** 2).mean())
        errors.append(err)
        if best is None or err < errors[best]:
            best = i
    return reference_scales(x_mean, best / n_grid) ** direction, best / n_grid, torch.tensor(errors,
                                                                                            dtype=torch.float32)


def search_mistakes(w, x, bits, group_size, n_grid, part):
    pick = {"s": 0, "errors": 2}[part]
    return {
        MAX_INSTEAD_OF_MEAN: lambda: reference_search(w, x, bits, group_size, n_grid, stat="max")[pick],
        WEIGHT_ERROR: lambda: reference_search(w, x, bits, group_size, n_grid, objective="weight")[pick],
        DIVIDED_WEIGHT: lambda: reference_search(w, x, bits, group_size, n_grid, direction=-1)[pick],
        NOT_UNSCALED: lambda: reference_search(w, x, bits, group_size, n_grid, unscale=False)[pick],
    }


def stats_mistakes(x):
    return {MAX_INSTEAD_OF_MEAN: lambda: reference_stats(x, "max")}


def reference_fold(prev_weight, weight, s, prev_bias=None):
    s64 = s.double()
    shape = (-1,) + (1,) * (prev_weight.dim() - 1)
    prev = (prev_weight.double() / s64.reshape(shape)).float()
    bias = None if prev_bias is None else (prev_bias.double() / s64).float()
    return prev, bias, (weight.double() * s64).float()


def fold_mistakes(prev_weight, s):
    shape = (-1,) + (1,) * (prev_weight.dim() - 1)
    wrong = {FOLD_MULTIPLIED: lambda: prev_weight.float() * s.reshape(shape)}
    if prev_weight.dim() == 2 and prev_weight.shape[1] == s.shape[0]:
        wrong[FOLD_WRONG_AXIS] = lambda: prev_weight.float() / s
    return wrong


def outlier_layer(gen, n=64, cin=64, out=16, n_outliers=3, factor=20.0):
    """A layer whose inputs have ``n_outliers`` channels ``factor`` times larger than the rest, as
    LLM activations do (the case AWQ is for): ``(w (out, cin), x (n, cin))``."""
    x = torch.randn(n, cin, generator=gen)
    x[:, torch.randperm(cin, generator=gen)[:n_outliers]] *= factor
    return torch.randn(out, cin, generator=gen) * 0.05, x


def output_error(w, w_q, x):
    """mean((x w^T - x w_q^T)^2) in float64."""
    x = x.reshape(-1, x.shape[-1]).double()
    return float(((x @ w.double().T - x @ w_q.double().T) ** 2).mean())
