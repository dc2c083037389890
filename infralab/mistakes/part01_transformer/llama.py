"""Known mistakes of part01_transformer.llama, reproduced by a small float64 LLaMA with one switch per mistake.

``knob_forward`` with every switch off is an independent float64 reference written from the formulas
(the hidden tests compare with Hugging Face transformers; the visible tests, which must not need it,
with this). Like the exercise it reads the Qwen variants off the state dict: a ``*_proj.bias`` is
added where present, ``self_attn.q_norm.weight`` / ``k_norm.weight`` normalise each head before RoPE.
"""
import torch

from infralab.testing import tolerance
from infralab.tiny_llama import head_dim


def knob_forward(w, c, ids, chunks=None, *, interleaved=False, offset=True, tiled_gqa=False,
                 final_norm=True, eps_inside=True, top_left=False, skip_bias=(), qk_norm="per_head"):
    """Logits (B, S, V) of ``ids`` fed in ``chunks`` (sizes), with the chosen mistakes switched on.

    ``skip_bias``: projections ("k_proj", "o_proj", ...) whose bias is left out; ``qk_norm``: where
    the q/k RMSNorm goes when the state dict has one: "per_head" (right: each head's Dh features,
    before RoPE), "after_rope", "all_heads" (one mean square over the whole projection), "none".
    """
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

    def linear(x, p, name):
        y = x @ w[f"{p}{name}.weight"].T
        bias = w.get(f"{p}{name}.bias")
        return y if bias is None or name.split(".")[-1] in skip_bias else y + bias

    def heads(x, p, name, n, pos):  # (B, S, D) -> (B, n, S, Dh): projection, q/k norm, RoPE (not for v)
        y = linear(x, p, f"self_attn.{name}_proj")
        g = w.get(f"{p}self_attn.{name}_norm.weight")
        if g is not None and qk_norm == "all_heads":
            y = y / (y.pow(2).mean(-1, keepdim=True) + eps).sqrt()
        y = y.view(b, -1, n, dh)
        if g is not None and qk_norm == "per_head":
            y = norm(y, g)
        elif g is not None and qk_norm == "all_heads":
            y = g * y
        y = y.transpose(1, 2)
        if name == "v":
            return y
        y = rope(y, pos)
        return norm(y, g) if g is not None and qk_norm == "after_rope" else y

    caches = [None] * c["num_hidden_layers"]
    out, start = [], 0
    for size in chunks or [s_total]:
        pos = torch.arange(start, start + size) if offset else torch.arange(size)
        allowed = torch.ones(size, start + size, dtype=torch.bool).tril(0 if top_left else start)
        x = w["model.embed_tokens.weight"][ids[:, start:start + size]]
        for i in range(c["num_hidden_layers"]):
            p = f"model.layers.{i}."
            h = norm(x, w[p + "input_layernorm.weight"])
            q, k, v = heads(h, p, "q", hq, pos), heads(h, p, "k", hkv, pos), heads(h, p, "v", hkv, pos)
            if caches[i] is not None:
                k, v = torch.cat([caches[i][0], k], 2), torch.cat([caches[i][1], v], 2)
            caches[i] = (k, v)
            group = torch.arange(hq) % hkv if tiled_gqa else torch.arange(hq) // (hq // hkv)
            scores = (q @ k[:, group].transpose(-1, -2)) / dh ** 0.5
            o = scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ v[:, group]
            x = x + linear(o.transpose(1, 2).reshape(b, size, hq * dh), p, "self_attn.o_proj")
            h = norm(x, w[p + "post_attention_layernorm.weight"])
            gate, up = linear(h, p, "mlp.gate_proj"), linear(h, p, "mlp.up_proj")
            x = x + linear(torch.nn.functional.silu(gate) * up, p, "mlp.down_proj")
        x = norm(x, w["model.norm.weight"]) if final_norm else x
        head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else w["lm_head.weight"]
        out.append(x @ head.T)
        start += size
    return torch.cat(out, 1).float()


