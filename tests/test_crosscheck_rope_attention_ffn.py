"""The part01 reference solutions agree with public implementations.

rope vs transformers' ``ROPE_INIT_FUNCTIONS`` (every scaling type), ``LlamaRotaryEmbedding`` +
``apply_rotary_pos_emb`` (rotate-half) and GPT-J's ``apply_rotary_pos_emb`` (interleaved);
attention vs torch's ``scaled_dot_product_attention``; SwiGLU/GeGLU vs ``LlamaMLP``/``GemmaMLP``
with the same weights. Tiny configs, CPU, float32 unless a test says otherwise.
"""
import math

import pytest
import torch
import torch.nn.functional as F

from infralab.testing import assert_close
from solutions.part01_transformer import attention as attn
from solutions.part01_transformer import ffn
from solutions.part01_transformer import rope

transformers = pytest.importorskip("transformers")
from transformers import GemmaConfig, LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.gemma.modeling_gemma import GemmaMLP  # noqa: E402
from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb as gptj_apply_rotary  # noqa: E402
from transformers.models.llama.modeling_llama import (  # noqa: E402
    LlamaMLP,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
    repeat_kv,
)

HEAD_DIM = 32


def llama_config(rope_parameters: dict, max_position_embeddings: int = 4096, **kw) -> LlamaConfig:
    return LlamaConfig(hidden_size=4 * HEAD_DIM, num_attention_heads=4, num_key_value_heads=2, head_dim=HEAD_DIM,
                       intermediate_size=96, max_position_embeddings=max_position_embeddings,
                       rope_parameters=rope_parameters, **kw)


def hf_params(scaling: dict, base: float) -> dict:
    """Our scaling dict in HF's ``rope_parameters`` spelling."""
    params = {k: v for k, v in scaling.items() if k != "type"}
    return {"rope_type": scaling["type"], "rope_theta": base, **params}


