"""References and known mistakes of part01_transformer.mla.

The reference works head by head in float64 and rotates RoPE pairs as complex numbers
(DeepSeek's own ``view_as_complex`` spelling), so it shares no code path with the solution. Each
known mistake is a switch of the reference.
"""
import math

import torch

from infralab.testing import randn

ROTATE_HALF = ("RoPE pairs (i, i + d/2) rotated (LLaMA's rotate-half) instead of DeepSeek's interleaved pairs (2i, 2i+1)",
               "RoPE 用了 LLaMA 的 rotate-half 配对 (i, i + d/2)，而不是 DeepSeek 的交错配对 (2i, 2i+1)")
NO_NORM = ("the latent c_kv was cached without its RMSNorm (kv_a_layernorm)",
           "潜向量 c_kv 缓存前没有做 RMSNorm（kv_a_layernorm）")
LATENT_SCALE = ("the absorbed scores were scaled by 1/sqrt(d_c + d_rope), the width the kernel sees, "
                "instead of the model's 1/sqrt(d_nope + d_rope)",
                "吸收形式的打分用了 1/sqrt(d_c + d_rope)（核函数看到的宽度），而不是模型的 1/sqrt(d_nope + d_rope)")
NOPE_SCALE = ("scores scaled by 1/sqrt(d_nope), leaving out the RoPE dims of the head",
              "打分缩放用了 1/sqrt(d_nope)，漏掉了头里的 RoPE 维度")
BLOCKED_SPLIT = ("kv_b_proj split as [all heads' W_UK; all heads' W_UV] instead of per head [W_UK_h; W_UV_h]",
                 "kv_b_proj 被拆成 [所有头的 W_UK; 所有头的 W_UV]，而不是按头 [W_UK_h; W_UV_h] 交替")
TOP_LEFT = ("causal mask aligned top-left: the queries are the last S of the T cached tokens (bottom-right)",
            "因果掩码左上对齐了：query 是缓存中最后 S 个 token，应右下对齐")
EPS_OUTSIDE = ("RMSNorm's eps added outside the square root: c / (sqrt(mean(c²)) + eps)",
               "RMSNorm 的 eps 加在了平方根外面：c / (sqrt(mean(c²)) + eps)")
POSITIONS_FROM_ZERO = ("RoPE positions started at 0 for every call instead of at the tokens' own positions",
                       "每次调用都从位置 0 开始做 RoPE，而不是用 token 自己的位置")


def tiny_config(heads=2, d_nope=8, d_rope=4, d_v=6, d_c=10, eps=1e-6):
    return {"num_heads": heads, "qk_nope_head_dim": d_nope, "qk_rope_head_dim": d_rope, "v_head_dim": d_v,
            "kv_lora_rank": d_c, "rope_theta": 10000.0, "rms_norm_eps": eps}


