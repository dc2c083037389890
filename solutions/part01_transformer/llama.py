"""A LLaMA forward by hand (textbook 01, 手撕一遍 ~110 行 LLaMA forward: RoPE + GQA + SwiGLU), with the
Qwen2 / Qwen3 attention variants (q/k/v biases; per-head q/k RMSNorm) read off the state dict.

Reference solution. See exercises/part01_transformer/llama.py for the specification.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

Weights = dict[str, torch.Tensor]


def llama_forward(weights: Weights, config: dict[str, Any], input_ids: torch.Tensor,
                  cache: dict[str, torch.Tensor] | None = None,
                  start_pos: int = 0) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Logits of every input position, and the cache extended by this chunk's keys and values."""
    b, s = input_ids.shape
    past = 0 if cache is None else cache["k"].shape[3]
    if start_pos != past:
        raise ValueError(f"start_pos={start_pos} but the cache holds {past} positions")
    d_head = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    positions = torch.arange(start_pos, start_pos + s, device=input_ids.device)
    cos, sin = _rope_cos_sin(positions, d_head, config["rope_theta"])  # (S, Dh)
    mask = _causal_mask(s, start_pos + s, input_ids.device)  # (S, T) bool, True = may attend

    x = weights["model.embed_tokens.weight"][input_ids]  # (B, S, D)
    keys, values = [], []
    for i in range(config["num_hidden_layers"]):
        layer = {name[len(f"model.layers.{i}."):]: t for name, t in weights.items()
                 if name.startswith(f"model.layers.{i}.")}
        past_kv = None if cache is None else (cache["k"][i], cache["v"][i])
        x, k, v = _decoder_layer(layer, config, x, cos, sin, mask, past_kv, d_head)
        keys.append(k)
        values.append(v)
    return _logits(weights, config, x), {"k": torch.stack(keys), "v": torch.stack(values)}


def generate_greedy(weights: Weights, config: dict[str, Any], input_ids: torch.Tensor,
                    max_new_tokens: int) -> torch.Tensor:
    """Prefill once, then one cached decode step per new token; arg-max every time."""
    tokens = [input_ids]
    logits, cache = llama_forward(weights, config, input_ids)
    for step in range(max_new_tokens):
        next_token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
        tokens.append(next_token)
        if step + 1 < max_new_tokens:
            logits, cache = llama_forward(weights, config, next_token, cache, cache["k"].shape[3])
    return torch.cat(tokens, dim=1)


def _decoder_layer(w: Weights, config: dict[str, Any], x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                   mask: torch.Tensor, past_kv: tuple[torch.Tensor, torch.Tensor] | None, d_head: int):
    """Pre-norm block: x + Attention(RMSNorm(x)), then + SwiGLU(RMSNorm(x)). Returns (x, K, V)."""
    b, s, _ = x.shape
    n_q, n_kv, eps = config["num_attention_heads"], config["num_key_value_heads"], config["rms_norm_eps"]
    h = _rms_norm(x, w["input_layernorm.weight"], eps)
    q = _heads(w, "q", h, n_q, d_head, eps)  # (B, Hq, S, Dh)
    k = _heads(w, "k", h, n_kv, d_head, eps)  # (B, Hkv, S, Dh)
    v = _heads(w, "v", h, n_kv, d_head, eps)
    q, k = _apply_rope(q, cos, sin), _apply_rope(k, cos, sin)
    if past_kv is not None:
        k = torch.cat([past_kv[0], k], dim=2)  # (B, Hkv, T, Dh)
        v = torch.cat([past_kv[1], v], dim=2)
    o = _attention(q, _repeat_kv(k, n_q // n_kv), _repeat_kv(v, n_q // n_kv), mask)  # (B, Hq, S, Dh)
    x = x + _linear(o.transpose(1, 2).reshape(b, s, n_q * d_head), w, "self_attn.o_proj")
    h = _rms_norm(x, w["post_attention_layernorm.weight"], eps)
    gate, up = _linear(h, w, "mlp.gate_proj"), _linear(h, w, "mlp.up_proj")
    x = x + _linear(F.silu(gate) * up, w, "mlp.down_proj")  # SwiGLU
    return x, k, v


def _linear(x: torch.Tensor, w: Weights, name: str) -> torch.Tensor:
    """x @ W.T, plus the bias where the state dict holds one (Qwen2's q/k/v; attention_bias, mlp_bias)."""
    y = x @ w[f"{name}.weight"].T
    bias = w.get(f"{name}.bias")
    return y if bias is None else y + bias


def _heads(w: Weights, name: str, h: torch.Tensor, n_heads: int, d_head: int, eps: float) -> torch.Tensor:
    """Project ("q", "k" or "v"), split into heads, then Qwen3's RMSNorm over each head's Dh features
    where the state dict holds self_attn.{name}_norm.weight (before RoPE). (B, S, D) -> (B, H, S, Dh)."""
    b, s, _ = h.shape
    x = _linear(h, w, f"self_attn.{name}_proj").view(b, s, n_heads, d_head)
    norm = w.get(f"self_attn.{name}_norm.weight")
    if norm is not None:
        x = _rms_norm(x, norm, eps)
    return x.transpose(1, 2)


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)  # eps inside the root
    return weight * h.to(x.dtype)


def _rope_cos_sin(positions: torch.Tensor, d_head: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of shape (S, Dh) for rotate-half RoPE: angle m * theta^(-2i/Dh), halves repeated;
    inv_freq in fp32 as transformers computes it (the course's one convention, as in rope.py)."""
    inv_freq = 1.0 / theta ** (torch.arange(0, d_head, 2, device=positions.device).float() / d_head)
    angles = positions.float()[:, None] * inv_freq[None, :]  # (S, Dh/2)
    emb = torch.cat([angles, angles], dim=-1)
    return emb.cos(), emb.sin()


def _apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (i, i + Dh/2) of x (B, H, S, Dh) by their position's angle."""
    x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x * cos + rotated * sin).to(x.dtype)


def _causal_mask(s: int, t: int, device: torch.device) -> torch.Tensor:
    """(S, T) bool aligned bottom-right: query i sits at absolute position t - s + i."""
    return torch.ones(s, t, dtype=torch.bool, device=device).tril(diagonal=t - s)


def _repeat_kv(kv: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, Hkv, T, Dh) -> (B, Hkv * n_rep, T, Dh): query head h uses KV head h // n_rep."""
    return kv.repeat_interleave(n_rep, dim=1)


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5  # (B, H, S, T)
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v


def _logits(weights: Weights, config: dict[str, Any], x: torch.Tensor) -> torch.Tensor:
    """Final RMSNorm, then the LM head (the embedding matrix when the embeddings are tied)."""
    x = _rms_norm(x, weights["model.norm.weight"], config["rms_norm_eps"])
    tied = config.get("tie_word_embeddings", False)
    head = weights["model.embed_tokens.weight"] if tied else weights["lm_head.weight"]
    return (x @ head.T).float()  # (B, S, V)
