"""Hidden tests for part01_transformer.llama.

The reference is Hugging Face transformers' LlamaForCausalLM, Qwen2ForCausalLM or Qwen3ForCausalLM
(5.17, eager attention, fp32) holding the same random weights (infralab.tiny_llama). Known mistakes
are reproduced by a small float64 LLaMA (infralab.mistakes.part01_transformer.llama) with one switch
per mistake; it only explains failures.
"""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from infralab.mistakes.part01_transformer.llama import llama_mistakes
from infralab.testing import assert_close, assert_equal
from infralab.tiny_llama import hf_greedy, tiny_model

pytest.importorskip("transformers")

MODULE = "part01_transformer.llama"
VOCAB = 128


def model(seed, family="llama", **overrides):
    return tiny_model(family, seed, hf=True, **overrides)


def hf_logits(hf, ids):
    with torch.no_grad():
        return hf(ids).logits.float()


def assert_greedy_equals_hf(got, hf, ids, n, name):
    """``got`` equals HF's greedy ``generate`` up to its first near tie (infralab.tiny_llama.hf_greedy)."""
    expected, compared = hf_greedy(hf, ids, n)
    assert_equal(tuple(got.shape), tuple(expected.shape), name=f"{name}: shape (B, S + N)")
    assert_equal(got[:, :compared], expected[:, :compared], name=(f"{name}: greedy tokens vs HF generate",
                                                                  f"{name}：贪心解码 token 对比 HF generate"))


CONFIGS = {
    "gqa": {},
    "mqa_wide_heads": {"num_key_value_heads": 1, "head_dim": 32, "rope_theta": 500000.0},
    "gqa_4_to_2_of_8": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 8, "rope_theta": 1000.0},
    "mha": {"num_key_value_heads": 4},
}


# ---------------------------------------------------------------- one forward

@pytest.mark.weight(3)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_logits_equal_hf_llama_for_causal_lm(impl, seed, gen, name):
    weights, config, hf = model(seed, **CONFIGS[name])
    ids = torch.randint(0, VOCAB, (2, 11), generator=gen)
    logits, _ = impl(MODULE).llama_forward(weights, config, ids)
    assert_close(logits, hf_logits(hf, ids), name=(f"logits ({name} config) vs HF LlamaForCausalLM",
                                                   f"logits（{name} 配置）对比 HF LlamaForCausalLM"),
                 mistakes=llama_mistakes(weights, config, ids))


@pytest.mark.weight(2)
def test_rms_norm_eps_is_inside_the_square_root(impl, seed, gen):
    """A large eps makes sqrt(ms + eps) and sqrt(ms) + eps differ clearly."""
    weights, config, hf = model(seed, rms_norm_eps=0.5)
    ids = torch.randint(0, VOCAB, (2, 6), generator=gen)
    logits, _ = impl(MODULE).llama_forward(weights, config, ids)
    assert_close(logits, hf_logits(hf, ids), name=("logits with rms_norm_eps=0.5 vs HF",
                                                   "rms_norm_eps=0.5 时的 logits 对比 HF"),
                 mistakes=llama_mistakes(weights, config, ids))


@pytest.mark.weight(2)
def test_tied_embeddings_use_embed_tokens_as_the_lm_head(impl, seed, gen):
    weights, config, hf = model(seed, tie_word_embeddings=True)
    assert "lm_head.weight" not in weights  # setup check: the test's own tied weights
    ids = torch.randint(0, VOCAB, (1, 8), generator=gen)
    logits, _ = impl(MODULE).llama_forward(weights, config, ids)
    assert_close(logits, hf_logits(hf, ids), name=("logits with tied embeddings vs HF", "共享嵌入时的 logits 对比 HF"),
                 mistakes=llama_mistakes(weights, config, ids))


def test_head_dim_missing_from_config_means_hidden_over_heads(impl, seed, gen):
    weights, config, hf = model(seed)
    del config["head_dim"]
    ids = torch.randint(0, VOCAB, (1, 5), generator=gen)
    logits, _ = impl(MODULE).llama_forward(weights, config, ids)
    assert_close(logits, hf_logits(hf, ids), name=("logits of a config without head_dim vs HF",
                                                   "无 head_dim 配置的 logits 对比 HF"))


# ---------------------------------------------------------------- the cache

@pytest.mark.weight(2)
def test_cache_holds_rotated_keys_and_values_like_hf(impl, seed, gen):
    weights, config, hf = model(seed)
    ids = torch.randint(0, VOCAB, (2, 7), generator=gen)
    _, cache = impl(MODULE).llama_forward(weights, config, ids)
    with torch.no_grad():
        past = hf(ids, use_cache=True).past_key_values
    for name, attr in (("k", "keys"), ("v", "values")):
        expected = torch.stack([getattr(layer, attr) for layer in past.layers])  # (L, B, Hkv, T, Dh)
        assert_close(cache[name], expected, name=(f'cache["{name}"] vs HF past_key_values.{attr}',
                                                  f'cache["{name}"] 对比 HF past_key_values.{attr}'))


