"""DeepSeek multi-head latent attention (MLA): low-rank KV, decoupled RoPE key, absorbed decode
(textbook 01 Attention 家族 MHA → MQA → GQA → MLA; 09 §9.5 DeepSeek 体系; FlashMLA in 04 §4.5).

A KV cache of multi-head attention stores, per token and layer, a key and a value for every head.
MLA (DeepSeek-V2/V3) stores one small **latent** instead and rebuilds the heads' keys and values
from it:

- **Compression**: ``c_kv = RMSNorm(x W_DKV)``, ``(B, S, d_c)`` with ``d_c = kv_lora_rank``
  (DeepSeek-V3: 512), far smaller than ``H * (d_k + d_v)``.
- **Up-projection**: per head h, ``k_nope_h = c_kv W_UK_h`` (``d_nope``) and ``v_h = c_kv W_UV_h``
  (``d_v``).
- **Decoupled RoPE key**: RoPE does not commute with the up-projection (a rotation depending on the
  position sits between ``W_UK`` and the query), so the positional part of the key is separate:
  ``k_pe = RoPE(x W_KR)``, ``d_rope`` dims, **one for all heads** (like MQA), cached next to
  ``c_kv``. The query has both parts per head: ``q_h = [q_nope_h, RoPE(q_pe_h)]`` from ``x W_Q``.
- **Scores**: ``(q_nope_h · k_nope_h + q_pe_h · k_pe) / sqrt(d_nope + d_rope)``, causal softmax,
  output ``o_h = P_h v_h``, then ``out = concat_h(o_h) W_O``.
- **Absorbed form** (decode): ``q_nope_h · (W_UK_h c) = (W_UK_hᵀ q_nope_h) · c``, so ``W_UK`` folds
  into the query projection and the scores are taken against the cached latent itself; likewise
  ``W_O_h (W_UV_h (P_h c)) = (W_O_h W_UV_h)(P_h c)``: ``W_UV`` folds into the output projection.
  Attention then runs over one shared "KV head" of width ``d_c + d_rope`` whose value is ``c``
  (MQA-like, what FlashMLA computes) and never materialises per-head keys or values. The softmax
  scale is still ``1/sqrt(d_nope + d_rope)``: the head width seen by the kernel (``d_c + d_rope``)
  is not the one the model was trained with.

**KV-cache bytes per token** (per layer, ``b`` bytes per element): MHA ``H (d_qk + d_v) b``, GQA
``G (d_qk + d_v) b`` with G KV heads, MQA ``(d_qk + d_v) b``, MLA ``(d_c + d_rope) b``, where
``d_qk = d_nope + d_rope``. DeepSeek-V3 (H = 128, d_nope = 128, d_rope = 64, d_v = 128,
d_c = 512, 61 layers, bf16): MLA 576 · 61 · 2 = 70,272 bytes per token; MHA with the same heads
128 · 320 · 61 · 2 = 4,997,120 (71x); GQA with 8 KV heads 312,320 (4.4x MLA). The DeepSeek-V2
paper's comparison (``d_c = 4 d_h``, ``d_rope = d_h / 2``): MLA caches as much as GQA with 2.25
groups, while scoring like MHA.

Conventions (one set, used by the tests):

- ``weights`` is a dict of tensors named and laid out as transformers' ``DeepseekV3Attention``
  (``nn.Linear`` layout ``(out, in)``) with ``q_lora_rank=None`` (no query compression):
  ``q_proj`` ``(H*(d_nope+d_rope), D)``: per head h the rows ``[h*(d_nope+d_rope), ...)``, nope part
  first, then the RoPE part; ``kv_a_proj_with_mqa`` ``(d_c + d_rope, D)``: ``W_DKV`` (first d_c rows)
  and ``W_KR`` (last d_rope rows) stacked; ``kv_a_layernorm`` ``(d_c,)``: the RMSNorm weight on c_kv;
  ``kv_b_proj`` ``(H*(d_nope+d_v), d_c)``: per head h the rows ``[h*(d_nope+d_v), ...)``, its
  ``W_UK_h`` (d_nope rows) then its ``W_UV_h`` (d_v rows); ``o_proj`` ``(D, H*d_v)``.
- ``config`` is a dict: ``num_heads``, ``qk_nope_head_dim``, ``qk_rope_head_dim`` (even),
  ``v_head_dim``, ``kv_lora_rank``, ``rope_theta``, ``rms_norm_eps``.
- RoPE is **interleaved** (DeepSeek's, GPT-J's): pairs ``(2i, 2i+1)`` rotate by
  ``pos * theta^(-2i / d_rope)``: ``y[2i] = x[2i] cos - x[2i+1] sin``, ``y[2i+1] = x[2i+1] cos + x[2i] sin``,
  results kept in place. transformers' ``rope_interleave=True`` rotates the same pairs but writes
  the results de-interleaved (all evens, then all odds): a fixed permutation of q's and k's RoPE
  dims, so its scores equal ours; its cached RoPE key is ours permuted. Not rotate-half (LLaMA's).
- RMSNorm in float32: ``c * rsqrt(mean(c²) + eps) * weight``. All arithmetic in float32; outputs
  in the dtype of ``x``.
- The cache holds tokens at positions ``0 .. T-1``; the ``S`` queries are the **last** S of them
  (positions ``T-S .. T-1``): the causal mask is aligned bottom-right; S = T is a prefill, S = 1 a
  decode step. ``S > T`` raises ``ValueError``.
- DeepSeek-V3's real config adds YaRN (which also scales the softmax by ``mscale²``) and query
  compression (``q_a_proj``, ``q_a_layernorm``, ``q_b_proj``): both are left out here.

中文说明：
MLA 把每个 token 的 KV 压缩成一个低秩潜向量 c_kv = RMSNorm(x·W_DKV)（维度 d_c），注意力时再按头
上投影出 k_nope 与 v。RoPE 与上投影不可交换，所以位置信息走一条"解耦"的支路：k_pe = RoPE(x·W_KR)，
所有头共享、与 c_kv 一起缓存；每个头的 query 也分成 nope 与 rope 两段。打分 =
(q_nope·k_nope + q_pe·k_pe)/sqrt(d_nope + d_rope)。吸收形式：把 W_UK 合进 query 投影、把 W_UV 合进
输出投影，直接在缓存的潜向量上做注意力（相当于一个宽 d_c + d_rope 的共享 KV 头），不再展开每个头的
K/V；缩放因子仍是 1/sqrt(d_nope + d_rope)。RoPE 用交错配对 (2i, 2i+1)。KV 缓存每 token 每层只存
d_c + d_rope 个数，DeepSeek-V3 约为同头数 MHA 的 1/71。
"""
from __future__ import annotations

