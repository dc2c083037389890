"""Scaled dot-product attention with masks and grouped KV heads (textbook 01, Attention 家族).

``softmax(q k^T / sqrt(D)) v``, with the details every inference engine gets right:

- **MHA / GQA / MQA**: k and v may have fewer heads than q (LLaMA-2-70B: 64 query heads share
  8 KV heads). With ``group = Hq / Hkv``, query head ``h`` reads KV head ``h // group``
  (consecutive query heads share a KV head, as HF ``repeat_kv`` does).
- **Causal mask aligned bottom-right**: when there are fewer queries than keys (decoding one
  token against a KV cache, or a chunk of a long prompt), the queries are the *last* Sq
  positions: query i sits at position ``i + Skv - Sq`` and sees keys ``j <= i + Skv - Sq``.
  (``torch``'s ``is_causal=True`` aligns top-left, which is wrong for decoding.)
- **Sliding window** (Mistral): a window of W covers W keys *including the current one*:
  positions ``pos - W + 1 .. pos``.
- **Key padding mask**: ``(B, Skv)`` bool, True = a real token, False = padding.
- A query row that sees no key at all returns **zeros** (a softmax over nothing would be NaN).
- Softmax in float32; the output in the input dtype.

中文说明：
注意力 = softmax(q·kᵀ × scale) · v，scale 默认 1/sqrt(D)。GQA 中多个 query 头共享一个 KV 头：
第 h 个 query 头使用第 h // (Hq/Hkv) 个 KV 头（相邻的头共享，不是 h % Hkv）。因果掩码要"右下对齐"：
query 比 key 少时（解码、分块 prefill），第 i 个 query 的绝对位置是 i + Skv − Sq，只能看 j ≤ 该位置
的 key。滑动窗口 W 包含当前 token 在内共 W 个 key。padding 掩码 True 表示保留。一个 key 都看不到
的行输出全 0（不是 NaN）。softmax 沿 key 维、用 fp32 计算，输出转回输入 dtype。
不许调用 torch 的 scaled_dot_product_attention。
"""
from __future__ import annotations

import torch


def attention_mask(sq: int, skv: int, causal: bool = False, window: int | None = None,
                   key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Which keys each query may attend to.

    Args:
        sq: Sq, the number of queries; they are the last Sq of the Skv positions.
        skv: Skv, the number of keys.
        causal: query i (absolute position ``p = i + Skv - Sq``) sees keys ``j <= p`` only.
        window: None, or W >= 1 (needs ``causal=True``; otherwise raise ``ValueError``):
            additionally ``j >= p - W + 1``, i.e. W keys including the current one.
        key_padding_mask: None, or ``(B, Skv)`` bool, True = keep, False = padding.

    Returns:
        bool tensor ``(B, 1, Sq, Skv)`` (``(1, 1, Sq, Skv)`` without a padding mask),
        True where query i may attend to key j. Rows may be all False (e.g. Sq > Skv with
        causal, or a sequence that is all padding).

    中文：返回布尔掩码 (B或1, 1, Sq, Skv)，True 表示可见。因果右下对齐：第 i 个 query 的位置是
    i + Skv − Sq；窗口 W 含当前 token 共 W 个 key；padding 掩码 True 表示保留。
    """
    raise NotImplementedError("attention_mask")


def masked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                     scale: float | None = None) -> torch.Tensor:
    """Scaled dot-product attention under an explicit mask, with grouped KV heads.

    Args:
        q: ``(B, Hq, Sq, D)``, any float dtype.
        k: ``(B, Hkv, Skv, D)``; v: ``(B, Hkv, Skv, Dv)``; same dtype as q. Hq must be a
            multiple of Hkv (otherwise raise ``ValueError``); query head h uses KV head
            ``h // (Hq // Hkv)``.
        mask: None (everything visible) or a bool tensor broadcastable to
            ``(B, Hq, Sq, Skv)``, True = may attend (e.g. from :func:`attention_mask`).
        scale: multiplies the scores; None means ``1 / sqrt(D)``.

    Returns:
        ``(B, Hq, Sq, Dv)`` in q's dtype::

            s[b, h, i, j] = scale * sum_d q[b, h, i, d] * k[b, h // group, j, d]   # float32
            p[b, h, i, :] = softmax over j of s, restricted to visible j (float32)
            out[b, h, i]  = sum_j p[b, h, i, j] * v[b, h // group, j]

        A row with no visible key gives zeros. Do not call ``scaled_dot_product_attention``.

    中文：分数 = scale·q·kᵀ（fp32），被掩码的位置不参与 softmax（沿最后的 key 维），再乘 v；
    GQA 第 h 个 query 头用第 h // group 个 KV 头；一行全被掩盖时输出 0；结果转回 q 的 dtype。
    """
    raise NotImplementedError("masked_attention")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              window: int | None = None, key_padding_mask: torch.Tensor | None = None,
              scale: float | None = None) -> torch.Tensor:
    """Attention with a bottom-right causal mask, a sliding window and key padding.

    Args:
        q: ``(B, Hq, Sq, D)``; k: ``(B, Hkv, Skv, D)``; v: ``(B, Hkv, Skv, Dv)``; one float dtype.
        causal, window, key_padding_mask: as in :func:`attention_mask`.
        scale: as in :func:`masked_attention` (None means ``1 / sqrt(D)``).

    Returns:
        ``(B, Hq, Sq, Dv)`` in q's dtype: ``masked_attention(q, k, v, attention_mask(Sq, Skv,
        causal, window, key_padding_mask), scale)``.

    中文：先按 causal / window / padding 生成掩码，再做带掩码的注意力。
    """
    raise NotImplementedError("attention")
