"""Independent references (from the paper's formulas; loops over rows for the quantiser) and known
mistakes of part05_quantization.smoothquant."""
import torch

ALPHA_SWAPPED = ("exponents swapped: max|X|^(1 - alpha) / max|W|^alpha instead of max|X|^alpha / max|W|^(1 - alpha)",
                 "指数用反了：应为 max|X|^alpha / max|W|^(1−alpha)，而不是 max|X|^(1−alpha) / max|W|^alpha")
WEIGHT_MAX_PER_ROW = ("max|W| taken per output row (over the input columns) instead of per input column j",
                      "max|W| 按输出行（沿输入列）求了，应当对每个输入列 j（沿输出行）求")
MIGRATION_INVERTED = ("migration inverted: x * s and W / s (the outliers grow) instead of x / s and W * s",
                      "迁移方向反了：x·s 与 W/s（离群值变得更大），应为 x/s 与 W·s")
PER_TOKEN_WRONG_AXIS = ("per-token scales taken per column (per channel) instead of per row (per token)",
                        "按 token 的 scale 按列（按通道）求了，应当每行（每个 token）一个")
NO_CLAMP = ("no clamp: a column of zero weights makes s infinite (max|W_j| must be clamped to >= 1e-5)",
            "没有截断：全零的权重列使 s 变成无穷大（max|W_j| 必须先截断到至少 1e−5）")


def reference_absmax(x):
    return x.reshape(-1, x.shape[-1]).double().abs().amax(0).float()


def reference_smooth_scales(act_absmax, weight, alpha, *, swap=False, weight_axis=0, clamp=True):
    a = act_absmax.double()
    w = weight.double().abs().amax(weight_axis)
    if clamp:
        w = w.clamp(min=1e-5)
    p, q = (1 - alpha, alpha) if swap else (alpha, 1 - alpha)
    s = a.pow(p) / w.pow(q)
    return (s.clamp(min=1e-5) if clamp else s).float()


def reference_fake_quant(t, per_row, *, per_column=False):
    """Row by row (or column by column for the mistake), symmetric int8 with -127..127."""
    t = t.float()
    out = torch.empty_like(t)
    lines = [t] if not (per_row or per_column) else (list(t.T) if per_column else list(t))
    results = []
    for line in lines:
        amax = line.abs().max()
        scale = amax / 127 if amax > 0 else torch.tensor(1.0)
        results.append(torch.clamp(torch.round(line / scale), -127, 127) * scale)
    if not (per_row or per_column):
        return results[0]
    out = torch.stack(results)
    return out.T.contiguous() if per_column else out


def reference_w8a8(x, weight, per_token, per_channel, *, act_per_column=False):
    xq = reference_fake_quant(x, per_token and not act_per_column, per_column=act_per_column)
    return (xq.double() @ reference_fake_quant(weight, per_channel).double().T).float()


def reference_smoothquant(x, weight, act_absmax, alpha, per_token, per_channel, *, inverted=False, **scale_kw):
    s = reference_smooth_scales(act_absmax, weight, alpha, **scale_kw)
    if inverted:
        s = 1 / s
    return reference_w8a8(x.float() / s, weight.float() * s, per_token, per_channel)


def smooth_scale_mistakes(act_absmax, weight, alpha):
    wrong = {ALPHA_SWAPPED: lambda: reference_smooth_scales(act_absmax, weight, alpha, swap=True)}
    if weight.shape[0] == weight.shape[1]:
        wrong[WEIGHT_MAX_PER_ROW] = lambda: reference_smooth_scales(act_absmax, weight, alpha, weight_axis=1)
    return wrong


def smoothquant_mistakes(x, weight, act_absmax, alpha, per_token, per_channel):
    wrong = {
        ALPHA_SWAPPED: lambda: reference_smoothquant(x, weight, act_absmax, alpha, per_token, per_channel, swap=True),
        MIGRATION_INVERTED: lambda: reference_smoothquant(x, weight, act_absmax, alpha, per_token, per_channel,
                                                          inverted=True),
    }
    if weight.shape[0] == weight.shape[1]:
        wrong[WEIGHT_MAX_PER_ROW] = lambda: reference_smoothquant(x, weight, act_absmax, alpha, per_token,
                                                                  per_channel, weight_axis=1)
    if per_token:
        s = reference_smooth_scales(act_absmax, weight, alpha)
        wrong[PER_TOKEN_WRONG_AXIS] = lambda: reference_w8a8(x.float() / s, weight.float() * s, True, per_channel,
                                                             act_per_column=True)
    return wrong


def outlier_activations(gen, n=32, cin=64, out=24, n_outliers=3, factor=50.0):
    """``(x (n, cin), w (out, cin))`` with ``n_outliers`` input channels ``factor`` times larger in every token."""
    x = torch.randn(n, cin, generator=gen)
    x[:, torch.randperm(cin, generator=gen)[:n_outliers]] *= factor
    return x, torch.randn(out, cin, generator=gen) * 0.05