import torch


def latent_kv(x: torch.Tensor, weights: dict, config: dict, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """What MLA caches for tokens ``x``: the normalised latent and the shared RoPE key.

    Args:
        x: ``(B, S, D)`` hidden states of tokens at positions ``start .. start+S-1``.
        weights: the dict described in the module docstring (uses ``kv_a_proj_with_mqa`` and
            ``kv_a_layernorm``).
        config: the dict described in the module docstring.
        start: the position of the first token (a decode step appends at ``start = T``).

    Returns:
        ``(c_kv, k_pe)``: ``c_kv`` ``(B, S, d_c)`` = RMSNorm of the first d_c outputs of
        ``kv_a_proj_with_mqa``; ``k_pe`` ``(B, S, d_rope)`` = interleaved RoPE of the last d_rope
        outputs at their positions. Both in ``x.dtype``.

    中文：返回要缓存的 (c_kv, k_pe)：潜向量做 RMSNorm；RoPE 键按 token 的位置（从 start 起）做交错 RoPE。
    """
    raise NotImplementedError("latent_kv")


def mla_attention(x: torch.Tensor, weights: dict, config: dict, c_kv: torch.Tensor,
                  k_pe: torch.Tensor) -> torch.Tensor:
    """MLA, naive form: up-project the cached latent into every head's key and value.

    Args:
        x: ``(B, S, D)`` hidden states of the queries: the last S of the T cached tokens.
        weights: the dict of the module docstring (``q_proj``, ``kv_b_proj``, ``o_proj``).
        config: the dict of the module docstring.
        c_kv: ``(B, T, d_c)``, k_pe: ``(B, T, d_rope)``: the cache (``latent_kv`` of all T tokens).

    Returns:
        ``(B, S, D)`` in ``x.dtype``: ``concat_h(softmax(scores_h) v_h) W_Oᵀ``, scores
        ``(q_nope_h · k_nope_h + q_pe_h · k_pe) / sqrt(d_nope + d_rope)`` under the bottom-right
        causal mask, ``q_pe`` rotated at the queries' positions ``T-S .. T-1``.

    Raises:
        ValueError: if S > T.

    中文：朴素形式：用 kv_b_proj 把潜向量上投影成每个头的 k_nope 和 v，再做因果注意力（右下对齐）。
    """
    raise NotImplementedError("mla_attention")


def absorb_weights(weights: dict, config: dict) -> dict:
    """Fold ``W_UK`` into the query projection and ``W_UV`` into the output projection.

    Args:
        weights: the dict of the module docstring; config: the dict of the module docstring.

    Returns:
        A dict, in the dtype of ``weights["q_proj"]`` (compute the products in float64):

        - ``q_latent_proj`` ``(H*d_c, D)``: rows of head h are ``W_UK_hᵀ W_Q_nope_h`` (``(d_c, D)``),
          so ``x q_latent_projᵀ`` gives each head's query in the latent space;
        - ``q_rope_proj`` ``(H*d_rope, D)``: the RoPE rows of ``q_proj``, head by head;
        - ``o_latent_proj`` ``(D, H*d_c)``: columns of head h are ``W_O_h W_UV_h`` (``(D, d_c)``), where
          ``W_O_h`` is ``o_proj[:, h*d_v:(h+1)*d_v]``.

    中文：吸收：q_latent_proj 的第 h 块 = W_UK_hᵀ·W_Q_nope_h，o_latent_proj 的第 h 块 = W_O_h·W_UV_h。
    """
    raise NotImplementedError("absorb_weights")


def mla_attention_absorbed(x: torch.Tensor, absorbed: dict, config: dict, c_kv: torch.Tensor,
                           k_pe: torch.Tensor) -> torch.Tensor:
    """MLA, absorbed form: attend over the cached latent directly (what a decode kernel does).

    Args:
        x: ``(B, S, D)``, the last S of the T cached tokens (S = 1 when decoding).
        absorbed: the dict returned by :func:`absorb_weights` (no per-head K/V weights here).
        config: the dict of the module docstring.
        c_kv: ``(B, T, d_c)``, k_pe: ``(B, T, d_rope)``: the cache.

    Returns:
        ``(B, S, D)`` in ``x.dtype``, equal to :func:`mla_attention`: scores
        ``(q_latent_h · c_kv + q_pe_h · k_pe) / sqrt(d_nope + d_rope)`` (the scale of the
        uncompressed heads), bottom-right causal softmax, latent output ``P_h c_kv`` per head
        ``(d_c)``, concatenated over heads and multiplied by ``o_latent_projᵀ``.

    Raises:
        ValueError: if S > T.

    中文：吸收形式：直接在潜向量上打分与加权（共享一个宽 d_c + d_rope 的 KV 头），结果与朴素形式相同；
    缩放仍用 1/sqrt(d_nope + d_rope)，不是 1/sqrt(d_c + d_rope)。
    """
    raise NotImplementedError("mla_attention_absorbed")


def kv_cache_bytes_per_token(config: dict, num_layers: int, attention: str = "mla", num_kv_heads: int | None = None,
                             bytes_per_element: int = 2) -> int:
    """KV-cache bytes one token costs across ``num_layers`` layers.

    Args:
        config: the dict of the module docstring (its heads and dims).
        num_layers: L.
        attention: ``"mla"``: ``(d_c + d_rope)`` elements per layer; ``"mha"``: every one of the H
            heads caches a key ``(d_nope + d_rope)`` and a value ``(d_v)``; ``"gqa"``: the same for
            ``num_kv_heads`` KV heads; ``"mqa"``: one KV head.
        num_kv_heads: for ``"gqa"``: G ≥ 1 dividing H.
        bytes_per_element: 2 for bf16/fp16, 1 for fp8.

    Returns:
        ``elements per layer * num_layers * bytes_per_element`` (an int).

    Raises:
        ValueError: unknown ``attention``, or ``"gqa"`` without a G that divides H.

    中文：每 token 的 KV 缓存字节数：MLA 每层 d_c + d_rope 个元素；MHA/GQA/MQA 每个 KV 头存
    (d_nope + d_rope) + d_v 个元素。
    """
    raise NotImplementedError("kv_cache_bytes_per_token")
