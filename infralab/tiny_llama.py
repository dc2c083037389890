"""Tiny random models of the LLaMA family for tests: LLaMA, Qwen2 and Qwen3. A config dict, random
weights under the Hugging Face names, and (for the kit's own checks and the hidden tests) the same
model as transformers' ``LlamaForCausalLM`` / ``Qwen2ForCausalLM`` / ``Qwen3ForCausalLM``.

The one entry point for a test or an exercise that needs a model::

    weights, config, hf = tiny_model("qwen3", seed=0, hf=True, num_hidden_layers=3)

and, to compare greedy tokens with transformers' ``generate`` (only up to a near tie)::

    expected, compared = hf_greedy(hf, prompt_ids, max_new_tokens)

The families differ only in their biases and Qwen3's q/k norm (transformers 5.17's modeling files):

- ``llama``: no biases unless ``attention_bias`` (q/k/v/o_proj.bias) or ``mlp_bias``
  (gate/up/down_proj.bias), as ``LlamaConfig`` names them;
- ``qwen2``: ``q_proj``, ``k_proj`` and ``v_proj`` always carry a bias, ``o_proj`` never;
- ``qwen3``: ``self_attn.q_norm.weight`` / ``k_norm.weight`` ``(head_dim,)``: an RMSNorm (eps
  ``rms_norm_eps``) over each head's ``head_dim`` features of q and k, after the head split and
  before RoPE; q/k/v/o biases only with ``attention_bias``; ``head_dim`` set explicitly (32 here,
  so ``Hq * Dh != hidden_size``), as Qwen3 checkpoints do.

The weights are drawn so that signals keep unit scale through the layers (projections
``N(0, 1/fan_in)``, biases ``N(0, 0.5²)``, norm weights ``1 + N(0, 0.2²)``): attention is far from
uniform and every part of the forward (RoPE pairing, the norms' eps, the final norm, each bias,
the q/k norm's per-feature weight, which does not commute with RoPE) moves the logits well beyond
fp32 rounding. The default config is small enough for a CPU test: hidden 64, 2 layers, vocabulary
128, 4 query heads sharing 2 KV heads. A LLaMA config has no ``model_type`` key (absent means
``"llama"``), so the plain LLaMA configs and weights are exactly those the kit always used.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import torch

from infralab.i18n import tr

FAMILIES = ("llama", "qwen2", "qwen3")

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
# Per family: the keys it adds to DEFAULT_CONFIG (always present) and the optional keys an override may set.
_FAMILY_KEYS: dict[str, dict[str, Any]] = {
    "llama": {},
    "qwen2": {"model_type": "qwen2"},
    "qwen3": {"model_type": "qwen3", "head_dim": 32, "attention_bias": False},
}
_OPTIONAL_KEYS: dict[str, set[str]] = {"llama": {"attention_bias", "mlp_bias"}, "qwen2": set(), "qwen3": set()}


class TinyModel(NamedTuple):
    weights: dict[str, torch.Tensor]
    config: dict[str, Any]
    hf: Any  # the transformers model, or None unless asked for


def tiny_model(family: str = "llama", seed: int | torch.Generator = 0, *, dtype: torch.dtype = torch.float32,
               hf: bool = False, **overrides: Any) -> TinyModel:
    """A tiny random model of ``family`` ("llama" | "qwen2" | "qwen3"): ``(weights, config, hf)``.

    Args:
        family: which attention block (module docstring).
        seed: an int (a fresh ``torch.Generator`` seeded with it) or a generator to draw from.
        dtype: of the weights (drawn in fp32, then cast).
        hf: also build the matching transformers model (fp32, eager attention; slow to import);
            else ``hf`` is None.
        **overrides: config keys replacing the family's defaults (:func:`tiny_llama_config`).

    Returns:
        ``TinyModel(weights, config, hf)``: the state dict under transformers' names, the config
        dict, and ``hf_llama(config, weights)`` or None. The same seed gives the same model.
    """
    config = tiny_llama_config(family, **overrides)
    gen = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(seed)
    weights = random_llama_weights(config, gen, dtype)
    return TinyModel(weights, config, hf_llama(config, weights) if hf else None)


def tiny_llama_config(family: str = "llama", **overrides: Any) -> dict[str, Any]:
    """The default tiny config of ``family`` with ``overrides`` applied (unknown keys are an error)."""
    if family not in FAMILIES:
        raise KeyError(tr("tiny_llama.unknown_family", family=family, families=", ".join(FAMILIES)))
    base = {**DEFAULT_CONFIG, **_FAMILY_KEYS[family]}
    unknown = set(overrides) - (set(base) - {"model_type"}) - _OPTIONAL_KEYS[family]  # the family sets model_type
    if unknown:
        raise KeyError(tr("tiny_llama.unknown_keys", family=family, keys=sorted(unknown)))
    return {**base, **overrides}


def family_of(config: dict[str, Any]) -> str:
    return config.get("model_type", "llama")


def head_dim(config: dict[str, Any]) -> int:
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def biased_projections(config: dict[str, Any]) -> tuple[str, ...]:
    """The ``*_proj`` linears of a layer that carry a bias in ``config``'s family (transformers 5.17)."""
    family = family_of(config)
    attention = ("q_proj", "k_proj", "v_proj", "o_proj")
    if family == "qwen2":
        return attention[:3]
    names = attention if config.get("attention_bias", False) else ()
    if family == "llama" and config.get("mlp_bias", False):
        names += ("gate_proj", "up_proj", "down_proj")
    return names


