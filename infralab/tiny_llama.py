"""Tiny random LLaMA models for tests: a config dict, random weights under the Hugging Face names,
and (for the kit's own checks and the hidden tests) the same model as transformers'
``LlamaForCausalLM``.

The weights are drawn so that signals keep unit scale through the layers (projections
``N(0, 1/fan_in)``, norm weights ``1 + N(0, 0.2²)``): attention is far from uniform and every
part of the forward (RoPE pairing, the norms' eps, the final norm) moves the logits well beyond
fp32 rounding. The default config is small enough for a CPU test: hidden 64, 2 layers,
vocabulary 128, 4 query heads sharing 2 KV heads.
"""
from __future__ import annotations

from typing import Any

import torch

DEFAULT_CONFIG: dict[str, Any] = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 112,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "head_dim": None,
    "tie_word_embeddings": False,
}


def tiny_llama_config(**overrides: Any) -> dict[str, Any]:
    """The default tiny config with ``overrides`` applied (unknown keys are an error)."""
    unknown = set(overrides) - set(DEFAULT_CONFIG)
    if unknown:
        raise KeyError(f"not LLaMA config keys: {sorted(unknown)}")
    return {**DEFAULT_CONFIG, **overrides}


def head_dim(config: dict[str, Any]) -> int:
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def random_llama_weights(config: dict[str, Any], generator: torch.Generator,
                         dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """A state dict with ``LlamaForCausalLM``'s names; no ``lm_head.weight`` when embeddings are tied."""
    d, f, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    hd, hq, hkv = head_dim(config), config["num_attention_heads"], config["num_key_value_heads"]

    def linear(out_features: int, in_features: int) -> torch.Tensor:
        return torch.randn(out_features, in_features, generator=generator) * in_features ** -0.5

    def norm(n: int) -> torch.Tensor:
        return 1.0 + 0.2 * torch.randn(n, generator=generator)

    w = {"model.embed_tokens.weight": torch.randn(v, d, generator=generator)}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(d)
        w[p + "self_attn.q_proj.weight"] = linear(hq * hd, d)
        w[p + "self_attn.k_proj.weight"] = linear(hkv * hd, d)
        w[p + "self_attn.v_proj.weight"] = linear(hkv * hd, d)
        w[p + "self_attn.o_proj.weight"] = linear(d, hq * hd)
        w[p + "post_attention_layernorm.weight"] = norm(d)
        w[p + "mlp.gate_proj.weight"] = linear(f, d)
        w[p + "mlp.up_proj.weight"] = linear(f, d)
        w[p + "mlp.down_proj.weight"] = linear(d, f)
    w["model.norm.weight"] = norm(d)
    if not config.get("tie_word_embeddings", False):
        w["lm_head.weight"] = linear(v, d)
    return {name: t.to(dtype) for name, t in w.items()}


def hf_llama(config: dict[str, Any], weights: dict[str, torch.Tensor]):
    """transformers' ``LlamaForCausalLM`` (eager attention, fp32, eval mode) holding ``weights``.

    Needs the ``dev`` extra (transformers 5.17); generation never stops at an EOS token, so
    ``generate(max_new_tokens=N)`` always adds N tokens. Pass ``attention_mask=ones`` to
    ``generate``: without it HF treats prompt tokens equal to ``pad_token_id`` (0) as padding.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    hf_config = LlamaConfig(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"],
        intermediate_size=config["intermediate_size"], num_hidden_layers=config["num_hidden_layers"],
        num_attention_heads=config["num_attention_heads"], num_key_value_heads=config["num_key_value_heads"],
        head_dim=head_dim(config), rms_norm_eps=config["rms_norm_eps"], rope_theta=config["rope_theta"],
        tie_word_embeddings=config.get("tie_word_embeddings", False), max_position_embeddings=4096,
        attention_bias=False, mlp_bias=False, attn_implementation="eager",
        bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )
    model = LlamaForCausalLM(hf_config).to(torch.float32).eval()
    missing, unexpected = model.load_state_dict({k: t.float() for k, t in weights.items()}, strict=False)
    allowed_missing = {"lm_head.weight"} if hf_config.tie_word_embeddings else set()
    if set(missing) - allowed_missing or unexpected:
        raise KeyError(f"weights do not fit LlamaForCausalLM: missing {missing}, unexpected {unexpected}")
    if hf_config.tie_word_embeddings:
        model.tie_weights()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model
