"""A LLaMA forward by hand, with a KV cache (textbook 01, 手撕一遍 ~110 行 LLaMA forward: RoPE + GQA + SwiGLU;
the Qwen2 / Qwen3 variants: 12 §12.1 六旋钮与 config 速读, §12.3 Qwen 2 / 2.5 / 3).

Everything is plain data: the weights are a ``dict[str, Tensor]`` under the names of a Hugging
Face ``LlamaForCausalLM`` (or ``Qwen2ForCausalLM`` / ``Qwen3ForCausalLM``, below) state dict, the
config a ``dict``, the KV cache a dict of two tensors.
No ``nn.Module``: write the computation with tensor operations (about 110 lines).

Weights (``L`` layers, ``i`` in ``0 .. L-1``; D = hidden_size, F = intermediate_size,
Dh = head_dim, Hq / Hkv = query / key-value heads, V = vocab_size; ``y = x @ W.T``)::

    model.embed_tokens.weight                      (V, D)
    model.layers.{i}.input_layernorm.weight        (D,)
    model.layers.{i}.self_attn.q_proj.weight       (Hq * Dh, D)
    model.layers.{i}.self_attn.k_proj.weight       (Hkv * Dh, D)
    model.layers.{i}.self_attn.v_proj.weight       (Hkv * Dh, D)
    model.layers.{i}.self_attn.o_proj.weight       (D, Hq * Dh)
    model.layers.{i}.post_attention_layernorm.weight (D,)
    model.layers.{i}.mlp.gate_proj.weight          (F, D)
    model.layers.{i}.mlp.up_proj.weight            (F, D)
    model.layers.{i}.mlp.down_proj.weight          (D, F)
    model.norm.weight                              (D,)
    lm_head.weight                                 (V, D)   absent when tie_word_embeddings

Config keys: ``vocab_size, hidden_size, intermediate_size, num_hidden_layers,
num_attention_heads, num_key_value_heads, rms_norm_eps, rope_theta, tie_word_embeddings`` and
optionally ``head_dim`` (missing or None: ``hidden_size // num_attention_heads``; Qwen3 sets it,
often with ``Hq * Dh != D``). Other keys (``model_type``, ``attention_bias``, ``mlp_bias``) may be
present; they are not needed: the state dict itself says which Qwen-style variant it is (below).

The model (HF ``LlamaForCausalLM``, eager attention, no RoPE scaling; biases and q/k norms below)::

    x = embed_tokens[input_ids]
    per layer:  x = x + o_proj(Attention(RoPE(q_proj(h)), RoPE(k_proj(h)), v_proj(h)))   h = RMSNorm(x)
                x = x + down_proj(silu(gate_proj(h)) * up_proj(h))                          h = RMSNorm(x)
    logits = lm_head(RMSNorm(x))            # the final norm, model.norm.weight

- RMSNorm: ``weight * cast(x_fp32 / sqrt(mean(x_fp32²) + eps))``, eps inside the root.
- RoPE, rotate-half (HF) convention: the pairs are ``(j, j + Dh/2)``; position ``m`` rotates pair
  ``j`` by ``m * rope_theta ** (-2j / Dh)``, with the inverse frequencies in float32 as
  transformers computes them, ``1.0 / rope_theta ** (torch.arange(0, Dh, 2).float() / Dh)`` (the
  course's one convention, the same as rope.py's ``rope_inv_freq``); ``x * cos + rotate_half(x) * sin`` with
  ``rotate_half(x) = cat(-x[..., Dh/2:], x[..., :Dh/2])``. Positions are *absolute*: the tokens
  of this call sit at ``start_pos .. start_pos + S - 1``.
- Attention: ``softmax(q k^T / sqrt(Dh) + mask) v``; GQA: query head ``h`` uses KV head
  ``h // (Hq / Hkv)`` (``repeat_interleave``, not ``repeat``); the causal mask is aligned
  bottom-right: query ``i`` of this call may attend to cache positions ``0 .. start_pos + i``.
- KV cache: keys are stored *after* RoPE (as HF does), values as projected.

Qwen-style variants, read off the state dict (the rule: use every tensor the state dict holds)::

    model.layers.{i}.<any>_proj.bias             (out_features,)  where present, y = x @ W.T + b
    model.layers.{i}.self_attn.q_norm.weight     (Dh,)            where present (Qwen3), q and k are
    model.layers.{i}.self_attn.k_norm.weight     (Dh,)            RMSNorm-ed per head, before RoPE

- Biases, as transformers 5.17 lays them out: Qwen2 has ``q_proj``, ``k_proj``, ``v_proj`` biases
  always and no ``o_proj`` bias; ``LlamaConfig.attention_bias`` / ``Qwen3Config.attention_bias``
  give all four of q/k/v/o a bias; ``LlamaConfig.mlp_bias`` gives gate/up/down one. Add each bias
  to its projection's output before anything else (before the head split, the q/k norm and RoPE).
- Qwen3's q/k norm: ``q = RMSNorm(q_proj(h).view(B, S, Hq, Dh), q_norm.weight)`` (k likewise with
  ``k_norm.weight``), the same RMSNorm as above with eps ``rms_norm_eps``, over each head's ``Dh``
  features (not over the whole ``Hq * Dh`` projection, as OLMo-2 does), *then* RoPE. RoPE keeps a
  pair's length but the norm's weight differs between ``j`` and ``j + Dh/2``, so the order
  matters. v is not normalised. The cache holds k after the norm and RoPE.

中文说明：
输入全部是数据：权重是 HF LlamaForCausalLM 的 state dict（名字见上表），config 是 dict，
KV cache 是 {"k": (L, B, Hkv, T, Dh), "v": ...}。按 "Embedding → L × (RMSNorm → 注意力 → 残差 →
RMSNorm → SwiGLU → 残差) → 最终 RMSNorm → LM head" 手写前向。RoPE 用 HF 的 rotate-half 配对
(j, j+Dh/2)，位置是绝对位置 start_pos + i；GQA 中第 h 个 query 头用第 h // (Hq/Hkv) 个 KV 头；
带 cache 时因果掩码右下对齐（第 i 个 query 能看到 0..start_pos+i）。cache 里存的是 RoPE 之后的 K。
decode 一步的 logits 必须等于对整段序列做一次完整前向的最后一个位置；分块 prefill 等于一次性 prefill。
Qwen 变体看 state dict 里有什么（不看 config）：某个 *_proj.bias 存在就加上（Qwen2 只有 q/k/v 有 bias，
o_proj 没有；attention_bias=True 时 q/k/v/o 都有；mlp_bias 时 MLP 三个投影也有），bias 加在投影输出上，
在拆头、q/k norm 和 RoPE 之前。self_attn.q_norm.weight / k_norm.weight 存在（Qwen3）时，q、k 拆成
(B, S, H, Dh) 后对每个头的 Dh 维做 RMSNorm（eps 用 rms_norm_eps，不是对整个 Hq*Dh 投影），然后才做 RoPE；
v 不做 norm。RoPE 不改变每对分量的长度，但 norm 的权重在 j 与 j+Dh/2 上不同，所以先后顺序不能换。
"""
from __future__ import annotations