# Known mistakes: (english, chinese) label -> the knob_forward switches that reproduce it.
MISTAKE_KNOBS = {
    ("RoPE on interleaved pairs (2j, 2j+1) instead of HF's rotate-half pairs (j, j + Dh/2)",
     "RoPE 用了交错配对 (2j, 2j+1)，而不是 HF 的 rotate-half 配对 (j, j + Dh/2)"): {"interleaved": True},
    ("RoPE positions not offset by start_pos (the new tokens were rotated as positions 0, 1, ...)",
     "RoPE 位置没有加上 start_pos（新 token 按位置 0, 1, ... 旋转）"): {"offset": False},
    ("GQA heads expanded with repeat (head h uses KV head h % Hkv) instead of repeat_interleave (h // group)",
     "GQA 的头用 repeat 展开（头 h 用 KV 头 h % Hkv），而不是 repeat_interleave（h // group）"): {"tiled_gqa": True},
    ("the final RMSNorm (model.norm) before the LM head is missing",
     "缺少 LM head 之前的最后一个 RMSNorm（model.norm）"): {"final_norm": False},
    ("RMSNorm eps added outside the square root", "RMSNorm 的 eps 加在了平方根外面"): {"eps_inside": False},
    ("causal mask aligned top-left: a chunk after the cache cannot see its own earlier positions",
     "因果掩码按左上角对齐：缓存之后的分块看不到自己前面的位置"): {"top_left": True},
    ("the k_proj bias is left out (q and v got theirs): add a bias wherever the state dict holds one",
     "漏加了 k_proj 的 bias（q、v 加了）：state dict 里有 bias 的投影都要加"): {"skip_bias": ("k_proj",)},
    ("the o_proj bias is left out (only Qwen2's q/k/v biases added): with attention_bias o_proj has one too",
     "漏加了 o_proj 的 bias（只加了 Qwen2 那样的 q/k/v bias）：attention_bias 时 o_proj 也有 bias"):
        {"skip_bias": ("o_proj",)},
    ("no bias added at all: the state dict's *_proj.bias tensors were ignored",
     "完全没有加 bias：state dict 里的 *_proj.bias 被忽略了"):
        {"skip_bias": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")},
    ("Qwen3's q/k RMSNorm applied after RoPE instead of before it",
     "Qwen3 的 q/k RMSNorm 放在了 RoPE 之后，而不是之前"): {"qk_norm": "after_rope"},
    ("Qwen3's q/k RMSNorm taken over all heads together (the whole projection, as OLMo-2 does) "
     "instead of over each head's head_dim features",
     "Qwen3 的 q/k RMSNorm 对所有头一起（整个投影，OLMo-2 的做法）求均方，而不是对每个头的 head_dim 维"):
        {"qk_norm": "all_heads"},
    ("Qwen3's q_norm / k_norm were not applied", "没有应用 Qwen3 的 q_norm / k_norm"): {"qk_norm": "none"},
}


def llama_mistakes(w, c, ids, chunks=None):
    """Known mistakes' logits; a mistake that would pass on this input is left out (None), so the
    bias and q/k-norm mistakes only appear for state dicts that hold biases or q/k norms."""
    rtol, atol = tolerance(torch.float32)

    def variant(knobs):
        def produce():
            wrong = knob_forward(w, c, ids, chunks, **knobs)
            return None if torch.allclose(wrong, knob_forward(w, c, ids, chunks), rtol=rtol, atol=atol) else wrong
        return produce
    return {label: variant(knobs) for label, knobs in MISTAKE_KNOBS.items()}


MIN_TOP2_GAP = 1e-3  # a recorded greedy step must not hinge on fp32 rounding


def greedy_tokens(w, c, ids, n, **knobs):
    """(B, S + n): the float64 model's greedy continuation, prefill then one cached decode step per
    token (chunks S, 1, 1, ...), with ``knobs`` (knob_forward's mistakes). Raises ValueError where a
    correct model's step is a near tie (top-2 logits within MIN_TOP2_GAP)."""
    out = ids
    for _ in range(n):
        last = knob_forward(w, c, out, [ids.shape[1]] + [1] * (out.shape[1] - ids.shape[1]), **knobs)[:, -1]
        top2 = last.topk(2, dim=-1).values
        if not knobs and (top2[:, 0] - top2[:, 1]).min() < MIN_TOP2_GAP:
            # the tests draw other inputs on it (pytest.raises, retries): never shown to a student
            raise ValueError("a near tie in the greedy reference: draw other inputs")  # kit bug, not a user message
        out = torch.cat([out, last.argmax(-1, keepdim=True)], 1)
    return out


def greedy_mistakes(w, c, ids, n):
    """Known mistakes' greedy tokens. Tokens tell mistakes apart poorly: a mistake that picks the
    right tokens here, or the same tokens as another mistake (ambiguous), is left out."""
    right = greedy_tokens(w, c, ids, n)
    tokens = {label: greedy_tokens(w, c, ids, n, **knobs) for label, knobs in MISTAKE_KNOBS.items()}
    return {label: t for label, t in tokens.items()
            if not torch.equal(t, right) and sum(torch.equal(t, other) for other in tokens.values()) == 1}
