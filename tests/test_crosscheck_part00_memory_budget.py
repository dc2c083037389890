"""Cross-check: part00_foundations.memory_budget (the reference solution) against real transformers
modules: the parameter count equals ``sum(p.numel())`` of a ``LlamaForCausalLM`` built from a tiny
random config (tied and untied, MHA/GQA, explicit head_dim), and the KV-cache bytes equal the bytes of
the ``past_key_values`` tensors a forward pass leaves behind."""
from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers (dev extra) not installed")

from solutions.part00_foundations import memory_budget  # noqa: E402

CONFIGS = [
    dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
         num_key_value_heads=4, tie_word_embeddings=False),
    dict(vocab_size=101, hidden_size=48, intermediate_size=40, num_hidden_layers=3, num_attention_heads=6,
         num_key_value_heads=2, tie_word_embeddings=True),
    dict(vocab_size=64, hidden_size=32, intermediate_size=24, num_hidden_layers=1, num_attention_heads=4,
         num_key_value_heads=1, tie_word_embeddings=False, head_dim=16),
]


def build(config: dict):
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**config)).eval()


@pytest.mark.parametrize("config", CONFIGS, ids=["mha-untied", "gqa-tied", "mqa-head-dim"])
def test_param_count_equals_llama_for_causal_lm(config):
    model = build(config)
    assert memory_budget.param_count(config) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("config", CONFIGS, ids=["mha-untied", "gqa-tied", "mqa-head-dim"])
def test_kv_cache_bytes_equal_the_cache_of_a_forward_pass(config):
    model = build(config).to(torch.bfloat16)
    ids = torch.randint(0, config["vocab_size"], (2, 7))
    with torch.no_grad():
        past = model(input_ids=ids, use_cache=True).past_key_values
    cached = sum(t.numel() * t.element_size() for layer in past.layers for t in (layer.keys, layer.values))
    assert memory_budget.kv_cache_bytes(config, tokens=2 * 7, dtype=torch.bfloat16) == cached
