"""Independent references, error bounds derived from the scales, and known mistakes of
part05_quantization.kv_quant."""
import math

import torch

QMAX = {"int8": 127.0, "e4m3": 448.0}
TRUNCATED = ("codes truncated toward zero (.to(torch.int8) without torch.round)",
             "码字向零截断了（直接 .to(torch.int8)，没有先 torch.round）")
AXIS_SWAPPED = ("token and channel swapped: per-token scales reduce over D (one per token), per-channel over T",
                "按 token 与按通道弄反了：按 token 沿 D 归约（每个 token 一个 scale），按通道沿 T 归约")
FP8_WITH_INT8_MAX = ("e4m3 scaled with int8's 127 instead of its own maximum 448",
                     "e4m3 的 scale 用了 int8 的 127，而不是它自己的最大值 448")
UNQUANTIZED = ("attention over the original k and v: the cache was never quantised",
               "注意力用的是原始 k、v：缓存根本没有量化")
NO_SQRT_D = ("logits not divided by sqrt(D)", "注意力分数没有除以 sqrt(D)")


def reference_quantize_kv(t, fmt, axis, *, qmax=None, rounding=torch.round):
    """Group by group: move the reduced axis last, one scale per remaining index."""
    qmax = QMAX[fmt] if qmax is None else qmax
    t = t.float()
    moved = t if axis == "token" else t.transpose(-1, -2)             # (..., group, members)
    amax = moved.abs().amax(-1, keepdim=True)
    scale = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))
    y = torch.clamp(moved / scale, -QMAX[fmt], QMAX[fmt])
    q = rounding(y).to(torch.int8) if fmt == "int8" else y.to(torch.float8_e4m3fn)
    if axis == "channel":
        q, scale = q.transpose(-1, -2).contiguous(), scale.transpose(-1, -2).contiguous()
    return q, scale


def reference_dequantize(q, scale):
    return q.double() * scale.double()


def round_trip_bound(t, scale, fmt):
    """The largest |t - q * scale| the format allows, elementwise, from the scales (the stub's derivation):
    int8 scale / 2, e4m3 max(2^-4 |t|, 2^-10 scale); plus fp32's own rounding of t / scale and of q * scale,
    each at most 2^-24 relative to a value of at most qmax * scale (a few ulps: seed 5028 of a sweep
    exceeded scale / 2 by one)."""
    s = scale.double().expand(t.shape)
    fp32 = 2 * QMAX[fmt] * 2.0 ** -24 * s
    if fmt == "int8":
        return s / 2 + fp32
    return torch.maximum(t.double().abs() * 2.0 ** -4, s * 2.0 ** -10) + fp32


def reference_attention(q, k_hat, v_hat, *, sqrt_d=True):
    logits = q.double() @ k_hat.double().transpose(-1, -2)
    if sqrt_d:
        logits = logits / math.sqrt(q.shape[-1])
    return torch.softmax(logits, -1) @ v_hat.double()


def attention_bound(q, k, v, dk, dv):
    """Bound on |attention(q, k_hat, v_hat) - attention(q, k, v)| elementwise, from |k_hat - k| <= dk and
    |v_hat - v| <= dv: each logit moves by at most eps = max_t sum_d |q_d| dk_td / sqrt(D), each softmax
    weight by at most the factor e^(2 eps), so |out - out'| <= (e^(2 eps) - 1) sum_t p_t (|v_td| + dv_td)
    + sum_t p_t dv_td."""
    D = q.shape[-1]
    eps = (q.double().abs() @ dk.double().transpose(-1, -2) / math.sqrt(D)).amax(-1, keepdim=True)   # (B,H,Tq,1)
    p = torch.softmax(q.double() @ k.double().transpose(-1, -2) / math.sqrt(D), -1)                  # (B,H,Tq,T)
    return torch.expm1(2 * eps) * (p @ (v.double().abs() + dv.double())) + p @ dv.double()


def quantize_mistakes(t, fmt, axis, part):
    pick = {"q": 0, "scale": 1}[part]
    other = "channel" if axis == "token" else "token"
    wrong = {AXIS_SWAPPED: lambda: reference_quantize_kv(t, fmt, other)[pick]}
    if fmt == "int8":
        wrong[TRUNCATED] = lambda: reference_quantize_kv(t, fmt, axis, rounding=torch.trunc)[pick]
    else:
        wrong[FP8_WITH_INT8_MAX] = lambda: reference_quantize_kv(t, fmt, axis, qmax=127.0)[pick]
    return wrong


def quantized_attention(q, k, v, fmt, k_axis, v_axis, **kw):
    k_hat = reference_dequantize(*reference_quantize_kv(k, fmt, k_axis, **kw))
    v_hat = reference_dequantize(*reference_quantize_kv(v, fmt, v_axis, **kw))
    return k_hat, v_hat


def attention_mistakes(q, k, v, fmt, k_axis, v_axis):
    def with_cache(**kw):
        return lambda: reference_attention(q, *quantized_attention(q, k, v, fmt, k_axis, v_axis, **kw)).float()
    wrong = {UNQUANTIZED: lambda: reference_attention(q, k, v).float(),
             NO_SQRT_D: lambda: reference_attention(q, *quantized_attention(q, k, v, fmt, k_axis, v_axis),
                                                    sqrt_d=False).float()}
    if fmt == "int8":
        wrong[TRUNCATED] = with_cache(rounding=torch.trunc)
    else:
        wrong[FP8_WITH_INT8_MAX] = with_cache(qmax=127.0)
    swapped = ("token" if k_axis == "channel" else "channel", "token" if v_axis == "channel" else "channel")
    wrong[AXIS_SWAPPED] = lambda: reference_attention(q, *quantized_attention(q, k, v, fmt, *swapped)).float()
    return wrong


def outlier_keys(gen, B=1, H=2, T=32, D=16, n_outliers=2, factor=20.0):
    """Keys with ``n_outliers`` channels ``factor`` times larger in every token (as RoPE'd keys have)."""
    k = torch.randn(B, H, T, D, generator=gen)
    k[..., torch.randperm(D, generator=gen)[:n_outliers]] *= factor
    return k


def outlier_tokens(gen, B=1, H=2, T=32, D=16, n_outliers=2, factor=20.0):
    """Values with ``n_outliers`` tokens ``factor`` times larger than the rest."""
    v = torch.randn(B, H, T, D, generator=gen)
    v[..., torch.randperm(T, generator=gen)[:n_outliers], :] *= factor
    return v
