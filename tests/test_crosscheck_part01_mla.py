"""part01_transformer.mla's reference solution agrees with transformers' DeepSeek-V3 attention.

``DeepseekV3Attention`` (transformers 5.x) on a tiny random config (no query compression:
``q_lora_rank=None``; plain RoPE; eager attention, float32), driven with its own rotary embedding:
a causal prefill, and one decode step through its ``DynamicCache`` (which stores the compressed
latent and the RoPE key, as our cache does). Its ``rope_interleave=True`` rotates the pairs
(2i, 2i+1) as we do but writes the results de-interleaved (evens, then odds): the same
permutation of q's and k's RoPE dimensions, so the scores, and the outputs, are the same.
"""
import pytest
import torch

from infralab.testing import assert_close, randn
from solutions.part01_transformer import mla

transformers = pytest.importorskip("transformers")
from transformers import DeepseekV3Config  # noqa: E402
from transformers.cache_utils import DynamicCache  # noqa: E402
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (  # noqa: E402
    DeepseekV3Attention,
    DeepseekV3RotaryEmbedding,
)

OURS = {"num_heads": 4, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 12, "kv_lora_rank": 24,
        "rope_theta": 10000.0, "rms_norm_eps": 1e-6}
HIDDEN = 32


def hf_attention(gen):
    config = DeepseekV3Config(hidden_size=HIDDEN, num_attention_heads=OURS["num_heads"],
                              num_key_value_heads=OURS["num_heads"], q_lora_rank=None,
                              kv_lora_rank=OURS["kv_lora_rank"], qk_nope_head_dim=OURS["qk_nope_head_dim"],
                              qk_rope_head_dim=OURS["qk_rope_head_dim"], v_head_dim=OURS["v_head_dim"],
                              rope_parameters={"rope_type": "default", "rope_theta": OURS["rope_theta"]},
                              rms_norm_eps=OURS["rms_norm_eps"], rope_interleave=True, num_hidden_layers=1,
                              attn_implementation="eager")
    module = DeepseekV3Attention(config, layer_idx=0).eval()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(randn(*p.shape, generator=gen, scale=p.shape[-1] ** -0.5))
        module.kv_a_layernorm.weight.copy_(1.0 + 0.1 * randn(OURS["kv_lora_rank"], generator=gen))
    weights = {name: getattr(module, name).weight.detach().clone()
               for name in ("q_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj")}
    return module, DeepseekV3RotaryEmbedding(config), weights


def run_hf(module, rotary, x, start, cache):
    b, s, _ = x.shape
    positions = torch.arange(start, start + s)[None].expand(b, -1)
    total = start + s
    visible = torch.ones(s, total, dtype=torch.bool).tril(start)
    mask = torch.zeros(b, 1, s, total).masked_fill(~visible, float("-inf"))
    with torch.no_grad():
        out, _ = module(x, position_embeddings=rotary(x, positions), attention_mask=mask, past_key_values=cache)
    return out


def test_prefill_and_decode_match_deepseek_v3_attention():
    gen = torch.Generator().manual_seed(0)
    module, rotary, weights = hf_attention(gen)
    x = randn(2, 7, HIDDEN, generator=gen)
    cache = DynamicCache(config=module.config)
    hf_prefill = run_hf(module, rotary, x[:, :6], 0, cache)
    hf_decode = run_hf(module, rotary, x[:, 6:], 6, cache)

    c_kv, k_pe = mla.latent_kv(x, weights, OURS)
    assert_close(mla.mla_attention(x[:, :6], weights, OURS, c_kv[:, :6], k_pe[:, :6]), hf_prefill,
                 name="naive MLA prefill vs DeepseekV3Attention")
    absorbed = mla.absorb_weights(weights, OURS)
    assert_close(mla.mla_attention_absorbed(x[:, 6:], absorbed, OURS, c_kv, k_pe), hf_decode,
                 name="absorbed MLA decode step vs DeepseekV3Attention with its cache")
    # the cache transformers kept is ours: the latent as is, the RoPE key up to its de-interleaved layout
    hf_latent, hf_rope_key = cache.layers[0].keys, cache.layers[0].values
    assert_close(hf_latent[:, 0], c_kv, name="cached latent c_kv")
    d = OURS["qk_rope_head_dim"]
    deinterleaved = torch.cat((k_pe[..., 0:d:2], k_pe[..., 1:d:2]), dim=-1)
    assert_close(hf_rope_key[:, 0], deinterleaved, name="cached RoPE key (de-interleaved as transformers stores it)")