@pytest.mark.weight(3)
def test_decode_steps_with_the_cache_equal_the_full_forward(impl, seed, gen):
    weights, config, hf = model(seed)
    llama = impl(MODULE)
    ids = torch.randint(0, VOCAB, (2, 10), generator=gen)
    logits, cache = llama.llama_forward(weights, config, ids[:, :7])
    steps = [logits]
    for t in range(7, 10):
        logits, cache = llama.llama_forward(weights, config, ids[:, t:t + 1], cache, t)
        steps.append(logits)
    assert_close(torch.cat(steps, 1), hf_logits(hf, ids), name=("prefill + 3 decode steps vs one full HF forward",
                                                                "prefill + 3 个 decode 步对比一次完整的 HF 前向"),
                 mistakes=llama_mistakes(weights, config, ids, [7, 1, 1, 1]))


@pytest.mark.weight(3)
def test_chunked_prefill_equals_one_prefill(impl, seed, gen):
    weights, config, hf = model(seed)
    llama = impl(MODULE)
    ids = torch.randint(0, VOCAB, (2, 12), generator=gen)
    chunks, cache, start, outs = [5, 4, 3], None, 0, []
    for size in chunks:
        logits, cache = llama.llama_forward(weights, config, ids[:, start:start + size], cache, start)
        outs.append(logits)
        start += size
    assert_close(torch.cat(outs, 1), hf_logits(hf, ids), name=("prefill in chunks 5+4+3 vs one HF forward",
                                                               "分块 5+4+3 的 prefill 对比一次 HF 前向"),
                 mistakes=llama_mistakes(weights, config, ids, chunks))
    assert_equal(tuple(cache["k"].shape), (2, 2, 2, 12, 16), name=('cache["k"] shape after the chunks',
                                                                   '各块之后 cache["k"] 的形状'))


def test_cache_passed_in_is_not_modified(impl, seed, gen):
    weights, config, _ = model(seed)
    llama = impl(MODULE)
    ids = torch.randint(0, VOCAB, (1, 6), generator=gen)
    _, cache = llama.llama_forward(weights, config, ids[:, :5])
    before = {k: t.clone() for k, t in cache.items()}
    _, grown = llama.llama_forward(weights, config, ids[:, 5:], cache, 5)
    for k in ("k", "v"):
        assert_equal(cache[k], before[k], name=(f'the caller\'s cache["{k}"] after a decode step',
                                                f'一个 decode 步之后调用方的 cache["{k}"]'))
        assert_equal(grown[k][:, :, :, :5], before[k], name=(f'the first 5 positions of the new cache["{k}"]',
                                                             f'新 cache["{k}"] 的前 5 个位置'))


def test_start_pos_must_match_the_cache_length(impl, seed, gen):
    weights, config, _ = model(seed)
    llama = impl(MODULE)
    ids = torch.randint(0, VOCAB, (1, 4), generator=gen)
    _, cache = llama.llama_forward(weights, config, ids)
    for bad in (0, 3, 5):
        with pytest.raises(ValueError):
            llama.llama_forward(weights, config, ids[:, :1], cache, bad)
    with pytest.raises(ValueError):
        llama.llama_forward(weights, config, ids, None, 2)


# ---------------------------------------------------------------- generation

@pytest.mark.weight(3)
def test_greedy_generation_equals_hf_generate(impl, seed, gen):
    weights, config, hf = model(seed, **CONFIGS["mqa_wide_heads"])
    ids = torch.randint(0, VOCAB, (3, 5), generator=gen)
    got = impl(MODULE).generate_greedy(weights, config, ids, 8)
    assert_greedy_equals_hf(got, hf, ids, 8, name="generate_greedy")


def test_generate_zero_new_tokens_returns_the_prompt(impl, seed, gen):
    weights, config, _ = model(seed)
    ids = torch.randint(0, VOCAB, (2, 3), generator=gen)
    assert_equal(impl(MODULE).generate_greedy(weights, config, ids, 0), ids, name=("output for max_new_tokens=0",
                                                                                   "max_new_tokens=0 时的输出"))


# ---------------------------------------------------------------- Qwen-style variants

QWEN_CONFIGS = {  # (family, overrides)
    "qwen2": ("qwen2", {}),
    "qwen2_mqa_wide_heads": ("qwen2", {"num_key_value_heads": 1, "head_dim": 32, "rope_theta": 1000000.0}),
    "qwen3": ("qwen3", {}),
    "qwen3_attention_bias": ("qwen3", {"attention_bias": True, "num_attention_heads": 8, "head_dim": 16}),
    "qwen3_tied_3_layers": ("qwen3", {"tie_word_embeddings": True, "num_hidden_layers": 3, "rms_norm_eps": 1e-6}),
    "llama_attention_and_mlp_bias": ("llama", {"attention_bias": True, "mlp_bias": True}),
}


