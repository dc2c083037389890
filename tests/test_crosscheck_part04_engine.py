"""The part04 engine reference agrees with transformers (pinned: 5.17.x) and with part01's
``generate_greedy``: greedy tokens of a batch of requests, with chunked prefill, preemption and the
prefix cache switched on, equal transformers' ``generate(do_sample=False)`` run on each prompt alone
(``LlamaForCausalLM``, ``Qwen2ForCausalLM`` with its q/k/v biases, ``Qwen3ForCausalLM`` with its
per-head q/k norm; eager attention, fp32, the same random weights from infralab.tiny_llama). Fixed
seeds: the comparison is exact token for token, so a seed is kept only if no greedy step of
transformers is a near tie (infralab.tiny_llama.hf_greedy compares every position: checked).
"""
import pytest
import torch

from infralab.tiny_llama import hf_greedy, tiny_model
from solutions.part01_transformer import llama
from solutions.part04_serving.engine import LLMEngine, SamplingParams

transformers = pytest.importorskip("transformers")
if not transformers.__version__.startswith("5.17."):
    pytest.skip(f"checked against transformers 5.17.x, found {transformers.__version__}", allow_module_level=True)

MAX_TOKENS = 8
ENGINES = {  # num_blocks, block_size, max_num_batched_tokens, prefix caching
    "batched": (64, 4, 64, False),
    "chunked_preempting_prefix_cached": (9, 2, 5, True),
}
MODELS = {  # family, config overrides
    "llama_gqa": ("llama", {}),
    "llama_mqa": ("llama", {"num_key_value_heads": 1}),
    "qwen2_qkv_bias": ("qwen2", {}),
    "qwen3_qk_norm": ("qwen3", {}),
}


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("name", sorted(ENGINES))
def test_engine_greedy_equals_transformers_generate_and_generate_greedy(name, model):
    family, overrides = MODELS[model]
    weights, config, hf = tiny_model(family, 15, hf=True, **overrides)
    assert (family == "qwen2") == any(n.endswith("q_proj.bias") for n in weights)
    assert (family == "qwen3") == any(n.endswith("q_norm.weight") for n in weights)
    gen = torch.Generator().manual_seed(41)
    prompts = [torch.randint(0, 128, (n,), generator=gen).tolist() for n in (6, 3, 9, 5)]
    prompts.append(prompts[2][:6] + [7])  # shares a prefix with a request that ran before it
    blocks, block_size, budget, prefix = ENGINES[name]
    engine = LLMEngine(weights, config, num_blocks=blocks, block_size=block_size, max_num_batched_tokens=budget,
                       enable_prefix_caching=prefix)
    got = engine.generate(prompts[:4], SamplingParams(max_tokens=MAX_TOKENS))
    got += engine.generate(prompts[4:], SamplingParams(max_tokens=MAX_TOKENS))
    for prompt, out in zip(prompts, got):
        ids = torch.tensor([prompt])
        want, compared = hf_greedy(hf, ids, MAX_TOKENS)
        assert compared == len(prompt) + MAX_TOKENS, "a near tie in transformers' greedy steps: pick another seed"
        assert out == want[0, len(prompt):].tolist()
        assert out == llama.generate_greedy(weights, config, ids, MAX_TOKENS)[0, len(prompt):].tolist()
    if name != "batched":
        stats = engine.stats()
        assert stats["preemptions"] > 0 and stats["cached_tokens"] > 0, stats
