"""Known mistakes of part01_transformer.llama, reproduced by a small float64 LLaMA with one switch per mistake.

``knob_forward`` with every switch off is an independent float64 reference written from the formulas
(the hidden tests compare with Hugging Face transformers; the visible tests, which must not need it,
with this).
"""
import torch

from infralab.testing import tolerance
from infralab.tiny_llama import head_dim


def knob_forward(w, c, ids, chunks=None, *, interleaved=False, offset=True, tiled_gqa=False,
                 final_norm=True, eps_inside=True, top_left=False):
    """Logits (B, S, V) of ``ids`` fed in ``chunks`` (sizes), with the chosen mistakes switched on."""
    w = {k: t.double() for k, t in w.items()}
    b, s_total = ids.shape
    hq, hkv, dh, eps = c["num_attention_heads"], c["num_key_value_heads"], head_dim(c), c["rms_norm_eps"]

    def norm(x, g):
        ms = x.pow(2).mean(-1, keepdim=True)
        return g * (x / (ms + eps).sqrt() if eps_inside else x / (ms.sqrt() + eps))

    def rope(x, pos):
        freq = c["rope_theta"] ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)
        ang = pos[:, None].double() * freq  # (S, Dh/2)
        cos, sin = ang.cos(), ang.sin()
        if interleaved:
            a, bb = x[..., 0::2], x[..., 1::2]
            return torch.stack([a * cos - bb * sin, a * sin + bb * cos], -1).flatten(-2)
        a, bb = x[..., : dh // 2], x[..., dh // 2:]
        return torch.cat([a * cos - bb * sin, bb * cos + a * sin], -1)

    caches = [None] * c["num_hidden_layers"]
    out, start = [], 0
    for size in chunks or [s_total]:
        pos = torch.arange(start, start + size) if offset else torch.arange(size)
        allowed = torch.ones(size, start + size, dtype=torch.bool).tril(0 if top_left else start)
        x = w["model.embed_tokens.weight"][ids[:, start:start + size]]
        for i in range(c["num_hidden_layers"]):
            p = f"model.layers.{i}."
            h = norm(x, w[p + "input_layernorm.weight"])
            q = rope((h @ w[p + "self_attn.q_proj.weight"].T).view(b, size, hq, dh).transpose(1, 2), pos)
            k = rope((h @ w[p + "self_attn.k_proj.weight"].T).view(b, size, hkv, dh).transpose(1, 2), pos)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).view(b, size, hkv, dh).transpose(1, 2)
            if caches[i] is not None:
                k, v = torch.cat([caches[i][0], k], 2), torch.cat([caches[i][1], v], 2)
            caches[i] = (k, v)
            group = torch.arange(hq) % hkv if tiled_gqa else torch.arange(hq) // (hq // hkv)
            scores = (q @ k[:, group].transpose(-1, -2)) / dh ** 0.5
            o = scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ v[:, group]
            x = x + o.transpose(1, 2).reshape(b, size, hq * dh) @ w[p + "self_attn.o_proj.weight"].T
            h = norm(x, w[p + "post_attention_layernorm.weight"])
            gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
        x = norm(x, w["model.norm.weight"]) if final_norm else x
        head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else w["lm_head.weight"]
        out.append(x @ head.T)
        start += size
    return torch.cat(out, 1).float()


def llama_mistakes(w, c, ids, chunks=None):
    """Known mistakes' logits; a mistake that would pass on this input is left out (None)."""
    rtol, atol = tolerance(torch.float32)

    def variant(**knobs):
        def produce():
            wrong = knob_forward(w, c, ids, chunks, **knobs)
            return None if torch.allclose(wrong, knob_forward(w, c, ids, chunks), rtol=rtol, atol=atol) else wrong
        return produce
    return {
        ("RoPE on interleaved pairs (2j, 2j+1) instead of HF's rotate-half pairs (j, j + Dh/2)",
         "RoPE 用了交错配对 (2j, 2j+1)，而不是 HF 的 rotate-half 配对 (j, j + Dh/2)"): variant(interleaved=True),
        ("RoPE positions not offset by start_pos (the new tokens were rotated as positions 0, 1, ...)",
         "RoPE 位置没有加上 start_pos（新 token 按位置 0, 1, ... 旋转）"):
            variant(offset=False),
        ("GQA heads expanded with repeat (head h uses KV head h % Hkv) instead of repeat_interleave (h // group)",
         "GQA 的头用 repeat 展开（头 h 用 KV 头 h % Hkv），而不是 repeat_interleave（h // group）"):
            variant(tiled_gqa=True),
        ("the final RMSNorm (model.norm) before the LM head is missing",
         "缺少 LM head 之前的最后一个 RMSNorm（model.norm）"): variant(final_norm=False),
        ("RMSNorm eps added outside the square root", "RMSNorm 的 eps 加在了平方根外面"): variant(eps_inside=False),
        ("causal mask aligned top-left: a chunk after the cache cannot see its own earlier positions",
         "因果掩码按左上角对齐：缓存之后的分块看不到自己前面的位置"):
            variant(top_left=True),
    }
