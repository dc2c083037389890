"""Memory budgets: parameters, gradients, optimizer states, activations and the KV cache
(textbook 02 §2.2.8; 05 §5.2; topic Part 02 · 75).

Reference solution. 中文：参考实现（参数量、ZeRO/TP/PP 下的模型状态、Korthikanti 激活公式、KV 缓存）。
"""
from __future__ import annotations

import torch

RECOMPUTE = ("none", "selective", "full")


def _head_dim(config: dict) -> int:
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def param_count(config: dict) -> int:
    V, h, i = config["vocab_size"], config["hidden_size"], config["intermediate_size"]
    a, a_kv, d = config["num_attention_heads"], config["num_key_value_heads"], _head_dim(config)
    attention = 2 * h * a * d + 2 * h * a_kv * d              # q, o; k, v
    mlp = 3 * h * i                                           # gate, up, down
    layer = attention + mlp + 2 * h                           # + two RMSNorm weights
    embeddings = V * h * (1 if config.get("tie_word_embeddings", False) else 2)
    return embeddings + config["num_hidden_layers"] * layer + h


def model_state_bytes(num_params: int, dp: int = 1, zero_stage: int = 0, tp: int = 1, pp: int = 1,
                      optimizer_bytes: int = 12) -> dict[str, float]:
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage}")
    if min(dp, tp, pp) < 1:
        raise ValueError(f"parallel degrees must be >= 1, got dp={dp}, tp={tp}, pp={pp}")
    P = num_params / (tp * pp)
    params = 2 * P / (dp if zero_stage >= 3 else 1)
    grads = 2 * P / (dp if zero_stage >= 2 else 1)
    optimizer = optimizer_bytes * P / (dp if zero_stage >= 1 else 1)
    return {"params": params, "grads": grads, "optimizer": optimizer, "total": params + grads + optimizer}


def activation_bytes(config: dict, seq_len: int, micro_batch: int, tp: int = 1, pp: int = 1,
                     sequence_parallel: bool = False, recompute: str = "none") -> float:
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
    s, b, h, a, t = seq_len, micro_batch, config["hidden_size"], config["num_attention_heads"], tp
    sbh = s * b * h
    if recompute == "full":
        per_layer = 2 * sbh / (t if sequence_parallel else 1)
    else:
        linear = 34 / t if sequence_parallel else 10 + 24 / t          # norms/dropout split only with SP
        scores = 5 * a * s / (h * t) if recompute == "none" else 0.0   # softmax, dropout of a*s*s
        per_layer = sbh * (linear + scores)
    return config["num_hidden_layers"] * per_layer                     # 1F1B: pp stages x L/pp layers


def kv_cache_bytes(config: dict, tokens: int, dtype: torch.dtype = torch.bfloat16, tp: int = 1) -> int:
    L, s = config["num_hidden_layers"], dtype.itemsize
    if "kv_lora_rank" in config:                                        # MLA: latent + RoPE key, replicated
        return L * (config["kv_lora_rank"] + config.get("qk_rope_head_dim", 0)) * tokens * s
    a_kv = config["num_key_value_heads"]
    if a_kv % tp and tp % a_kv:
        raise ValueError(f"{a_kv} KV heads cannot be split over tp={tp} ranks")
    heads_per_rank = max(a_kv // tp, 1)
    return 2 * L * heads_per_rank * _head_dim(config) * tokens * s
