"""Hidden tests for part01_transformer.mla (latent KV, decoupled RoPE, naive and absorbed forms)."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.mistakes.part01_transformer.mla import (absorb_mistakes, latent_mistakes, mla_mistakes,
                                                      random_weights, reference_absorbed_weights,
                                                      reference_latent, reference_mla, tiny_config)
from infralab.testing import assert_close, assert_equal, randn

MODULE = "part01_transformer.mla"

configs = st.builds(tiny_config, heads=st.integers(1, 3), d_nope=st.sampled_from([4, 8]),
                    d_rope=st.sampled_from([2, 4, 6]), d_v=st.sampled_from([4, 6]), d_c=st.sampled_from([12, 20]))


def draw(seed, config, batch=2, tokens=6, hidden=12, dtype=torch.float32):
    x = randn(batch, tokens, hidden, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    return random_weights(config, hidden, seed + 1, dtype), x


@pytest.mark.weight(2)
@given(config=configs, start=st.integers(0, 40), eps=st.sampled_from([1e-6, 0.5]), seed=st.integers(0, 2**31 - 1))
def test_latent_cache_matches_reference(impl, config, start, eps, seed):
    """eps = 0.5, of the order of the latent's mean square, shows where (and whether) eps enters the norm."""
    config = {**config, "rms_norm_eps": eps}
    w, x = draw(seed, config)
    c_kv, k_pe = impl(MODULE).latent_kv(x, w, config, start=start)
    expected_c, expected_k = reference_latent(x, w, config, start)
    mistakes = latent_mistakes(x, w, config, start)
    assert_close(c_kv, expected_c, name="c_kv", mistakes=mistakes)
    assert_close(k_pe, expected_k, name=f"k_pe (positions {start}..)", mistakes=mistakes)


@pytest.mark.weight(3)
@given(config=configs, queries=st.integers(1, 6), seed=st.integers(0, 2**31 - 1))
def test_naive_attention_matches_reference(impl, config, queries, seed):
    w, x = draw(seed, config)
    c_kv, k_pe = reference_latent(x, w, config)
    got = impl(MODULE).mla_attention(x[:, -queries:], w, config, c_kv, k_pe)
    assert_close(got, reference_mla(x[:, -queries:], w, config, c_kv, k_pe), name=(f"MLA output ({queries} queries)",
                                                                                   f"MLA 输出（{queries} 个查询）"),
                 mistakes=mla_mistakes(x[:, -queries:], w, config, c_kv, k_pe))


@pytest.mark.weight(2)
@given(config=configs, seed=st.integers(0, 2**31 - 1))
def test_absorbed_weights_match_reference(impl, config, seed):
    w, _ = draw(seed, config)
    got = impl(MODULE).absorb_weights(w, config)
    blocked = absorb_mistakes(w, config)
    for name, value in reference_absorbed_weights(w, config).items():
        assert_close(got[name], value, name=name, mistakes={k: v()[name] for k, v in blocked.items()})


@pytest.mark.weight(3)
@given(config=configs, queries=st.integers(1, 6), seed=st.integers(0, 2**31 - 1))
def test_absorbed_attention_equals_the_naive_reference(impl, config, queries, seed):
    w, x = draw(seed, config)
    c_kv, k_pe = reference_latent(x, w, config)
    got = impl(MODULE).mla_attention_absorbed(x[:, -queries:], reference_absorbed_weights(w, config), config, c_kv, k_pe)
    assert_close(got, reference_mla(x[:, -queries:], w, config, c_kv, k_pe), name=(f"absorbed MLA ({queries} queries)",
                                                                                   f"吸收形式的 MLA（{queries} 个查询）"),
                 mistakes=mla_mistakes(x[:, -queries:], w, config, c_kv, k_pe, absorbed=True))


@pytest.mark.weight(2)
def test_decoding_token_by_token_equals_the_prefill(impl, seed):
    """Each step appends its own cache entry (start = its position) and attends with both forms."""
    config = tiny_config(heads=2, d_c=24)
    w, x = draw(seed, config, tokens=5)
    mla = impl(MODULE)
    c_kv, k_pe = reference_latent(x, w, config)
    prefill = reference_mla(x, w, config, c_kv, k_pe)
    absorbed = mla.absorb_weights(w, config)
    caches = [mla.latent_kv(x[:, t:t + 1], w, config, start=t) for t in range(5)]
    for t in range(5):
        c = torch.cat([cc for cc, _ in caches[:t + 1]], dim=1)
        k = torch.cat([kk for _, kk in caches[:t + 1]], dim=1)
        mistakes = latent_mistakes(x[:, t:t + 1], w, config, t)
        assert_close(c[:, t:], c_kv[:, t:t + 1], name=(f"c_kv appended at step {t}",
                                                       f"第 {t} 步追加的 c_kv"), mistakes=mistakes)
        assert_close(k[:, t:], k_pe[:, t:t + 1], name=(f"k_pe appended at step {t} (position {t})",
                                                       f"第 {t} 步追加的 k_pe（位置 {t}）"), mistakes=mistakes)
        step = x[:, t:t + 1]
        for name, got in (("naive", mla.mla_attention(step, w, config, c, k)),
                          ("absorbed", mla.mla_attention_absorbed(step, absorbed, config, c, k))):
            assert_close(got, prefill[:, t:t + 1], name=(f"{name} decode step {t} vs the prefill",
                                                         f"{name} 第 {t} 个 decode 步对比 prefill"),
                         mistakes=mla_mistakes(step, w, config, c, k, absorbed=name == "absorbed"))


