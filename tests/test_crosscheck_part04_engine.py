"""The part04 engine reference agrees with transformers (pinned: 5.17.x) and with part01's
``generate_greedy``: greedy tokens of a batch of requests, with chunked prefill, preemption and the
prefix cache switched on, equal transformers' ``generate(do_sample=False)`` run on each prompt alone
(``LlamaForCausalLM``, eager attention, fp32, the same random weights). Fixed seeds: the comparison is
exact token for token, so a seed is kept only if no greedy step of the reference is a near-tie (the
gap between the two best logits is checked and reported).

Qwen2 (q/k/v bias) and Qwen3 (per-head q/k norm) weights: the reference engine against
Qwen2ForCausalLM / Qwen3ForCausalLM. TODO(lead, after the llamaflags merge): build those models
with infralab.tiny_llama's Qwen options, compare with part01 ``generate_greedy`` too, and add the
students' hidden tests (graders/part04_serving/test_engine.py says how).
"""
import pytest
import torch

from infralab.tiny_llama import hf_llama, random_llama_weights, tiny_llama_config
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


@pytest.mark.parametrize("kv_heads", [2, 1])
@pytest.mark.parametrize("name", sorted(ENGINES))
def test_engine_greedy_equals_transformers_generate_and_generate_greedy(name, kv_heads):
    config = tiny_llama_config(num_key_value_heads=kv_heads)
    weights = random_llama_weights(config, torch.Generator().manual_seed(14))
    gen = torch.Generator().manual_seed(41)
    prompts = [torch.randint(0, 128, (n,), generator=gen).tolist() for n in (6, 3, 9, 5)]
    prompts.append(prompts[2][:6] + [7])  # shares a prefix with a request that ran before it
    blocks, block_size, budget, prefix = ENGINES[name]
    engine = LLMEngine(weights, config, num_blocks=blocks, block_size=block_size, max_num_batched_tokens=budget,
                       enable_prefix_caching=prefix)
    got = engine.generate(prompts[:4], SamplingParams(max_tokens=MAX_TOKENS))
    got += engine.generate(prompts[4:], SamplingParams(max_tokens=MAX_TOKENS))
    hf = hf_llama(config, weights)
    for prompt, out in zip(prompts, got):
        ids = torch.tensor([prompt])
        with torch.no_grad():
            result = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=MAX_TOKENS,
                                 do_sample=False, output_logits=True, return_dict_in_generate=True)
        gaps = [float(s[0].topk(2).values.diff().abs()) for s in result.logits]
        assert min(gaps) > 1e-4, f"a near-tie in the reference ({min(gaps):.2e}): pick another seed"
        assert out == result.sequences[0, len(prompt):].tolist()
        assert out == llama.generate_greedy(weights, config, ids, MAX_TOKENS)[0, len(prompt):].tolist()
    if name != "batched":
        stats = engine.stats()
        assert stats["preemptions"] > 0 and stats["cached_tokens"] > 0, stats


@pytest.mark.parametrize("family", ["qwen2", "qwen3"])
def test_engine_reads_qwen_weights_by_their_presence(family):
    """Qwen2's q/k/v biases and Qwen3's per-head q/k RMSNorm, read by paged_forward when the weights
    carry them: greedy tokens equal Qwen2ForCausalLM / Qwen3ForCausalLM's ``generate`` (fp32)."""
    hf_cls = {"qwen2": "Qwen2", "qwen3": "Qwen3"}[family]
    config = tiny_llama_config(num_key_value_heads=2, head_dim=16)
    hf_config = getattr(transformers, f"{hf_cls}Config")(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"], intermediate_size=config["intermediate_size"],
        num_hidden_layers=config["num_hidden_layers"], num_attention_heads=config["num_attention_heads"],
        num_key_value_heads=2, head_dim=16, rms_norm_eps=config["rms_norm_eps"], rope_theta=config["rope_theta"],
        tie_word_embeddings=False, max_position_embeddings=512, attn_implementation="eager",
        bos_token_id=None, eos_token_id=None, pad_token_id=None)
    hf = getattr(transformers, f"{hf_cls}ForCausalLM")(hf_config).float().eval()
    gen = torch.Generator().manual_seed(14)
    weights = {}
    for name, t in hf.state_dict().items():
        noise = torch.randn(t.shape, generator=gen)
        weights[name] = 1 + 0.2 * noise if name.endswith("norm.weight") else \
            0.3 * noise if t.dim() == 1 else noise * t.shape[-1] ** -0.5
    assert any(n.endswith("q_proj.bias") for n in weights) == (family == "qwen2")
    assert any(n.endswith("q_norm.weight") for n in weights) == (family == "qwen3")
    hf.load_state_dict(weights)
    hf.generation_config.eos_token_id, hf.generation_config.pad_token_id = None, 0
    prompts = [torch.randint(0, 128, (n,), generator=gen).tolist() for n in (6, 3, 9)]
    engine = LLMEngine(weights, config, num_blocks=16, block_size=2, max_num_batched_tokens=5)
    got = engine.generate(prompts, SamplingParams(max_tokens=MAX_TOKENS))
    for prompt, out in zip(prompts, got):
        ids = torch.tensor([prompt])
        with torch.no_grad():
            want = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=MAX_TOKENS, do_sample=False)
        assert out == want[0, len(prompt):].tolist()
