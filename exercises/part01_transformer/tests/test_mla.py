"""Visible tests for part01_transformer.mla: run `pytest exercises/part01_transformer -m mla`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import math

import torch

from infralab.testing import assert_close, assert_equal, randn

MODULE = "part01_transformer.mla"
CONFIG = {"num_heads": 2, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6, "kv_lora_rank": 12,
          "rope_theta": 10000.0, "rms_norm_eps": 1e-6}
HIDDEN = 8


def setup(golden, tokens=5):
    """Weights in transformers' layout and hidden states of ``tokens`` tokens, from the recorded seed."""
    w = golden.ref.random_weights(CONFIG, HIDDEN, int(torch.randint(0, 2**31 - 1, (), generator=golden.gen)))
    return w, randn(2, tokens, HIDDEN, generator=golden.gen)


def test_the_rope_key_rotates_interleaved_pairs(impl, golden):
    """W_KR picks x[0] into RoPE dim 0: at position 1 the pair (0, 1) turns by 1 radian (frequency 1)."""
    d_c = CONFIG["kv_lora_rank"]
    w = {"kv_a_proj_with_mqa": torch.zeros(d_c + 4, HIDDEN), "kv_a_layernorm": torch.ones(d_c)}
    w["kv_a_proj_with_mqa"][d_c, 0] = 1.0
    x = torch.zeros(1, 2, HIDDEN)
    x[..., 0] = 1.0
    _, k_pe = impl(MODULE).latent_kv(x, w, CONFIG)
    expected = torch.tensor([[[1.0, 0.0, 0.0, 0.0], [math.cos(1.0), math.sin(1.0), 0.0, 0.0]]])
    rotate_half = torch.tensor([[[1.0, 0.0, 0.0, 0.0], [math.cos(1.0), 0.0, math.sin(1.0), 0.0]]])
    assert_close(k_pe, expected, name=("RoPE key of a unit vector at positions 0 and 1", "单位向量在位置 0 和 1 处的 RoPE key"),
                 mistakes={golden.ref.ROTATE_HALF: rotate_half})


def test_the_cache_holds_the_normalised_latent_and_the_rotated_key(impl, golden):
    w, x = setup(golden)
    c_kv, k_pe = impl(MODULE).latent_kv(x[:, 2:], w, CONFIG, start=2)
    expected_c, expected_k = golden.ref.reference_latent(x[:, 2:], w, CONFIG, 2)
    mistakes = golden.ref.latent_mistakes(x[:, 2:], w, CONFIG, 2)
    assert_close(c_kv, expected_c, name="c_kv", mistakes=mistakes)
    assert_close(k_pe, expected_k, name="k_pe (positions 2..4)", mistakes=mistakes)


def test_naive_prefill_matches_the_definition(impl, golden):
    w, x = setup(golden)
    c_kv, k_pe = golden.ref.reference_latent(x, w, CONFIG)
    assert_close(impl(MODULE).mla_attention(x, w, CONFIG, c_kv, k_pe),
                 golden.ref.reference_mla(x, w, CONFIG, c_kv, k_pe),
                 mistakes=golden.ref.mla_mistakes(x, w, CONFIG, c_kv, k_pe))


def test_a_chunk_of_queries_sees_the_whole_cache_before_it(impl, golden):
    """Two queries after three cached tokens: the causal mask is aligned bottom-right."""
    w, x = setup(golden)
    c_kv, k_pe = golden.ref.reference_latent(x, w, CONFIG)
    assert_close(impl(MODULE).mla_attention(x[:, 3:], w, CONFIG, c_kv, k_pe),
                 golden.ref.reference_mla(x[:, 3:], w, CONFIG, c_kv, k_pe),
                 mistakes=golden.ref.mla_mistakes(x[:, 3:], w, CONFIG, c_kv, k_pe))


def test_absorbed_weights_fold_w_uk_into_the_query_and_w_uv_into_the_output(impl, golden):
    w, _ = setup(golden)
    got = impl(MODULE).absorb_weights(w, CONFIG)
    expected = golden.ref.reference_absorbed_weights(w, CONFIG)
    blocked = golden.ref.absorb_mistakes(w, CONFIG)
    for name, value in expected.items():
        assert_close(got[name], value, name=name, mistakes={k: v[name] for k, v in blocked.items()})


def test_absorbed_decode_step_equals_the_naive_form(impl, golden):
    w, x = setup(golden)
    mla = impl(MODULE)
    c_kv, k_pe = golden.ref.reference_latent(x, w, CONFIG)
    absorbed = golden.ref.reference_absorbed_weights(w, CONFIG)
    assert_close(mla.mla_attention_absorbed(x[:, -1:], absorbed, CONFIG, c_kv, k_pe),
                 golden.ref.reference_mla(x[:, -1:], w, CONFIG, c_kv, k_pe),
                 name=("absorbed decode step",
                       "吸收（absorbed）形式的 decode 步"), mistakes=golden.ref.mla_mistakes(x[:, -1:], w, CONFIG, c_kv, k_pe,
                                                                               absorbed=True))


def test_mla_caches_71x_less_than_mha_in_deepseek_v3(impl):
    """DeepSeek-V3: 128 heads, d_nope 128, d_rope 64, d_v 128, d_c 512, 61 layers, bf16."""
    v3 = {"num_heads": 128, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "kv_lora_rank": 512,
          "rope_theta": 10000.0, "rms_norm_eps": 1e-6}
    mla = impl(MODULE)
    assert_equal(mla.kv_cache_bytes_per_token(v3, 61), (512 + 64) * 61 * 2, name=("MLA bytes per token",
                                                                                  "每个 token 的 MLA 字节数"))
    assert_equal(mla.kv_cache_bytes_per_token(v3, 61, "mha"), 128 * (192 + 128) * 61 * 2, name=("MHA bytes per token",
                                                                                                "每个 token 的 MHA 字节数"))
    assert_equal(mla.kv_cache_bytes_per_token(v3, 61, "gqa", num_kv_heads=8), 8 * 320 * 61 * 2,
                 name=("GQA (8 KV heads) bytes per token", "每个 token 的 GQA（8 个 KV 头）字节数"),
                 mistakes={("KV heads counted as all H query heads", "把全部 H 个 query 头都算作了 KV 头"):
                           128 * 320 * 61 * 2})
