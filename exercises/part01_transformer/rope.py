"""Rotary position embedding, RoPE (textbook 01 §1.2.3; context extension 09 §9.3).

RoPE encodes position by rotating pairs of query/key coordinates: pair i at position p turns by
the angle ``p * theta_i`` with ``theta_i = base ** (-2i / D)``. The dot product of a rotated
query and key then depends on their *distance* only. Three steps:

1. :func:`rope_inv_freq`: the D/2 inverse frequencies ``theta_i``, optionally rescaled so that a
   model trained on ``original_max_position_embeddings`` tokens works on longer inputs
   (linear / position interpolation, NTK-aware, dynamic NTK, YaRN, Llama 3.1);
2. :func:`rope_cos_sin`: cos and sin of the angles for a run of positions starting at an
   ``offset`` (during decoding the new token sits at position ``offset = tokens already cached``);
3. :func:`apply_rope`: rotate q or k of shape (B, H, S, D) in one of two pairings:
   ``"rotate_half"`` (HF LLaMA, Qwen, Mistral: pair i is (x[i], x[i + D/2])) or
   ``"interleaved"`` (Meta's original LLaMA, GPT-J: pair i is (x[2i], x[2i + 1])).

Conventions follow ``transformers.modeling_rope_utils`` (the parameter names of ``rope_scaling``
in a HF config).

中文说明：
RoPE 把 q/k 的每两个坐标看成一个二维向量，在位置 p 处旋转角度 p·θ_i，θ_i = base^(-2i/D)
（注意指数是 2i/D，i 是"第几对"）。旋转后 q·k 只依赖相对距离。两种配对方式：HF 的 rotate-half
把第 i 维和第 i+D/2 维配成一对；Meta/GPT-J 的 interleaved 把第 2i、2i+1 维配成一对，两者不能混用。
解码时新 token 的位置是 offset（缓存里已有的 token 数），不能从 0 开始。长上下文外推：
linear 把所有频率除以 factor（等价于把位置除以 factor）；NTK-aware 放大 base；YaRN 按波长
分段插值并返回一个 attention_scaling（乘到 cos/sin 上）；Llama 3.1 对低频除以 factor、高频不变、
中间平滑过渡。
"""
from __future__ import annotations

import torch