@pytest.mark.weight(3)
@pytest.mark.parametrize("name", sorted(QWEN_CONFIGS))
def test_qwen_style_logits_equal_hf(impl, seed, gen, name):
    family, overrides = QWEN_CONFIGS[name]
    weights, config, hf = model(seed, family, **overrides)
    ids = torch.randint(0, VOCAB, (2, 9), generator=gen)
    logits, _ = impl(MODULE).llama_forward(weights, config, ids)
    assert_close(logits, hf_logits(hf, ids), name=(f"logits ({name}) vs HF {type(hf).__name__}",
                                                   f"logits（{name}）对比 HF {type(hf).__name__}"),
                 mistakes=llama_mistakes(weights, config, ids))


@pytest.mark.weight(2)
@pytest.mark.parametrize("name", ["qwen2", "qwen3_attention_bias"])
def test_qwen_style_decode_steps_with_the_cache_equal_the_full_forward(impl, seed, gen, name):
    family, overrides = QWEN_CONFIGS[name]
    weights, config, hf = model(seed, family, **overrides)
    llama = impl(MODULE)
    ids = torch.randint(0, VOCAB, (2, 9), generator=gen)
    chunks, cache, start, outs = [5, 2, 1, 1], None, 0, []
    for size in chunks:
        logits, cache = llama.llama_forward(weights, config, ids[:, start:start + size], cache, start)
        outs.append(logits)
        start += size
    assert_close(torch.cat(outs, 1), hf_logits(hf, ids), name=(f"{name}: chunks 5+2, 2 decode steps vs one HF forward",
                                                               f"{name}：分块 5+2、2 个 decode 步对比一次 HF 前向"),
                 mistakes=llama_mistakes(weights, config, ids, chunks))


@pytest.mark.weight(2)
def test_qwen3_cache_holds_keys_after_the_norm_and_rope(impl, seed, gen):
    weights, config, hf = model(seed, "qwen3")
    ids = torch.randint(0, VOCAB, (2, 6), generator=gen)
    _, cache = impl(MODULE).llama_forward(weights, config, ids)
    with torch.no_grad():
        past = hf(ids, use_cache=True).past_key_values
    for name, attr in (("k", "keys"), ("v", "values")):
        expected = torch.stack([getattr(layer, attr) for layer in past.layers])  # (L, B, Hkv, T, Dh)
        assert_close(cache[name], expected, name=(f'Qwen3 cache["{name}"] vs HF past_key_values.{attr}',
                                                  f'Qwen3 cache["{name}"] 对比 HF past_key_values.{attr}'))


@pytest.mark.weight(3)
@pytest.mark.parametrize("name", ["qwen2", "qwen3", "qwen3_attention_bias"])
def test_qwen_style_greedy_generation_equals_hf_generate(impl, seed, gen, name):
    family, overrides = QWEN_CONFIGS[name]
    weights, config, hf = model(seed, family, **overrides)
    ids = torch.randint(0, VOCAB, (2, 5), generator=gen)
    got = impl(MODULE).generate_greedy(weights, config, ids, 6)
    assert_greedy_equals_hf(got, hf, ids, 6, name=f"generate_greedy ({name})")


@pytest.mark.weight(2)
@settings(max_examples=6)
@given(family=st.sampled_from(["qwen2", "qwen3"]), kv_heads=st.sampled_from([1, 2]), group=st.sampled_from([1, 2, 4]),
       head_dim=st.sampled_from([8, 16, 32]), attention_bias=st.booleans(), prefill=st.integers(1, 6),
       steps=st.integers(1, 3), seed=st.integers(0, 2**31 - 1))
def test_qwen_style_prefill_then_decode_equals_hf_for_random_shapes(impl, family, kv_heads, group, head_dim,
                                                                    attention_bias, prefill, steps, seed):
    """Any head layout (MQA to 4x GQA, Hq * Dh above or below hidden 64), Qwen3 with or without biases."""
    overrides = {"num_key_value_heads": kv_heads, "num_attention_heads": kv_heads * group, "head_dim": head_dim}
    if family == "qwen3":
        overrides["attention_bias"] = attention_bias
    weights, config, hf = model(seed, family, **overrides)
    llama = impl(MODULE)
    ids = torch.randint(0, VOCAB, (1, prefill + steps), generator=torch.Generator().manual_seed(seed))
    logits, cache = llama.llama_forward(weights, config, ids[:, :prefill])
    outs = [logits]
    for t in range(prefill, prefill + steps):
        logits, cache = llama.llama_forward(weights, config, ids[:, t:t + 1], cache, t)
        outs.append(logits)
    assert_close(torch.cat(outs, 1), hf_logits(hf, ids), name=(f"{family} {overrides}: prefill {prefill} + {steps} steps",
                                                               f"{family} {overrides}：prefill {prefill} + {steps} 步"),
                 mistakes=llama_mistakes(weights, config, ids, [prefill] + [1] * steps))