def random_weights(config, hidden, seed, dtype=torch.float32):
    """Weights in transformers' layout, scaled like an initialised layer (outputs of order one), from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    h, dn, dr, dv, dc = (config[k] for k in ("num_heads", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                                             "kv_lora_rank"))
    shapes = {"q_proj": (h * (dn + dr), hidden), "kv_a_proj_with_mqa": (dc + dr, hidden),
              "kv_b_proj": (h * (dn + dv), dc), "o_proj": (hidden, h * dv)}
    w = {k: randn(*s, generator=gen, scale=s[1] ** -0.5, dtype=dtype) for k, s in shapes.items()}
    w["kv_a_layernorm"] = (1.0 + 0.2 * randn(dc, generator=gen)).to(dtype)
    return w


def _dims(cfg):
    return (cfg["num_heads"], cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"],
            cfg["kv_lora_rank"])


def rotate(x, positions, theta, rope="interleaved"):
    """RoPE of x (..., d) at ``positions`` (one per row of the second-to-last batch of x's first dims)."""
    d = x.shape[-1]
    out = torch.empty_like(x)
    for i in range(d // 2):
        freq = theta ** (-2.0 * i / d)
        a, b = (2 * i, 2 * i + 1) if rope == "interleaved" else (i, i + d // 2)
        z = torch.complex(x[..., a], x[..., b]) * torch.polar(torch.ones_like(positions), positions * freq)
        out[..., a], out[..., b] = z.real, z.imag
    return out


def reference_latent(x, w, cfg, start=0, *, rope="interleaved", norm=True, from_zero=False, eps_outside=False):
    h, dn, dr, dv, dc = _dims(cfg)
    down = x.double() @ w["kv_a_proj_with_mqa"].double().T
    c, eps = down[..., :dc], cfg["rms_norm_eps"]
    if norm:
        mean_square = c.pow(2).mean(-1, keepdim=True)
        rms = torch.sqrt(mean_square) + eps if eps_outside else torch.sqrt(mean_square + eps)
        c = c / rms * w["kv_a_layernorm"].double()
    first = 0 if from_zero else start
    pos = torch.arange(first, first + x.shape[1], dtype=torch.float64)[:, None]  # (S, 1): rows of (B, S, d)
    k_pe = rotate(down[..., dc:], pos[:, 0], cfg["rope_theta"], rope)
    return c.to(x.dtype), k_pe.to(x.dtype)


def _kv_b_per_head(w, cfg, split="per_head"):
    """(W_UK (H, d_nope, d_c), W_UV (H, d_v, d_c)) in float64."""
    h, dn, dr, dv, dc = _dims(cfg)
    full = w["kv_b_proj"].double()
    if split == "per_head":
        blocks = full.view(h, dn + dv, dc)
        return blocks[:, :dn], blocks[:, dn:]
    return full[:h * dn].view(h, dn, dc), full[h * dn:].view(h, dv, dc)


def reference_mla(x, w, cfg, c_kv, k_pe, *, rope="interleaved", scale=None, split="per_head", top_left=False):
    """float64, one head at a time: the naive form from its definition."""
    h, dn, dr, dv, dc = _dims(cfg)
    (b, s, hidden), t = x.shape, c_kv.shape[1]
    scale = (dn + dr) ** -0.5 if scale is None else scale
    positions = torch.arange(t - s, t, dtype=torch.float64)
    shift = 0 if top_left else t - s
    visible = torch.tensor([[j <= i + shift for j in range(t)] for i in range(s)])
    w_uk, w_uv = _kv_b_per_head(w, cfg, split)
    wq = w["q_proj"].double().view(h, dn + dr, hidden)
    wo = w["o_proj"].double().view(hidden, h, dv)
    c, kr = c_kv.double(), k_pe.double()
    out = torch.zeros(b, s, hidden, dtype=torch.float64)
    for head in range(h):
        q = x.double() @ wq[head].T                                           # (B, S, d_nope + d_rope)
        q_pe = rotate(q[..., dn:], positions, cfg["rope_theta"], rope)
        k_nope, v = c @ w_uk[head].T, c @ w_uv[head].T                       # (B, T, d_nope), (B, T, d_v)
        scores = (q[..., :dn] @ k_nope.transpose(1, 2) + q_pe @ kr.transpose(1, 2)) * scale
        probs = torch.softmax(scores.masked_fill(~visible, -math.inf), dim=-1)
        out += (probs @ v) @ wo[:, head].T
    return out.to(x.dtype)


def reference_absorbed_weights(w, cfg, split="per_head"):
    h, dn, dr, dv, dc = _dims(cfg)
    hidden = w["q_proj"].shape[1]
    w_uk, w_uv = _kv_b_per_head(w, cfg, split)
    wq = w["q_proj"].double().view(h, dn + dr, hidden)
    wo = w["o_proj"].double().view(hidden, h, dv)
    dtype = w["q_proj"].dtype
    return {"q_latent_proj": torch.cat([w_uk[i].T @ wq[i, :dn] for i in range(h)]).to(dtype),
            "q_rope_proj": torch.cat([wq[i, dn:] for i in range(h)]).to(dtype),
            "o_latent_proj": torch.cat([wo[:, i] @ w_uv[i] for i in range(h)], dim=1).to(dtype)}


def latent_mistakes(x, w, cfg, start=0):
    out = {ROTATE_HALF: lambda: reference_latent(x, w, cfg, start, rope="half")[1],
           NO_NORM: lambda: reference_latent(x, w, cfg, start, norm=False)[0],
           EPS_OUTSIDE: lambda: reference_latent(x, w, cfg, start, eps_outside=True)[0]}
    if start:
        out[POSITIONS_FROM_ZERO] = lambda: reference_latent(x, w, cfg, start, from_zero=True)[1]
    return out


def mla_mistakes(x, w, cfg, c_kv, k_pe, *, absorbed=False):
    """Known mistakes of the attention output, given the (correct) cache."""
    h, dn, dr, dv, dc = _dims(cfg)
    out = {ROTATE_HALF: lambda: reference_mla(x, w, cfg, c_kv, k_pe, rope="half"),
           NOPE_SCALE: lambda: reference_mla(x, w, cfg, c_kv, k_pe, scale=dn ** -0.5),
           BLOCKED_SPLIT: lambda: reference_mla(x, w, cfg, c_kv, k_pe, split="blocked")}
    if x.shape[1] < c_kv.shape[1]:
        out[TOP_LEFT] = lambda: reference_mla(x, w, cfg, c_kv, k_pe, top_left=True)
    if absorbed:
        out[LATENT_SCALE] = lambda: reference_mla(x, w, cfg, c_kv, k_pe, scale=(dc + dr) ** -0.5)
    return out


def absorb_mistakes(w, cfg):
    return {BLOCKED_SPLIT: lambda: reference_absorbed_weights(w, cfg, split="blocked")}