def rope_inv_freq(head_dim: int, base: float = 10000.0, scaling: dict | None = None,
                  seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    """The RoPE inverse frequencies ``theta_i``, rescaled for longer contexts if asked.

    Args:
        head_dim: D, the rotated head dimension (positive and even; otherwise raise ``ValueError``).
        base: the RoPE base (``rope_theta``), e.g. 10000 (LLaMA 2) or 500000 (Llama 3).
        scaling: ``None`` or a dict with ``"type"`` and that type's parameters
            (an unknown type raises ``ValueError``); ``L = original_max_position_embeddings``:

            - ``{"type": "default"}`` (same as ``None``): ``theta_i = base ** (-2i / D)``,
              i = 0 .. D/2 - 1, computed in float32 as transformers does:
              ``1.0 / base ** (torch.arange(0, D, 2).float() / D)``. This is the course's one
              convention (llama.py uses it too): computing in float64 and rounding differs by
              up to 3 ulp, which moves an angle by 6e-3 at position 32k.
            - ``{"type": "linear", "factor": s}``: position interpolation,
              ``theta_i / s`` (the same as dividing every position by s).
            - ``{"type": "ntk", "factor": s}``: static NTK-aware scaling, the default formula with
              ``base' = base * s ** (D / (D - 2))``.
            - ``{"type": "dynamic", "factor": s, "original_max_position_embeddings": L}``: dynamic
              NTK (HF ``"dynamic"``): with ``n = max(seq_len, L)`` (``n = L`` when seq_len is
              None), ``base' = base * (s * n / L - (s - 1)) ** (D / (D - 2))``; no change for
              n <= L.
            - ``{"type": "yarn", "factor": s, "original_max_position_embeddings": L,
              "beta_fast": 32, "beta_slow": 1, "attention_factor": None, "mscale": None,
              "mscale_all_dim": None, "truncate": True}`` (all but factor and L optional, defaults
              shown). With ``corr(r) = D * ln(L / (2 pi r)) / (2 ln base)``:
              ``low = corr(beta_fast)``, ``high = corr(beta_slow)``, floored/ceiled when truncate,
              then clamped to ``low >= 0``, ``high <= D - 1``; ``ramp_i = clamp((i - low) /
              (high - low), 0, 1)`` over pair index i (add 0.001 to high if low == high);
              ``theta'_i = theta_i / s * ramp_i + theta_i * (1 - ramp_i)``.
              Attention scaling: ``attention_factor`` if given; else, if both mscale and
              mscale_all_dim are given, ``m(s, mscale) / m(s, mscale_all_dim)``; else ``m(s, 1)``,
              where ``m(s, c) = 0.1 * c * ln(s) + 1`` for s > 1 and 1 otherwise.
            - ``{"type": "llama3", "factor": s, "low_freq_factor": a, "high_freq_factor": b,
              "original_max_position_embeddings": L}`` (Llama 3.1): wavelength
              ``w_i = 2 pi / theta_i``; ``w_i > L / a`` (low frequency): ``theta_i / s``;
              ``w_i < L / b`` (high frequency): ``theta_i`` unchanged; in between:
              ``(1 - t) * theta_i / s + t * theta_i`` with ``t = (L / w_i - a) / (b - a)``.
        seq_len: the current sequence length; used by ``"dynamic"`` only.

    Returns:
        ``(inv_freq, attention_scaling)``: ``inv_freq`` of shape ``(D // 2,)``, float32;
        ``attention_scaling`` a Python float, 1.0 for every type but YaRN. It multiplies cos
        and sin (see :func:`rope_cos_sin`), as HF does.

    中文：head_dim 须为正偶数（否则 ValueError）；计算 θ_i = base^(-2i/D)（指数是 2i/D 不是 i/D；和 transformers 一样用 float32 计算，llama.py 也如此），再按 scaling 类型调整：linear 除以 factor，
    ntk/dynamic 放大 base，yarn 按波长分段插值并给出 attention_scaling，llama3 低频除以 factor、高频不变。
    """
    raise NotImplementedError("rope_inv_freq")


def rope_cos_sin(inv_freq: torch.Tensor, seq_len: int, offset: int | torch.Tensor = 0,
                 attention_scaling: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotation angles for ``seq_len`` consecutive positions.

    Args:
        inv_freq: ``(D // 2,)`` float32, from :func:`rope_inv_freq`.
        seq_len: S, how many positions.
        offset: the first position: an ``int`` (every sequence starts at the same position), or
            an int64 tensor ``(B,)`` with one start per sequence (ragged decoding). During
            decoding, ``offset`` is the number of tokens already in the KV cache.
        attention_scaling: multiplies both cos and sin (YaRN's factor; 1.0 otherwise).

    Returns:
        ``(cos, sin)``, float32, each ``(S, D // 2)`` for an int offset or ``(B, S, D // 2)`` for
        a tensor offset::

            angle[..., p, i] = float32(offset + p) * inv_freq[i]     # a float32 product, as HF
            cos = cos(angle) * attention_scaling;  sin = sin(angle) * attention_scaling

        Compute the angle in float32 exactly like that (not in float64): at position 4096 the
        two differ by ~1e-4 rad.

    中文：位置从 offset 开始（解码时 offset = 已缓存的 token 数），角度 = 位置 × θ_i（fp32 计算），
    返回 cos/sin，每个只存 D/2 列，并乘以 attention_scaling。
    """
    raise NotImplementedError("rope_cos_sin")


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
               pairing: str = "rotate_half") -> torch.Tensor:
    """Rotate q or k by the RoPE angles.

    Args:
        x: ``(B, H, S, D)`` queries or keys, any float dtype.
        cos, sin: ``(S, D // 2)`` or ``(B, S, D // 2)`` from :func:`rope_cos_sin`
            (shared by every head).
        pairing: which coordinates form pair i (any other value raises ``ValueError``):

            - ``"rotate_half"`` (HF LLaMA): ``(x[..., i], x[..., i + D/2])``;
            - ``"interleaved"`` (Meta LLaMA, GPT-J): ``(x[..., 2i], x[..., 2i + 1])``.

    Returns:
        ``(B, H, S, D)`` in ``x``'s dtype; each pair ``(a, b)`` becomes::

            (a * cos_i - b * sin_i,  a * sin_i + b * cos_i)       # a counter-clockwise turn

        and stays in the positions the pair came from. Compute in float32 and cast back to
        ``x.dtype``; do not modify ``x`` in place.

    中文：把每一对坐标 (a, b) 逆时针旋转：(a·cos − b·sin, a·sin + b·cos)。rotate_half 的第 i 对是
    (x_i, x_{i+D/2})，interleaved 的第 i 对是 (x_{2i}, x_{2i+1})；fp32 计算后转回输入 dtype。
    """
    raise NotImplementedError("apply_rope")
