"""DeepSeek multi-head latent attention (MLA): low-rank KV, decoupled RoPE key, absorbed decode.

Reference solution. See exercises/part01_transformer/mla.py for the specification.
中文：参考实现（潜在 KV 压缩、解耦 RoPE 键、朴素形式与吸收形式、KV 缓存字节数）。
"""
from __future__ import annotations

import torch

KINDS = ("mla", "mha", "gqa", "mqa")


def _dims(config: dict) -> tuple[int, int, int, int, int]:
    """(H, d_nope, d_rope, d_v, d_c)."""
    return (config["num_heads"], config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"],
            config["kv_lora_rank"])


def _softmax_scale(config: dict) -> float:
    """1 / sqrt(d_nope + d_rope): the head dimension of the *uncompressed* query-key product."""
    return (config["qk_nope_head_dim"] + config["qk_rope_head_dim"]) ** -0.5


def _rope(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Interleaved RoPE on the last dim of x (..., S, [H,] d_r): pairs (2i, 2i+1) turn by pos * theta^(-2i/d_r).
    ``positions`` is (S,); x is (B, S, d_r) or (B, S, H, d_r)."""
    d = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    angle = positions.to(torch.float64)[:, None] * inv_freq                # (S, d/2)
    if x.dim() == 4:
        angle = angle[:, None, :]                                          # (S, 1, d/2): every head
    cos, sin = angle.cos().float(), angle.sin().float()
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1).flatten(-2)


def _up_projections(weights: dict, config: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """W_UK (H, d_nope, d_c) and W_UV (H, d_v, d_c): kv_b_proj's rows are, head by head, [W_UK_h; W_UV_h]."""
    H, dn, dr, dv, dc = _dims(config)
    per_head = weights["kv_b_proj"].view(H, dn + dv, dc)
    return per_head[:, :dn], per_head[:, dn:]


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()


def _causal_softmax(scores: torch.Tensor, scale: float) -> torch.Tensor:
    """scores (B, H, S, T) -> probabilities; query i sits at position T - S + i (bottom-right)."""
    s, t = scores.shape[-2:]
    visible = torch.ones(s, t, dtype=torch.bool, device=scores.device).tril(t - s)
    return torch.softmax((scores * scale).masked_fill(~visible, float("-inf")), dim=-1)


def _query_positions(x: torch.Tensor, c_kv: torch.Tensor) -> torch.Tensor:
    s, t = x.shape[1], c_kv.shape[1]
    if s > t:
        raise ValueError(f"{s} queries but only {t} cached tokens: the cache must already hold the queries' tokens")
    return torch.arange(t - s, t, device=x.device)


def latent_kv(x: torch.Tensor, weights: dict, config: dict, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    H, dn, dr, dv, dc = _dims(config)
    down = x.float() @ weights["kv_a_proj_with_mqa"].float().T             # (B, S, d_c + d_r)
    c_kv = _rms_norm(down[..., :dc], weights["kv_a_layernorm"], config["rms_norm_eps"])
    positions = torch.arange(start, start + x.shape[1], device=x.device)
    k_pe = _rope(down[..., dc:], positions, config["rope_theta"])          # one RoPE key shared by all heads
    return c_kv.to(x.dtype), k_pe.to(x.dtype)


def mla_attention(x: torch.Tensor, weights: dict, config: dict, c_kv: torch.Tensor,
                  k_pe: torch.Tensor) -> torch.Tensor:
    H, dn, dr, dv, dc = _dims(config)
    B, S, _ = x.shape
    positions = _query_positions(x, c_kv)
    q = (x.float() @ weights["q_proj"].float().T).view(B, S, H, dn + dr)
    q_nope, q_pe = q[..., :dn], _rope(q[..., dn:], positions, config["rope_theta"])
    w_uk, w_uv = _up_projections(weights, config)
    k_nope = torch.einsum("btc,hnc->bthn", c_kv.float(), w_uk.float())   # every head's key and value
    v = torch.einsum("btc,hvc->bthv", c_kv.float(), w_uv.float())
    scores = (torch.einsum("bshd,bthd->bhst", q_nope, k_nope)
              + torch.einsum("bshd,btd->bhst", q_pe, k_pe.float()))
    probs = _causal_softmax(scores, _softmax_scale(config))
    o = torch.einsum("bhst,bthd->bshd", probs, v).reshape(B, S, H * dv)
    return (o @ weights["o_proj"].float().T).to(x.dtype)


def absorb_weights(weights: dict, config: dict) -> dict:
    H, dn, dr, dv, dc = _dims(config)
    D = weights["q_proj"].shape[1]
    wq = weights["q_proj"].double().view(H, dn + dr, D)
    w_uk, w_uv = (w.double() for w in _up_projections(weights, config))  # (H, d_n, d_c), (H, d_v, d_c)
    w_o = weights["o_proj"].double().view(D, H, dv)
    dtype = weights["q_proj"].dtype
    return {
        "q_latent_proj": torch.einsum("hnc,hnD->hcD", w_uk, wq[:, :dn]).reshape(H * dc, D).to(dtype),
        "q_rope_proj": wq[:, dn:].reshape(H * dr, D).to(dtype),
        "o_latent_proj": torch.einsum("Dhv,hvc->Dhc", w_o, w_uv).reshape(D, H * dc).to(dtype),
    }


def mla_attention_absorbed(x: torch.Tensor, absorbed: dict, config: dict, c_kv: torch.Tensor,
                           k_pe: torch.Tensor) -> torch.Tensor:
    H, dn, dr, dv, dc = _dims(config)
    B, S, _ = x.shape
    positions = _query_positions(x, c_kv)
    q_latent = (x.float() @ absorbed["q_latent_proj"].float().T).view(B, S, H, dc)
    q_pe = _rope((x.float() @ absorbed["q_rope_proj"].float().T).view(B, S, H, dr), positions, config["rope_theta"])
    c, kr = c_kv.float(), k_pe.float()
    scores = torch.einsum("bshc,btc->bhst", q_latent, c) + torch.einsum("bshd,btd->bhst", q_pe, kr)
    probs = _causal_softmax(scores, _softmax_scale(config))               # one latent "KV head" shared by all
    o_latent = torch.einsum("bhst,btc->bshc", probs, c).reshape(B, S, H * dc)
    return (o_latent @ absorbed["o_latent_proj"].float().T).to(x.dtype)


def kv_cache_bytes_per_token(config: dict, num_layers: int, attention: str = "mla", num_kv_heads: int | None = None,
                             bytes_per_element: int = 2) -> int:
    H, dn, dr, dv, dc = _dims(config)
    if attention not in KINDS:
        raise ValueError(f"attention must be one of {KINDS}, got {attention!r}")
    if attention == "mla":
        per_layer = dc + dr                                                # the latent and the shared RoPE key
    else:
        heads = {"mha": H, "mqa": 1}.get(attention, num_kv_heads)
        if heads is None or heads < 1 or H % heads:
            raise ValueError(f"gqa needs num_kv_heads dividing num_heads={H}, got {num_kv_heads}")
        per_layer = heads * ((dn + dr) + dv)                               # K and V of every KV head
    return per_layer * num_layers * bytes_per_element
