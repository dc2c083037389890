"""Visible tests for part00_foundations.memory_budget: run `pytest exercises/part00_foundations -m memory_budget`."""
import pytest
import torch

from infralab.testing import assert_equal, expect

MODULE = "part00_foundations.memory_budget"
LLAMA2_7B = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 32, "tie_word_embeddings": False}
LLAMA3_8B_ATTN = {**LLAMA2_7B, "num_key_value_heads": 8}
DEEPSEEK_V2_MLA = {**LLAMA2_7B, "num_hidden_layers": 60, "kv_lora_rank": 512, "qk_rope_head_dim": 64}


def test_param_count_of_a_tiny_gqa_model_by_hand(impl):
    config = {"vocab_size": 100, "hidden_size": 16, "intermediate_size": 40, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "tie_word_embeddings": False}
    # 2*100*16 + 2 * (2*16*16 + 2*16*8 + 3*16*40 + 2*16) + 16
    assert_equal(impl(MODULE).param_count(config), 8656, name=("parameters of the tiny model", "小模型的参数量"),
                 mistakes={("K and V counted with the query heads", "K 和 V 按查询头数计算"): 8656 + 2 * 2 * 16 * 8})
    tied = {**config, "tie_word_embeddings": True}
    assert_equal(impl(MODULE).param_count(tied), 8656 - 1600, name=("parameters with tied embeddings",
                                                                    "共享嵌入（tied embeddings）时的参数量"),
                 mistakes={("tied lm_head counted twice", "共享权重的 lm_head 被算了两次"): 8656})


def test_param_count_of_llama2_7b(impl):
    assert_equal(impl(MODULE).param_count(LLAMA2_7B), 6738415616, name="LLaMA-2-7B parameters")


def test_zero_paper_example_7_5b_on_64_gpus(impl):
    """ZeRO paper, Figure 1: Psi = 7.5B, N_d = 64, K = 12: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB."""
    m = impl(MODULE)
    totals = [m.model_state_bytes(7_500_000_000, dp=64, zero_stage=z)["total"] / 1e9 for z in range(4)]
    expected = [120.0, 31.40625, 16.640625, 1.875]
    expect(totals == pytest.approx(expected), "part00.zero_totals", got=totals, expected=expected)


def test_adam_optimizer_states_are_12_bytes_per_parameter(impl):
    states = impl(MODULE).model_state_bytes(1000)
    expected = {"params": 2000, "grads": 2000, "optimizer": 12000, "total": 16000}
    expect(states == pytest.approx(expected), "part00.adam_states", got=states, expected=expected)


def test_activations_without_recomputation_follow_korthikanti(impl):
    m = impl(MODULE)
    # L * s*b*h * (34 + 5*a*s/h) with s = 2048, b = 1
    got = m.activation_bytes(LLAMA2_7B, seq_len=2048, micro_batch=1)
    expected = 32 * 2048 * 4096 * (34 + 5 * 32 * 2048 / 4096)
    expect(got == pytest.approx(expected), "part00.activations_no_recompute", got=got, expected=expected)
    full = m.activation_bytes(LLAMA2_7B, seq_len=2048, micro_batch=1, recompute="full")
    expected = 32 * 2 * 2048 * 4096
    expect(full == pytest.approx(expected), "part00.activations_full_recompute", got=full, expected=expected)


def test_kv_cache_uses_the_kv_heads(impl):
    m = impl(MODULE)
    per_token = m.kv_cache_bytes(LLAMA3_8B_ATTN, tokens=1, dtype=torch.bfloat16)
    assert_equal(per_token, 2 * 32 * 8 * 128 * 2, name=("bf16 KV cache bytes per token, 8 KV heads",
                                                        "每个 token 的 bf16 KV cache 字节数，8 个 KV 头"),
                 mistakes={("query heads used instead of KV heads", "用了查询头数而不是 KV 头数"): 2 * 32 * 32 * 128 * 2,
                           ("K only (the factor 2 for K and V forgotten)",
                            "只算了 K（忘了 K 和 V 的因子 2）"): 32 * 8 * 128 * 2})
    assert_equal(m.kv_cache_bytes(LLAMA2_7B, tokens=4096, dtype=torch.float16), 2 * 32 * 32 * 128 * 4096 * 2,
                 name=("MHA KV cache of 4096 fp16 tokens", "4096 个 fp16 token 的 MHA KV cache"))
    assert_equal(m.kv_cache_bytes(DEEPSEEK_V2_MLA, tokens=1), 60 * (512 + 64) * 2,
                 name=("MLA cache per token (latent + RoPE key)", "每个 token 的 MLA cache（latent + RoPE key）"))


def test_pipeline_stages_do_not_shrink_the_first_stages_activations(impl):
    m = impl(MODULE)
    one = m.activation_bytes(LLAMA2_7B, seq_len=1024, micro_batch=2, tp=2, sequence_parallel=True)
    four = m.activation_bytes(LLAMA2_7B, seq_len=1024, micro_batch=2, tp=2, pp=4, sequence_parallel=True)
    expect(four == pytest.approx(one), "part00.pp_activations", four=four, one=one)
