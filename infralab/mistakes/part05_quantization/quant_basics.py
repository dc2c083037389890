"""Independent references (one loop per group, written from the formulas) and known mistakes of
part05_quantization.quant_basics."""
import torch

from infralab.i18n import tr
from infralab.testing import Mismatch, check_tensor

FP8 = {"e4m3": (torch.float8_e4m3fn, 448.0), "e5m2": (torch.float8_e5m2, 57344.0)}
NO_SATURATION = ("no saturation before the fp8 cast (overflow becomes inf/NaN)", "转换成 fp8 之前没有饱和（溢出变成 inf/NaN）")
SCALES_ON_INPUT_AXIS = ("per-channel scales along the wrong axis: one per input column instead of one per output row",
                        "逐通道 scale 的轴错了：每个输入列一个，而不是每个输出行一个")




def groups_of(w, granularity, group_size):
    """[(row slice, column slice)] per group, in (R, G) order, and (R, G)."""
    out, cols = w.shape
    if granularity == "tensor":
        return [[(slice(None), slice(None))]], (1, 1)
    gs = cols if granularity == "channel" else group_size
    return [[(slice(r, r + 1), slice(c, c + gs)) for c in range(0, cols, gs)] for r in range(out)], \
        (out, cols // gs)


def reference_absmax(w, bits, granularity, group_size=128, *, qmax=None, stat="max", rounding=torch.round):
    qmax = qmax if qmax is not None else 2 ** (bits - 1) - 1
    w = w.float()
    layout, shape = groups_of(w, granularity, group_size)
    q, scale = torch.zeros(w.shape), torch.zeros(shape)
    for r, row in enumerate(layout):
        for g, (rs, cs) in enumerate(row):
            block = w[rs, cs]
            a = block.abs().max() if stat == "max" else block.abs().mean()
            s = a / qmax if a > 0 else torch.tensor(1.0)
            scale[r, g] = s
            q[rs, cs] = torch.clamp(rounding(block / s), -(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1)
    return q.to(torch.int8), scale


def round_half_away(x):
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def reference_zeropoint(w, bits, granularity, group_size=128, *, clamp_zero=True, widen_to_zero=False):
    top = 2 ** bits - 1
    w = w.float()
    layout, shape = groups_of(w, granularity, group_size)
    q = torch.zeros(w.shape)
    scale, zero = torch.zeros(shape), torch.zeros(shape)
    for r, row in enumerate(layout):
        for g, (rs, cs) in enumerate(row):
            block = w[rs, cs]
            mn, mx = block.min(), block.max()
            if widen_to_zero:
                mn, mx = torch.minimum(mn, torch.tensor(0.0)), torch.maximum(mx, torch.tensor(0.0))
            s = torch.clamp(mx - mn, min=1e-5) / top
            z = -torch.round(mn / s)
            z = torch.clamp(z, 0, top) if clamp_zero else z
            scale[r, g], zero[r, g] = s, z
            q[rs, cs] = torch.clamp(torch.round(block / s) + z, 0, top)
    return q.to(torch.uint8), scale, zero.to(torch.int32)


def check_scale_shape(scale, expected_shape, w, granularity):
    check_tensor(scale, dtype=torch.float32, name="scale")
    if tuple(scale.shape) == tuple(expected_shape):
        return
    diagnosis = None
    if granularity == "channel" and tuple(scale.shape) in ((1, w.shape[1]), (w.shape[1], 1), (w.shape[1],)):
        diagnosis = SCALES_ON_INPUT_AXIS
    raise Mismatch(tr("part05.quant_basics.scale_shape", granularity=granularity, expected=tuple(expected_shape),
                      got=tuple(scale.shape)),
                   diagnosis)


def absmax_mistakes(w, bits, granularity, group_size):
    return {
        ("round half away from zero instead of half to even", "中点值远离零舍入，而不是舍入到偶数"):
            lambda: reference_absmax(w, bits, granularity, group_size, rounding=round_half_away)[0],
        ("scale from the mean |w| instead of the max", "scale 取自 |w| 的均值而不是最大值"):
            lambda: reference_absmax(w, bits, granularity, group_size, stat="mean")[0],
        ("scale amax / (qmax + 0.5) (torch.ao's 127.5) instead of amax / qmax",
         "scale 用了 amax / (qmax + 0.5)（torch.ao 的 127.5），而不是 amax / qmax"):
            lambda: reference_absmax(w, bits, granularity, group_size, qmax=2 ** (bits - 1) - 0.5)[0],
    }


def scale_mistakes(w, bits, granularity, group_size):
    return {
        ("scale from the mean |w| instead of the max", "scale 取自 |w| 的均值而不是最大值"):
            lambda: reference_absmax(w, bits, granularity, group_size, stat="mean")[1],
        ("scale amax / (qmax + 0.5) (torch.ao's 127.5) instead of amax / qmax",
         "scale 用了 amax / (qmax + 0.5)（torch.ao 的 127.5），而不是 amax / qmax"):
            lambda: reference_absmax(w, bits, granularity, group_size, qmax=2 ** (bits - 1) - 0.5)[1],
    }


def zeropoint_mistakes(w, bits, granularity, gs, part):
    pick = {"q": 0, "scale": 1, "zero": 2}[part]
    return {
        ("zero point not clamped to [0, 2^bits - 1] (it is stored as an unsigned b-bit value)",
         "zero point 没有截断到 [0, 2^bits - 1]（它以无符号 b 位值存储）"):
            lambda: reference_zeropoint(w, bits, granularity, gs, clamp_zero=False)[pick],
        ("range widened to include 0 (the GPTQ / torch.ao convention, not AutoAWQ's)",
         "范围扩展到包含 0（GPTQ / torch.ao 的约定，不是 AutoAWQ 的）"):
            lambda: reference_zeropoint(w, bits, granularity, gs, widen_to_zero=True)[pick],
    }


def reference_fp8(x, fmt, scale=None, saturate=True):
    dtype, fmax = FP8[fmt]
    xf = x.float()
    if scale is None:
        amax = xf.abs().max()
        scale = amax / fmax if amax > 0 else torch.tensor(1.0)
    y = xf / scale
    return (y.clamp(-fmax, fmax) if saturate else y).to(dtype), scale