# (our scaling dict, base): every type that transformers implements under the same name
SCALINGS = [
    ({"type": "linear", "factor": 4.0}, 10000.0),
    ({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}, 10000.0),
    ({"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
      "mscale": 0.707, "mscale_all_dim": 1.0}, 10000.0),
    ({"type": "yarn", "factor": 16.0, "original_max_position_embeddings": 2048, "beta_fast": 16, "beta_slow": 2,
      "attention_factor": 1.5}, 1e6),
    ({"type": "yarn", "factor": 8.0, "original_max_position_embeddings": 32768, "truncate": False}, 1e6),
    ({"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192}, 500000.0),
    ({"type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 128}, 10000.0),
]


@pytest.mark.parametrize("scaling,base", SCALINGS, ids=lambda v: v["type"] if isinstance(v, dict) else f"{v:g}")
def test_inverse_frequencies_match_transformers(scaling, base):
    expected, expected_scaling = ROPE_INIT_FUNCTIONS[scaling["type"]](llama_config(hf_params(scaling, base)), "cpu")
    got, got_scaling = rope.rope_inv_freq(HEAD_DIM, base, scaling)
    assert_close(got, expected.float(), name=f"inv_freq ({scaling})")
    assert math.isclose(got_scaling, expected_scaling, rel_tol=1e-9), (got_scaling, expected_scaling)


def test_default_frequencies_match_transformers():
    config = llama_config({"rope_type": "default", "rope_theta": 500000.0})
    expected, expected_scaling = LlamaRotaryEmbedding.compute_default_rope_parameters(config, "cpu")
    got, got_scaling = rope.rope_inv_freq(HEAD_DIM, 500000.0)
    assert_close(got, expected, name="default inv_freq")
    assert got_scaling == expected_scaling == 1.0


@pytest.mark.parametrize("seq_len", [None, 512, 1024, 3000, 10000])
def test_dynamic_ntk_matches_transformers(seq_len):
    """HF's "dynamic" takes the original length from ``max_position_embeddings``."""
    scaling = {"type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 1024}
    config = llama_config({"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 4.0}, max_position_embeddings=1024)
    expected, _ = ROPE_INIT_FUNCTIONS["dynamic"](config, "cpu", seq_len=seq_len)
    assert_close(rope.rope_inv_freq(HEAD_DIM, 10000.0, scaling, seq_len=seq_len)[0], expected, name="dynamic inv_freq")


@pytest.mark.parametrize("factor", [2.0, 8.0])
def test_static_ntk_equals_dynamic_ntk_at_twice_the_length_with_factor_minus_one(factor):
    """base * f ** (D/(D-2)) = HF dynamic with factor f - 1 at seq_len = 2 L: (f-1)*2 - (f-2) = f."""
    config = llama_config({"rope_type": "dynamic", "rope_theta": 10000.0, "factor": factor - 1},
                          max_position_embeddings=1024)
    expected, _ = ROPE_INIT_FUNCTIONS["dynamic"](config, "cpu", seq_len=2048)
    got, _ = rope.rope_inv_freq(HEAD_DIM, 10000.0, {"type": "ntk", "factor": factor})
    assert_close(got, expected, name="static NTK inv_freq")


@pytest.mark.parametrize("scaling,base", [({"type": "default"}, 10000.0)] + SCALINGS[1:3],
                         ids=["default", "yarn", "yarn-mscale"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rotate_half_matches_llama_rotary_embedding(scaling, base, dtype):
    """cos/sin from LlamaRotaryEmbedding (attention scaling included) and apply_rotary_pos_emb."""
    g = torch.Generator().manual_seed(0)
    config = llama_config(hf_params(scaling, base))
    b, h, s, offset = 2, 3, 5, 37
    q = torch.randn(b, h, s, HEAD_DIM, generator=g).to(dtype)
    k = torch.randn(b, h, s, HEAD_DIM, generator=g).to(dtype)
    position_ids = torch.arange(offset, offset + s).expand(b, s)
    hf_cos, hf_sin = LlamaRotaryEmbedding(config)(q, position_ids)
    hf_q, hf_k = apply_rotary_pos_emb(q, k, hf_cos, hf_sin)

    inv_freq, scaling_factor = rope.rope_inv_freq(HEAD_DIM, base, scaling)
    cos, sin = rope.rope_cos_sin(inv_freq, s, offset=offset, attention_scaling=scaling_factor)
    assert_close(torch.cat([cos, cos], -1).expand(b, s, HEAD_DIM).to(dtype), hf_cos, name="cos")
    assert_close(torch.cat([sin, sin], -1).expand(b, s, HEAD_DIM).to(dtype), hf_sin, name="sin")
    assert_close(rope.apply_rope(q, cos, sin, "rotate_half"), hf_q, name="rotated q")
    assert_close(rope.apply_rope(k, cos, sin, "rotate_half"), hf_k, name="rotated k")


def test_per_sequence_offsets_match_llama_rotary_embedding():
    g = torch.Generator().manual_seed(1)
    config = llama_config({"rope_type": "default", "rope_theta": 10000.0})
    offsets = torch.tensor([0, 9, 130])
    x = torch.randn(3, 2, 4, HEAD_DIM, generator=g)
    position_ids = offsets[:, None] + torch.arange(4)
    hf_cos, hf_sin = LlamaRotaryEmbedding(config)(x, position_ids)
    cos, sin = rope.rope_cos_sin(rope.rope_inv_freq(HEAD_DIM)[0], 4, offset=offsets)
    assert_close(rope.apply_rope(x, cos, sin), apply_rotary_pos_emb(x, x, hf_cos, hf_sin)[0], name="rotated x")


def test_interleaved_matches_gptj():
    """GPT-J rotates pairs (2i, 2i+1); its tensors are (B, S, H, D), sin/cos (B, S, D/2)."""
    g = torch.Generator().manual_seed(2)
    b, h, s, offset = 2, 3, 6, 11
    x = torch.randn(b, h, s, HEAD_DIM, generator=g)
    cos, sin = rope.rope_cos_sin(rope.rope_inv_freq(HEAD_DIM)[0], s, offset=offset)
    expected = gptj_apply_rotary(x.transpose(1, 2), sin.expand(b, s, -1), cos.expand(b, s, -1)).transpose(1, 2)
    assert_close(rope.apply_rope(x, cos, sin, "interleaved"), expected, name="interleaved rotation")


# ---- attention vs torch SDPA ----------------------------------------------------------------------

def qkv(seed, b, hq, hkv, sq, skv, d):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, hq, sq, d, generator=g), torch.randn(b, hkv, skv, d, generator=g),
            torch.randn(b, hkv, skv, d, generator=g))


@pytest.mark.parametrize("hq,hkv", [(4, 4), (8, 2), (4, 1)], ids=["mha", "gqa", "mqa"])
def test_square_causal_attention_matches_sdpa_is_causal(hq, hkv):
    q, k, v = qkv(3, 2, hq, hkv, 7, 7, 16)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert_close(attn.attention(q, k, v, causal=True), expected)


@pytest.mark.parametrize("sq,skv", [(1, 9), (4, 13)], ids=["decode", "chunked-prefill"])
def test_bottom_right_causal_attention_matches_sdpa_with_an_explicit_mask(sq, skv):
    q, k, v = qkv(4, 2, 8, 2, sq, skv, 16)
    bottom_right = torch.ones(sq, skv, dtype=torch.bool).tril(diagonal=skv - sq)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right, enable_gqa=True)
    assert_close(attn.attention(q, k, v, causal=True), expected)


def test_window_and_padding_match_sdpa_with_an_explicit_mask():
    q, k, v = qkv(5, 2, 4, 2, 6, 10, 16)
    padding = torch.ones(2, 10, dtype=torch.bool)
    padding[1, :3] = False  # left padding of the second sequence
    pos = torch.arange(6)[:, None] + 4  # bottom-right positions of the queries
    j = torch.arange(10)[None, :]
    mask = ((j <= pos) & (j > pos - 3))[None, None] & padding[:, None, None, :]
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True, scale=0.3)
    got = attn.attention(q, k, v, causal=True, window=3, key_padding_mask=padding, scale=0.3)
    assert_close(got, expected)


def test_gqa_head_mapping_matches_transformers_repeat_kv():
    q, k, v = qkv(6, 1, 6, 2, 5, 5, 8)
    expected = F.scaled_dot_product_attention(q, repeat_kv(k, 3), repeat_kv(v, 3))
    assert_close(attn.attention(q, k, v), expected)


# ---- FFN vs transformers' MLPs --------------------------------------------------------------------

def mlp_with_weights(mlp, gen):
    for lin in (mlp.gate_proj, mlp.up_proj, mlp.down_proj):
        lin.weight.data = torch.randn(lin.weight.shape, generator=gen) / math.sqrt(lin.in_features)
    return mlp.gate_proj.weight.data, mlp.up_proj.weight.data, mlp.down_proj.weight.data


@torch.no_grad()
def test_swiglu_matches_llama_mlp():
    g = torch.Generator().manual_seed(7)
    mlp = LlamaMLP(llama_config({"rope_type": "default", "rope_theta": 10000.0}, hidden_act="silu"))
    weights = mlp_with_weights(mlp, g)
    x = torch.randn(2, 5, 4 * HEAD_DIM, generator=g)
    assert_close(ffn.swiglu(x, *weights), mlp(x), reduction=96)


@torch.no_grad()
@pytest.mark.parametrize("act,approximate", [("gelu_pytorch_tanh", "tanh"), ("gelu", "none")])
def test_geglu_matches_gemma_mlp(act, approximate):
    g = torch.Generator().manual_seed(8)
    mlp = GemmaMLP(GemmaConfig(hidden_size=64, intermediate_size=96, hidden_act=act))
    weights = mlp_with_weights(mlp, g)
    x = torch.randn(3, 64, generator=g) * 3
    assert_close(ffn.geglu(x, *weights, approximate=approximate), mlp(x), reduction=96)