def random_llama_weights(config: dict[str, Any], generator: torch.Generator,
                         dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """A state dict with transformers' names for ``config``'s family; no ``lm_head.weight`` when
    embeddings are tied. A plain LLaMA config draws exactly the tensors it always drew."""
    d, f, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    hd, hq, hkv = head_dim(config), config["num_attention_heads"], config["num_key_value_heads"]
    biased, qk_norm = biased_projections(config), family_of(config) == "qwen3"

    def linear(out_features: int, in_features: int) -> torch.Tensor:
        return torch.randn(out_features, in_features, generator=generator) * in_features ** -0.5

    def norm(n: int) -> torch.Tensor:
        return 1.0 + 0.2 * torch.randn(n, generator=generator)

    w = {"model.embed_tokens.weight": torch.randn(v, d, generator=generator)}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes = {"self_attn.q_proj": (hq * hd, d), "self_attn.k_proj": (hkv * hd, d),
                  "self_attn.v_proj": (hkv * hd, d), "self_attn.o_proj": (d, hq * hd),
                  "mlp.gate_proj": (f, d), "mlp.up_proj": (f, d), "mlp.down_proj": (d, f)}
        w[p + "input_layernorm.weight"] = norm(d)
        for name in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"):
            w[p + name + ".weight"] = linear(*shapes[name])
        w[p + "post_attention_layernorm.weight"] = norm(d)
        for name in ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"):
            w[p + name + ".weight"] = linear(*shapes[name])
        for name, (out_features, _) in shapes.items():  # drawn after the plain LLaMA tensors of the layer
            if name.split(".")[1] in biased:
                w[p + name + ".bias"] = 0.5 * torch.randn(out_features, generator=generator)
        if qk_norm:
            w[p + "self_attn.q_norm.weight"] = norm(hd)
            w[p + "self_attn.k_norm.weight"] = norm(hd)
    w["model.norm.weight"] = norm(d)
    if not config.get("tie_word_embeddings", False):
        w["lm_head.weight"] = linear(v, d)
    return {name: t.to(dtype) for name, t in w.items()}


NEAR_TIE = 1e-4  # a top-2 logit gap below this may go either way under a correct answer's fp32 rounding


def hf_greedy(hf, ids: torch.Tensor, n: int) -> tuple[torch.Tensor, int]:
    """transformers' greedy continuation of ``ids`` by ``n`` tokens, ``(B, S + n)``, and how many
    of its leading positions an answer must match: all ``S + n``, or up to the first step where
    some row's top two logits are within NEAR_TIE (a correct answer's fp32 rounding may break that
    tie the other way, and then every later token differs too). Uses an explicit all-ones
    attention mask (HF would otherwise take tokens equal to pad_token_id for padding)."""
    with torch.no_grad():
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False,
                          output_logits=True, return_dict_in_generate=True)
    if n == 0:
        return out.sequences, ids.shape[1]
    top2 = torch.stack([step.float().topk(2, dim=-1).values for step in out.logits])  # (n, B, 2)
    near_ties = ((top2[..., 0] - top2[..., 1]) < NEAR_TIE).any(dim=1).nonzero()
    return out.sequences, ids.shape[1] + (n if len(near_ties) == 0 else int(near_ties[0]))


def hf_llama(config: dict[str, Any], weights: dict[str, torch.Tensor]):
    """transformers' model of ``config``'s family (``LlamaForCausalLM``, ``Qwen2ForCausalLM`` or
    ``Qwen3ForCausalLM``; eager attention, fp32, eval mode, no sliding window) holding ``weights``.

    Needs the ``dev`` extra (transformers 5.17); generation never stops at an EOS token, so
    ``generate(max_new_tokens=N)`` always adds N tokens. Pass ``attention_mask=ones`` to
    ``generate``: without it HF treats prompt tokens equal to ``pad_token_id`` (0) as padding.
    Raises KeyError when the weights do not fit the model exactly.
    """
    import transformers

    family = family_of(config)
    common = dict(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"],
        intermediate_size=config["intermediate_size"], num_hidden_layers=config["num_hidden_layers"],
        num_attention_heads=config["num_attention_heads"], num_key_value_heads=config["num_key_value_heads"],
        head_dim=head_dim(config), rms_norm_eps=config["rms_norm_eps"], rope_theta=config["rope_theta"],
        tie_word_embeddings=config.get("tie_word_embeddings", False), max_position_embeddings=4096,
        attn_implementation="eager", bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )
    if family == "llama":
        hf_config = transformers.LlamaConfig(**common, attention_bias=config.get("attention_bias", False),
                                             mlp_bias=config.get("mlp_bias", False))
        model_class = transformers.LlamaForCausalLM
    elif family == "qwen2":
        hf_config = transformers.Qwen2Config(**common, use_sliding_window=False)
        model_class = transformers.Qwen2ForCausalLM
    else:
        hf_config = transformers.Qwen3Config(**common, attention_bias=config.get("attention_bias", False),
                                             use_sliding_window=False)
        model_class = transformers.Qwen3ForCausalLM
    model = model_class(hf_config).to(torch.float32).eval()
    missing, unexpected = model.load_state_dict({k: t.float() for k, t in weights.items()}, strict=False)
    allowed_missing = {"lm_head.weight"} if hf_config.tie_word_embeddings else set()
    if set(missing) - allowed_missing or unexpected:
        raise KeyError(tr("tiny_llama.weights_misfit", model=model_class.__name__, missing=missing,
                          unexpected=unexpected))
    if hf_config.tie_word_embeddings:
        model.tie_weights()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model
