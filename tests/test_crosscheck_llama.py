"""The part01 llama and sampling reference solutions agree with transformers (pinned: 5.17.x).

llama vs ``LlamaForCausalLM``, ``Qwen2ForCausalLM`` and ``Qwen3ForCausalLM`` (eager attention,
fp32) holding the same random weights (infralab.tiny_llama.tiny_model): logits, the KV cache,
chunked prefill, greedy generation, tied embeddings, GQA/MQA/MHA, Qwen2's q/k/v biases, Qwen3's
per-head q/k norm (with and without attention_bias), LLaMA's attention_bias and mlp_bias. Sampling filters
vs transformers' logits processors (``TemperatureLogitsWarper``, ``TopKLogitsWarper``,
``TopPLogitsWarper``, ``MinPLogitsWarper``, ``RepetitionPenaltyLogitsProcessor``) on random
logits, thresholds drawn clear of the boundaries (HF breaks top-p ties by sort order; we keep tied
tokens together, so tied inputs are not compared).
"""
import math

import pytest
import torch

from infralab.stats import threshold_clear_of
from infralab.testing import assert_close, assert_equal
from infralab.tiny_llama import hf_greedy, hf_llama, tiny_model
from solutions.part01_transformer import llama, sampling

transformers = pytest.importorskip("transformers")
if not transformers.__version__.startswith("5.17."):
    pytest.skip(f"checked against transformers 5.17.x, found {transformers.__version__}", allow_module_level=True)