def test_bf16_inputs_give_bf16_outputs_close_to_the_float_reference(impl, seed):
    config = tiny_config(heads=2, d_c=24)
    w, x = draw(seed, config, dtype=torch.bfloat16)
    mla = impl(MODULE)
    c_kv, k_pe = mla.latent_kv(x, w, config)
    ref_c, ref_k = reference_latent(x, w, config)
    assert_close(c_kv, ref_c, name="bf16 c_kv")
    assert_close(k_pe, ref_k, name="bf16 k_pe")
    assert_close(mla.mla_attention(x, w, config, ref_c, ref_k), reference_mla(x, w, config, ref_c, ref_k),
                 name="bf16 MLA output")


def test_more_queries_than_cached_tokens_is_an_error(impl, gen):
    config = tiny_config()
    w, x = draw(int(torch.randint(0, 2**31 - 1, (), generator=gen)), config)
    c_kv, k_pe = reference_latent(x[:, :3], w, config)
    with pytest.raises(ValueError):
        impl(MODULE).mla_attention(x, w, config, c_kv, k_pe)
    with pytest.raises(ValueError):
        impl(MODULE).mla_attention_absorbed(x, reference_absorbed_weights(w, config), config, c_kv, k_pe)


@given(config=configs, layers=st.integers(1, 80), groups=st.sampled_from([1, 3]), elem=st.sampled_from([1, 2, 4]))
def test_cache_bytes_per_token_of_every_attention_kind(impl, config, layers, groups, elem):
    h, dn, dr, dv, dc = (config[k] for k in ("num_heads", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                                             "kv_lora_rank"))
    mla = impl(MODULE)
    per_head = (dn + dr + dv) * layers * elem
    assert_equal(mla.kv_cache_bytes_per_token(config, layers, "mla", bytes_per_element=elem), (dc + dr) * layers * elem,
                 name="MLA bytes", mistakes={("the RoPE key left out of the MLA cache", "MLA 缓存漏算了 RoPE 键"):
                                             dc * layers * elem})
    assert_equal(mla.kv_cache_bytes_per_token(config, layers, "mha", bytes_per_element=elem), h * per_head,
                 name="MHA bytes")
    assert_equal(mla.kv_cache_bytes_per_token(config, layers, "mqa", bytes_per_element=elem), per_head,
                 name="MQA bytes", mistakes={("KV heads counted as all H query heads", "把全部 H 个 query 头都算作了 KV 头"):
                                             h * per_head})
    if h % groups == 0:
        assert_equal(mla.kv_cache_bytes_per_token(config, layers, "gqa", num_kv_heads=groups, bytes_per_element=elem),
                     groups * per_head, name="GQA bytes")


def test_cache_bytes_default_to_mla_in_two_byte_elements(impl):
    config = tiny_config(heads=4, d_rope=4, d_c=12)
    assert_equal(impl(MODULE).kv_cache_bytes_per_token(config, 3), (12 + 4) * 3 * 2,
                 name=("kv_cache_bytes_per_token(config, 3): MLA, bf16 by default",
                       "kv_cache_bytes_per_token(config, 3)：MLA，默认 bf16"))


def test_cache_bytes_reject_unknown_kinds_and_bad_groups(impl):
    config = tiny_config(heads=4)
    mla = impl(MODULE)
    for kwargs in ({"attention": "mhla"}, {"attention": "gqa"}, {"attention": "gqa", "num_kv_heads": 3},
                   {"attention": "gqa", "num_kv_heads": 0}):
        with pytest.raises(ValueError):
            mla.kv_cache_bytes_per_token(config, 2, **kwargs)


@pytest.mark.gpu
def test_both_forms_run_on_cuda_tensors(impl, seed):
    config = tiny_config(heads=2, d_c=24)
    w, x = draw(seed, config)
    c_kv, k_pe = reference_latent(x, w, config)
    expected = reference_mla(x, w, config, c_kv, k_pe)
    mla = impl(MODULE)
    cw = {k: v.cuda() for k, v in w.items()}
    got_c, got_k = mla.latent_kv(x.cuda(), cw, config)
    assert_close(got_c.cpu(), c_kv, name=("c_kv on CUDA", "CUDA 上的 c_kv"))
    assert_close(got_k.cpu(), k_pe, name=("k_pe on CUDA", "CUDA 上的 k_pe"))
    assert_close(mla.mla_attention(x.cuda(), cw, config, got_c, got_k).cpu(), expected, name=("naive MLA on CUDA",
                                                                                              "CUDA 上的朴素 MLA"))
    absorbed = mla.absorb_weights(cw, config)
    assert_close(mla.mla_attention_absorbed(x.cuda(), absorbed, config, got_c, got_k).cpu(), expected,
                 name=("absorbed MLA on CUDA", "CUDA 上的吸收形式 MLA"))
