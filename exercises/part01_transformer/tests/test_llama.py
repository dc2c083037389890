"""Visible tests for part01_transformer.llama: run `pytest exercises/part01_transformer -m llama`.

The model is a tiny random LLaMA (infralab.tiny_llama: hidden 64, 2 layers, vocabulary 128,
4 query heads sharing 2 KV heads), or its Qwen2 (q/k/v biases) and Qwen3 (per-head q/k RMSNorm
before RoPE; head_dim 32) variants. These tests check the shapes, the cache's consistency and the
logits against a float64 LLaMA written from the formulas, whose logits (and those of known mistakes)
``golden`` replays from a recording (infralab.golden; a vocabulary of 16 keeps the recording small);
the hidden tests also compare with Hugging Face transformers.
"""
import torch

from infralab.testing import assert_close, assert_equal, expect
from infralab.tiny_llama import tiny_model

MODULE = "part01_transformer.llama"
SMALL_VOCAB = 16  # for the recorded logits


def test_forward_returns_fp32_logits_and_a_cache_of_the_prompt(impl, gen):
    weights, config, _ = tiny_model("llama", gen)
    ids = torch.randint(0, 128, (2, 7), generator=gen)
    logits, cache = impl(MODULE).llama_forward(weights, config, ids)
    assert_equal(tuple(logits.shape), (2, 7, 128), name=("logits shape (B, S, V)", "logits 的形状 (B, S, V)"))
    expect(logits.dtype == torch.float32, "part01.logits_dtype", got=logits.dtype)
    expect(not torch.isnan(logits).any(), "part01.logits_nan", count=int(torch.isnan(logits).sum()), total=logits.numel())
    assert_equal(sorted(cache), ["k", "v"], name=("cache keys", "cache 的键"))
    for name in ("k", "v"):
        assert_equal(tuple(cache[name].shape), (2, 2, 2, 7, 16), name=(f'cache["{name}"] shape (L, B, Hkv, T, Dh)',
                                                                       f'cache["{name}"] 的形状 (L, B, Hkv, T, Dh)'))


def test_cache_grows_by_one_position_per_decode_step(impl, gen):
    weights, config, _ = tiny_model("llama", gen)
    llama = impl(MODULE)
    ids = torch.randint(0, 128, (1, 5), generator=gen)
    _, cache = llama.llama_forward(weights, config, ids)
    for t in range(5, 8):
        logits, cache = llama.llama_forward(weights, config, ids[:, -1:], cache, t)
        assert_equal(tuple(logits.shape), (1, 1, 128), name=("decode logits shape", "decode logits 的形状"))
        assert_equal(tuple(cache["k"].shape), (2, 1, 2, t + 1, 16), name=(f"cache after position {t}",
                                                                          f"位置 {t} 之后的 cache"))


def test_logits_match_a_float64_llama_written_from_the_formulas(impl, golden):
    """Rotate-half RoPE, GQA head h -> KV head h // group, the final RMSNorm before the LM head."""
    weights, config, _ = tiny_model("llama", golden.gen, vocab_size=SMALL_VOCAB)
    ids = torch.randint(0, SMALL_VOCAB, (1, 6), generator=golden.gen)
    logits, _ = impl(MODULE).llama_forward(weights, config, ids)
    assert_close(logits, golden.ref.knob_forward(weights, config, ids), name=("logits vs the float64 reference",
                                                                              "logits 对比 float64 参考实现"),
                 mistakes=golden.ref.llama_mistakes(weights, config, ids))


def test_rms_norm_eps_goes_inside_the_square_root(impl, golden):
    """A large rms_norm_eps (0.5) makes x / sqrt(ms + eps) and x / (sqrt(ms) + eps) differ clearly."""
    weights, config, _ = tiny_model("llama", golden.gen, rms_norm_eps=0.5, vocab_size=SMALL_VOCAB)
    ids = torch.randint(0, SMALL_VOCAB, (1, 5), generator=golden.gen)
    logits, _ = impl(MODULE).llama_forward(weights, config, ids)
    assert_close(logits, golden.ref.knob_forward(weights, config, ids), name=("logits with rms_norm_eps=0.5",
                                                                              "rms_norm_eps=0.5 时的 logits"),
                 mistakes=golden.ref.llama_mistakes(weights, config, ids))


def test_decode_step_equals_the_full_forward_last_position(impl, golden):
    """Prefill 5 tokens, then decode the 6th at start_pos 5: the logits are those of one full forward."""
    weights, config, _ = tiny_model("llama", golden.gen, vocab_size=SMALL_VOCAB)
    llama = impl(MODULE)
    ids = torch.randint(0, SMALL_VOCAB, (1, 6), generator=golden.gen)
    prefill, cache = llama.llama_forward(weights, config, ids[:, :-1])
    step, _ = llama.llama_forward(weights, config, ids[:, -1:], cache, 5)
    assert_close(torch.cat([prefill, step], 1), golden.ref.knob_forward(weights, config, ids),
                 name=("prefill + decode-step logits",
                       "prefill + decode 步的 logits"), mistakes=golden.ref.llama_mistakes(weights, config, ids, [5, 1]))


