"""References and known mistakes of part01_transformer.attention.

The reference mask is built element by element from the definition; the reference attention
runs in float64 with an explicit KV-head index per query head.
"""
import math

import torch

from infralab.testing import assert_close, randn

EMPTY_ROWS_NAN = ("rows with no visible key came out NaN (a softmax over only -inf)",
                  "没有可见 key 的行输出了 NaN（对全 -inf 做了 softmax）")
HALF_SCORES_OVERFLOW = ("scores computed in the input's half precision overflowed (fp16 max 65504): use float32",
                        "分数用输入的半精度计算而溢出（fp16 最大 65504）：请用 float32")


def reference_mask(sq, skv, causal=False, window=None, padding=None, top_left=False, window_keys=None):
    """bool (B or 1, 1, Sq, Skv) from the definition; top_left/window_keys model known mistakes."""
    shift = 0 if top_left else skv - sq
    keys = window if window_keys is None else window_keys
    rows = []
    for i in range(sq):
        p = i + shift  # the query's absolute position
        rows.append([(not causal or j <= p) and (keys is None or j > p - keys) for j in range(skv)])
    mask = torch.tensor(rows, dtype=torch.bool).reshape(1, 1, sq, skv)
    if padding is not None:
        mask = mask & padding[:, None, None, :]
    return mask


def reference_attention(q, k, v, mask=None, scale=None, kv_head=None, softmax_dim=-1, compute=torch.float64):
    """float64 attention; ``kv_head(h, group, hkv)`` picks the KV head (h // group when None);
    ``compute=q.dtype`` models the half-precision mistake."""
    hq, hkv = q.shape[1], k.shape[1]
    group = hq // hkv
    pick = torch.tensor([(kv_head or (lambda h, g, n: h // g))(h, group, hkv) for h in range(hq)])
    k, v = k.to(compute).index_select(1, pick), v.to(compute).index_select(1, pick)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = torch.einsum("bhid,bhjd->bhij", q.to(compute), k) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    probs = torch.softmax(scores, dim=softmax_dim).nan_to_num(nan=0.0)  # rows with no key: zeros
    return torch.einsum("bhij,bhjd->bhid", probs, v).to(q.dtype)


def attention_mistakes(q, k, v, causal=False, window=None, padding=None, scale=None):
    sq, skv = q.shape[2], k.shape[2]
    mask = reference_mask(sq, skv, causal, window, padding)
    out = {
        ("causal mask aligned top-left (query i sees keys j <= i) instead of bottom-right",
         "因果掩码按左上角对齐（query i 看到 key j <= i），而不是右下角"):
            lambda: reference_attention(q, k, v, reference_mask(sq, skv, causal, window, padding, top_left=True), scale),
        ("scores not scaled by 1/sqrt(D)", "分数没有乘以 1/sqrt(D)"): lambda: reference_attention(q, k, v, mask, 1.0),
        ("GQA: query head h used KV head h % Hkv instead of h // (Hq/Hkv)",
         "GQA：查询头 h 用了 KV 头 h % Hkv，而不是 h // (Hq/Hkv)"):
            lambda: reference_attention(q, k, v, mask, scale, kv_head=lambda h, g, n: h % n),
        ("softmax over the query axis instead of the key axis", "softmax 沿 query 轴计算，而不是沿 key 轴"):
            lambda: reference_attention(q, k, v, mask, scale, softmax_dim=-2),
    }
    if padding is not None:
        out[("padding mask inverted (True treated as padding)", "padding 掩码取反了（把 True 当成了 padding）")] = \
            lambda: reference_attention(q, k, v, reference_mask(sq, skv, causal, window, ~padding), scale)
    if q.dtype in (torch.float16, torch.bfloat16):
        out[("scores and softmax computed in the input's half precision instead of float32",
             "分数和 softmax 用输入的半精度计算，而不是 float32")] = \
            lambda: reference_attention(q, k, v, mask, scale, compute=q.dtype)
    if window is not None:
        for keys, what in ((window + 1, "W + 1"), (window - 1, "W - 1")):
            out[(f"sliding window off by one ({what} keys instead of W including the current one)",
                 f"滑动窗口差一（{what} 个 key，而不是包含当前位置在内的 W 个）")] = \
                lambda keys=keys: reference_attention(q, k, v, reference_mask(sq, skv, causal, window, padding,
                                                                               window_keys=keys), scale)
    return out


def expected_attention(q, k, v, causal=False, window=None, padding=None, scale=None):
    """The float64 reference with the mask built from the definition."""
    return reference_attention(q, k, v, reference_mask(q.shape[2], k.shape[2], causal, window, padding), scale)


def check_attention(mod, q, k, v, causal=False, window=None, padding=None, scale=None,
                    name=("attention output", "注意力输出")):
    expected = expected_attention(q, k, v, causal, window, padding, scale)
    got = mod.attention(q, k, v, causal=causal, window=window, key_padding_mask=padding, scale=scale)  # after: inputs as given
    assert_close(got, expected, name=name, reduction=k.shape[2],
                 mistakes=attention_mistakes(q, k, v, causal, window, padding, scale))


def qkv(gen, b, hq, hkv, sq, skv, d, dv=None, dtype=torch.float32, scale=1.0):
    return (randn(b, hq, sq, d, generator=gen, dtype=dtype, scale=scale),
            randn(b, hkv, skv, d, generator=gen, dtype=dtype, scale=scale),
            randn(b, hkv, skv, dv or d, generator=gen, dtype=dtype))