from transformers.generation.logits_process import (  # noqa: E402
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

CONFIGS = [  # (family, overrides)
    ("llama", {}),
    ("llama", {"num_key_value_heads": 1, "head_dim": 32, "rope_theta": 500000.0}),
    ("llama", {"num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 8}),
    ("llama", {"num_key_value_heads": 4, "rms_norm_eps": 0.3}),
    ("llama", {"tie_word_embeddings": True, "num_hidden_layers": 3}),
    ("llama", {"attention_bias": True, "mlp_bias": True}),
    ("qwen2", {}),
    ("qwen2", {"num_key_value_heads": 1, "head_dim": 32, "rope_theta": 1000000.0, "tie_word_embeddings": True}),
    ("qwen3", {}),
    ("qwen3", {"attention_bias": True, "num_attention_heads": 8, "head_dim": 16, "rms_norm_eps": 1e-6}),
]


def config_id(i):
    family, overrides = CONFIGS[i]
    words = "-".join(f"{k}={v}" for k, v in overrides.items())
    return "-".join(w for w in ("" if family == "llama" else family, words) if w) or "default"


@pytest.fixture(params=range(len(CONFIGS)), ids=config_id)
def tiny(request):
    family, overrides = CONFIGS[request.param]
    return tiny_model(family, 1000 + request.param, hf=True, **overrides)


def test_llama_logits_and_cache_equal_hf(tiny):
    weights, config, hf = tiny
    ids = torch.randint(0, config["vocab_size"], (2, 13), generator=torch.Generator().manual_seed(1))
    logits, cache = llama.llama_forward(weights, config, ids)
    with torch.no_grad():
        out = hf(ids, use_cache=True)
    assert_close(logits, out.logits, name=f"logits vs {type(hf).__name__}")
    assert_close(cache["k"], torch.stack([layer.keys for layer in out.past_key_values.layers]), name="cached keys")
    assert_close(cache["v"], torch.stack([layer.values for layer in out.past_key_values.layers]), name="cached values")


def test_llama_chunked_prefill_and_decode_equal_hf(tiny):
    weights, config, hf = tiny
    ids = torch.randint(0, config["vocab_size"], (2, 12), generator=torch.Generator().manual_seed(2))
    outs, cache, start = [], None, 0
    for size in (4, 5, 1, 1, 1):
        logits, cache = llama.llama_forward(weights, config, ids[:, start:start + size], cache, start)
        outs.append(logits)
        start += size
    with torch.no_grad():
        expected = hf(ids).logits
    assert_close(torch.cat(outs, 1), expected, name="chunks 4+5 then three decode steps vs one HF forward")


def test_llama_greedy_generation_equals_hf_generate(tiny):
    weights, config, hf = tiny
    ids = torch.randint(0, config["vocab_size"], (3, 6), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False)
    assert_equal(llama.generate_greedy(weights, config, ids, 10), expected, name="greedy tokens vs HF generate")


def random_logits(seed, b=6, v=64, scale=2.5):
    return torch.randn(b, v, generator=torch.Generator().manual_seed(seed)) * scale


def top_p_boundaries(z):
    """Every cumulative mass a top-p threshold must stay clear of (HF's ascending-sort cut-offs)."""
    q = torch.softmax(z.double(), -1).sort(-1, descending=True).values
    return torch.cat([q.cumsum(-1), 1 - q.flip(-1).cumsum(-1)], -1)


@pytest.mark.parametrize("seed", range(5))
def test_sampling_filters_equal_hf_logits_processors(seed):
    z = random_logits(seed)
    g = torch.Generator().manual_seed(100 + seed)
    ids = torch.randint(0, 64, (6, 20), generator=g)
    for t in (0.4, 1.7):
        assert_close(sampling.apply_temperature(z, t), TemperatureLogitsWarper(t)(ids, z), name=f"temperature {t}")
    for k in (1, 5, 64):
        assert_equal(sampling.top_k_filter(z, k), TopKLogitsWarper(k)(ids, z), name=f"top-{k}")
    p = threshold_clear_of(top_p_boundaries(z), 0.05, 0.98, g)
    assert_equal(sampling.top_p_filter(z, p), TopPLogitsWarper(p)(ids, z), name=f"top-p {p:.4f}")
    probs = torch.softmax(z.double(), -1)
    m = threshold_clear_of(probs / probs.amax(-1, keepdim=True), 0.01, 0.5, g)
    assert_equal(sampling.min_p_filter(z, m), MinPLogitsWarper(m)(ids, z), name=f"min-p {m:.4f}")
    for penalty in (0.8, 1.3, 2.0):
        assert_close(sampling.apply_repetition_penalty(z, ids, penalty),
                     RepetitionPenaltyLogitsProcessor(penalty)(ids, z.clone()), name=f"repetition penalty {penalty}")


def test_top_k_ties_are_kept_as_in_hf():
    z = torch.randint(-3, 4, (8, 30), generator=torch.Generator().manual_seed(7)).float()
    for k in (2, 5, 11):
        assert_equal(sampling.top_k_filter(z, k), TopKLogitsWarper(k)(None, z), name=f"top-{k} with ties")


def test_hf_greedy_compares_only_up_to_a_near_tie():
    """At a near tie either token is a right answer: the second-best token's LM-head row is the best
    one's with one element moved so that its logit is 1e-6 above, then 1e-6 below (4 fp32 ulps of the
    logit: the float64 answer, cast to fp32, follows it on any machine). The two float64 answers
    differ from the first new token on, so an exact comparison with HF would fail one of them; HF's
    fp32 logits, a few ulps off in a direction that depends on the CPU's kernels, may go either way.
    hf_greedy compares both only up to the tie. (An earlier version of this test required float64
    and HF to split at some gap; that depends on the CPU's fp32 rounding and stopped holding on one.)"""
    weights, config, _ = tiny_model("llama", 5)
    ids = torch.randint(0, config["vocab_size"], (1, 5), generator=torch.Generator().manual_seed(1))
    probe = {k: t.double() for k, t in weights.items()}
    probe["lm_head.weight"] = torch.eye(config["vocab_size"], config["hidden_size"], dtype=torch.float64)
    h = llama.llama_forward(probe, config, ids)[0][0, -1, :config["hidden_size"]].double()  # the last normed hidden
    best, second = llama.llama_forward(weights, config, ids)[0][0, -1].topk(2).indices.tolist()
    base = weights["lm_head.weight"][best].clone()
    j = int(h.abs().argmax())
    ulp = float(torch.finfo(torch.float32).eps) * 2.0 ** math.floor(math.log2(abs(float(base[j]))))
    first_new = {}
    for gap in (1e-6, -1e-6):
        row = base.clone()
        row[j] = float(base[j]) + round(gap / (ulp * float(h[j]))) * ulp  # n ulps of row[j]
        weights["lm_head.weight"][second] = row
        got = llama.generate_greedy({k: t.double() for k, t in weights.items()}, config, ids, 6)
        expected, compared = hf_greedy(hf_llama(config, weights), ids, 6)
        assert_equal(compared, ids.shape[1], name="positions compared (the tie is at the first new token)")
        assert_equal(got[:, :compared], expected[:, :compared], name="tokens before the near tie")
        first_new[gap] = int(got[0, compared])
    assert first_new == {1e-6: second, -1e-6: best}, first_new