def test_a_chunk_after_the_cache_sees_its_own_earlier_positions(impl, golden):
    """Prefill 4 tokens, then a chunk of 3 at start_pos 4: causal from the bottom right."""
    weights, config, _ = tiny_model("llama", golden.gen, vocab_size=SMALL_VOCAB)
    llama = impl(MODULE)
    ids = torch.randint(0, SMALL_VOCAB, (1, 7), generator=golden.gen)
    first, cache = llama.llama_forward(weights, config, ids[:, :4])
    chunk, _ = llama.llama_forward(weights, config, ids[:, 4:], cache, 4)
    assert_close(torch.cat([first, chunk], 1), golden.ref.knob_forward(weights, config, ids),
                 name=("prefill in chunks 4+3",
                       "分块 4+3 的 prefill"), mistakes=golden.ref.llama_mistakes(weights, config, ids, [4, 3]))


def test_earlier_logits_do_not_see_later_tokens(impl, gen):
    weights, config, _ = tiny_model("llama", gen)
    llama = impl(MODULE)
    ids = torch.randint(0, 128, (1, 6), generator=gen)
    changed = ids.clone()
    changed[0, -1] = (ids[0, -1] + 1) % 128
    a, _ = llama.llama_forward(weights, config, ids)
    b, _ = llama.llama_forward(weights, config, changed)
    assert_close(b[:, :-1], a[:, :-1], name=("logits of positions before the changed token", "被改动 token 之前各位置的 logits"))


def test_generate_greedy_appends_the_argmax_tokens(impl, gen):
    weights, config, _ = tiny_model("llama", gen)
    llama = impl(MODULE)
    ids = torch.randint(0, 128, (2, 4), generator=gen)
    out = llama.generate_greedy(weights, config, ids, 3)
    assert_equal(tuple(out.shape), (2, 7), name=("generated shape (B, S + N)", "生成结果的形状 (B, S + N)"))
    assert_equal(out[:, :4], ids, name=("the prompt at the start of the output", "输出开头的 prompt"))
    for t in range(4, 7):  # each new token is the argmax of a full forward over what came before
        logits, _ = llama.llama_forward(weights, config, out[:, :t])
        assert_equal(out[:, t], logits[:, -1].argmax(-1), name=f"token {t}")


# ---------------------------------------------------------------- Qwen-style variants, read off the state dict

def test_qwen2_biases_are_added_to_the_q_k_v_projections(impl, golden):
    """Qwen2: q_proj, k_proj and v_proj carry a bias (o_proj none); each is added before RoPE."""
    weights, config, _ = tiny_model("qwen2", golden.gen, vocab_size=SMALL_VOCAB)
    ids = torch.randint(0, SMALL_VOCAB, (1, 6), generator=golden.gen)
    logits, _ = impl(MODULE).llama_forward(weights, config, ids)
    assert_close(logits, golden.ref.knob_forward(weights, config, ids), name=("logits of a Qwen2 model",
                                                                              "Qwen2 模型的 logits"),
                 mistakes=golden.ref.llama_mistakes(weights, config, ids))


def test_qwen3_q_and_k_are_rms_normed_per_head_before_rope_also_when_decoding(impl, golden):
    """Qwen3: q_norm / k_norm over each head's head_dim (32) features, then RoPE; prefill 5 + 1 decode step."""
    weights, config, _ = tiny_model("qwen3", golden.gen, vocab_size=SMALL_VOCAB)
    llama = impl(MODULE)
    ids = torch.randint(0, SMALL_VOCAB, (1, 6), generator=golden.gen)
    prefill, cache = llama.llama_forward(weights, config, ids[:, :-1])
    step, _ = llama.llama_forward(weights, config, ids[:, -1:], cache, 5)
    assert_close(torch.cat([prefill, step], 1), golden.ref.knob_forward(weights, config, ids),
                 name=("Qwen3 prefill + decode-step logits", "Qwen3 prefill + decode 步的 logits"),
                 mistakes=golden.ref.llama_mistakes(weights, config, ids, [5, 1]))


def test_every_bias_the_state_dict_holds_is_added(impl, golden):
    """Qwen3 with attention_bias: q/k/v/o_proj all carry a bias (and the q/k norm stays); chunks 4+3."""
    weights, config, _ = tiny_model("qwen3", golden.gen, vocab_size=SMALL_VOCAB, attention_bias=True)
    llama = impl(MODULE)
    ids = torch.randint(0, SMALL_VOCAB, (1, 7), generator=golden.gen)
    first, cache = llama.llama_forward(weights, config, ids[:, :4])
    chunk, _ = llama.llama_forward(weights, config, ids[:, 4:], cache, 4)
    assert_close(torch.cat([first, chunk], 1), golden.ref.knob_forward(weights, config, ids),
                 name=("logits of Qwen3 with attention_bias, chunks 4+3", "带 attention_bias 的 Qwen3 的 logits，分块 4+3"),
                 mistakes=golden.ref.llama_mistakes(weights, config, ids, [4, 3]))


def test_generate_greedy_of_a_qwen2_model_decodes_with_the_cache(impl, golden):
    """Prefill 4 tokens, then 4 decode steps: the float64 model's greedy tokens (no near ties)."""
    weights, config, _ = tiny_model("qwen2", golden.gen, vocab_size=SMALL_VOCAB)
    ids = torch.randint(0, SMALL_VOCAB, (2, 4), generator=golden.gen)
    out = impl(MODULE).generate_greedy(weights, config, ids, 4)
    assert_equal(out, golden.ref.greedy_tokens(weights, config, ids, 4), name=("greedy tokens of a Qwen2 model",
                                                                               "Qwen2 模型的贪心解码 token"),
                 mistakes=golden.ref.greedy_mistakes(weights, config, ids, 4))