from typing import Any

import torch


def llama_forward(weights: dict[str, torch.Tensor], config: dict[str, Any], input_ids: torch.Tensor,
                  cache: dict[str, torch.Tensor] | None = None,
                  start_pos: int = 0) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Run the model on a chunk of tokens, continuing from a KV cache.

    Args:
        weights: the state dict described in the module docstring (fp32 in the tests), with the
            biases and q/k norm weights of a Qwen2 / Qwen3 model where it has them.
        config: the config dict described in the module docstring.
        input_ids: ``(B, S)`` int64 token ids, ``S >= 1``: a prompt (prefill), a chunk of one, or
            a single decode token.
        cache: ``None`` (nothing seen yet) or the cache a previous call returned:
            ``{"k": (L, B, Hkv, T, Dh), "v": (L, B, Hkv, T, Dh)}`` of the weights' dtype, holding
            the T positions seen so far (keys after RoPE). It is not modified.
        start_pos: the absolute position of ``input_ids[:, 0]``; must equal T (0 without a
            cache), else raise ``ValueError``.

    Returns:
        ``(logits, new_cache)``: ``logits`` ``(B, S, V)`` float32, the next-token logits of every
        input position; ``new_cache`` ``{"k": (L, B, Hkv, T + S, Dh), "v": ...}``, the old
        positions followed by this chunk's. Invariants: feeding a sequence in chunks (each call
        with the previous call's cache) gives the same logits as one call on the whole sequence.

    中文：对一段 token 做前向（可接在 cache 之后），返回每个位置的 logits（fp32）和加长后的新 cache；
    start_pos 必须等于 cache 的长度，否则抛 ValueError。
    """
    raise NotImplementedError("llama_forward")


def generate_greedy(weights: dict[str, torch.Tensor], config: dict[str, Any], input_ids: torch.Tensor,
                    max_new_tokens: int) -> torch.Tensor:
    """Greedy decoding with the KV cache.

    Args:
        weights, config: as in :func:`llama_forward`.
        input_ids: ``(B, S)`` int64 prompt (no padding: every row has S tokens).
        max_new_tokens: ``N >= 0`` tokens to add; no early stop at an end-of-sequence token.

    Returns:
        ``(B, S + N)`` int64: the prompt followed by the N tokens chosen one at a time as the
        ``argmax`` of the last position's logits. Prefill the prompt once, then decode one token
        per call of :func:`llama_forward` with the cache (do not re-run the whole sequence).
        The same tokens as HF ``model.generate(input_ids, max_new_tokens=N, do_sample=False)``.

    中文：先 prefill 一次，再每步只喂一个新 token（使用 KV cache），每步取最后位置 logits 的 argmax；
    返回 prompt 加上 N 个新 token。
    """
    raise NotImplementedError("generate_greedy")
