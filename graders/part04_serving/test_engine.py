"""Hidden tests for part04_serving.engine.

Greedy tokens are compared with each request decoded alone by a float64 LLaMA written from the
formulas (infralab.mistakes.part04_serving.engine; it equals part01 ``generate_greedy``; the kit's
tests/test_crosscheck_part04_engine.py checks the reference engine against transformers'
``generate``). Models are tiny and float64; a near-tie (two logits within 1e-4) ends the comparison
of that request, so a correct engine never fails on rounding.

Qwen2 (q/k/v bias) and Qwen3 (per-head q/k norm) weights (infralab.tiny_llama): paged_forward's logits
against the float64 reference, which reads them as part01's llama does, and the engine's greedy
tokens against transformers' Qwen2ForCausalLM / Qwen3ForCausalLM ``generate`` (up to its first
near tie, infralab.tiny_llama.hf_greedy).
"""
import pytest
import torch

from infralab.engine_checks import assert_same_tokens, diagnose_with_control, random_prompts, run_paged_steps
from infralab.i18n import localized, tr
from infralab.mistakes.part04_serving.engine import (
    CHANGED_BY_CHUNKING, CHANGED_BY_PREFIX_CACHE, HIT_HOLDS_OTHER_TOKENS, PARAMS_IGNORED, chunk_logits,
    diagnose_positions, eos_diagnosis, greedy_reference, hf_refs, paged_forward_mistakes, preemption_diagnosis,
    qwen_diagnosis, reference_logits)
from infralab.testing import Mismatch, assert_close, expect
from infralab.tiny_llama import tiny_model

MODULE = "part04_serving.engine"
METRIC_KEYS = {"prompt_tokens", "generated_tokens", "cached_tokens", "preemptions", "ttft_steps", "tpot_steps",
               "ttft_s", "tpot_s", "tokens_per_s"}
STATS_KEYS = {"steps", "computed_tokens", "cached_tokens", "generated_tokens", "preemptions"}

CONFIGS = {  # family, config overrides
    "gqa": ("llama", {}),
    "mqa_wide_heads": ("llama", {"num_key_value_heads": 1, "head_dim": 32, "rope_theta": 500000.0}),
    "mha_tied": ("llama", {"num_key_value_heads": 4, "tie_word_embeddings": True}),
    "qwen2_qkv_bias": ("qwen2", {}),
    "qwen3_qk_norm": ("qwen3", {}),
}
QWEN = {"qwen2": {"hidden_size": 32}, "qwen3": {"hidden_size": 32, "head_dim": 16}}  # cheap: HF builds them too


def model(seed: int, family: str = "llama", hf: bool = False, **overrides):
    """A float64 tiny model of ``family``: ``(weights, config, hf)`` (infralab.tiny_llama.tiny_model)."""
    return tiny_model(family, seed, dtype=torch.float64, hf=hf, **overrides)


# ---------------------------------------------------------------- paged_forward

@pytest.mark.weight(2)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_paged_forward_equals_the_llama_for_every_sequence_of_mixed_steps(impl, seed, gen, name):
    family, overrides = CONFIGS[name]
    weights, config, _ = model(seed, family, **overrides)
    seqs = random_prompts(gen, [9, 8, 4, 5])
    steps = [[(0, 3), (1, 6)], [(1, 1), (0, 4), (2, 2)], [(0, 2), (1, 1), (2, 2), (3, 5)]]
    rows = run_paged_steps(impl(MODULE).paged_forward, weights, config, seqs, steps, block_size=3, gen=gen)
    for s, chunks in enumerate([[3, 4, 2], [6, 1, 1], [2, 2], [5]]):
        ids = torch.tensor([seqs[s]])
        assert_close(rows[s], chunk_logits(weights, config, ids, chunks), name=(f"logits of sequence {s} ({name})",
                                                                                f"序列 {s} 的 logits（{name}）"),
                     mistakes=paged_forward_mistakes(weights, config, ids, chunks))


# ---------------------------------------------------------------- greedy agreement

SCENARIOS = {  # num_blocks, block_size, max_num_batched_tokens, prefix caching
    "roomy": (64, 4, 64, False),
    "chunked": (64, 4, 3, False),
    "preempting": (8, 2, 16, False),
    "prefix_cache": (64, 2, 8, True),
    "prefix_cache_preempting": (9, 2, 8, True),
}


def workload(gen, prefix: bool):
    """Six prompts of 2-10 tokens; with ``prefix`` the later ones reuse earlier prompts' beginnings."""
    prompts = random_prompts(gen, torch.randint(2, 11, (6,), generator=gen).tolist())
    if prefix:
        for i in range(2, 6):
            donor = prompts[int(torch.randint(0, i, (1,), generator=gen))]
            prompts[i] = (donor[:int(torch.randint(1, len(donor) + 1, (1,), generator=gen))] + prompts[i][:3])[:10]
    return prompts


def run_in_two_waves(impl, engine, prompts, max_tokens):
    sp = impl(MODULE).SamplingParams(max_tokens=max_tokens)
    return engine.generate(prompts[:3], sp) + engine.generate(prompts[3:], sp)


@pytest.mark.weight(3)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_batched_greedy_equals_each_request_decoded_alone(impl, seed, gen, scenario):
    num_blocks, block_size, budget, prefix = SCENARIOS[scenario]
    weights, config, _ = model(seed)
    prompts = workload(gen, prefix)
    max_tokens = 6
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=num_blocks, block_size=block_size,
                                     max_num_batched_tokens=budget, enable_prefix_caching=prefix)
    got = run_in_two_waves(impl, engine, prompts, max_tokens)  # the second wave meets a warm prefix cache
    refs = [greedy_reference(weights, config, p, max_tokens) for p in prompts]
    positions = diagnose_positions(weights, config, prompts, max_tokens)
    specific = {"roomy": positions, "chunked": CHANGED_BY_CHUNKING, "preempting": preemption_diagnosis(refs),
                "prefix_cache": CHANGED_BY_PREFIX_CACHE, "prefix_cache_preempting": preemption_diagnosis(refs)}
    control = impl(MODULE).LLMEngine(weights, config, num_blocks=64, block_size=4, max_num_batched_tokens=64)
    assert_same_tokens(got, refs, what=(f"greedy ({scenario})", f"贪心解码（{scenario}）"), diagnosis=diagnose_with_control(
        refs, lambda: run_in_two_waves(impl, control, prompts, max_tokens), specific[scenario], positions))
    stats = engine.stats()  # whether this workload preempted depends on the seed: counted, not required
    per_request = sum(engine.metrics(r)["preemptions"] for r in range(len(prompts)))
    expect(per_request == stats["preemptions"], "engine.preemptions_counted", got=stats["preemptions"],
           want=per_request)


@pytest.mark.weight(2)
@pytest.mark.parametrize("family", sorted(QWEN))
def test_greedy_on_qwen_weights_equals_transformers_generate(impl, seed, gen, family):
    """Qwen2's q/k/v biases and Qwen3's per-head q/k RMSNorm, read off the state dict, under chunked
    prefill, preemption and a warm prefix cache: each request's greedy tokens equal transformers'
    Qwen2ForCausalLM / Qwen3ForCausalLM ``generate`` on its prompt alone (fp32, up to a near tie)."""
    pytest.importorskip("transformers")
    weights, config, hf = model(seed, family, hf=True, **QWEN[family])
    prompts = workload(gen, prefix=True)
    num_blocks, block_size, budget, prefix = SCENARIOS["prefix_cache_preempting"]
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=num_blocks, block_size=block_size,
                                     max_num_batched_tokens=budget, enable_prefix_caching=prefix)
    got = run_in_two_waves(impl, engine, prompts, 6)
    assert_same_tokens(got, hf_refs(hf, prompts, 6), what=(f"greedy on {family} weights vs transformers generate",
                                                                f"{family} 权重上的贪心解码对比 transformers generate"),
                       diagnosis=qwen_diagnosis(weights, config, prompts, 6))


@pytest.mark.weight(2)
def test_preemption_keeps_every_generated_token(impl, seed, gen):
    """Request 0 alone needs the whole pool (10 + 8 - 1 tokens in 6 blocks of 3), so every request
    running beside it when it takes its last block is preempted first."""
    weights, config, _ = model(seed)
    prompts = random_prompts(gen, [10, 4, 7, 2])
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=6, block_size=3, max_num_batched_tokens=12)
    got = engine.generate(prompts, impl(MODULE).SamplingParams(max_tokens=8))
    stats = engine.stats()
    expect(stats["preemptions"] > 0, "engine.no_preemption", blocks=6, block_size=3, stats=stats)
    refs = [greedy_reference(weights, config, p, 8) for p in prompts]
    control = impl(MODULE).LLMEngine(weights, config, num_blocks=64, block_size=3, max_num_batched_tokens=64)
    sp = impl(MODULE).SamplingParams(max_tokens=8)
    assert_same_tokens(got, refs, what=("greedy with preemption", "有抢占时的贪心解码"), diagnosis=diagnose_with_control(
        refs, lambda: control.generate(prompts, sp), preemption_diagnosis(refs),
        diagnose_positions(weights, config, prompts, 8)))


@pytest.mark.weight(2)
def test_requests_arriving_between_steps_are_batched_in(impl, seed, gen):
    weights, config, _ = model(seed)
    prompts = random_prompts(gen, [7, 3, 8, 5, 2])
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=16, block_size=4, max_num_batched_tokens=6)
    sp = impl(MODULE).SamplingParams(max_tokens=5)
    rids = [engine.add_request(prompts[0], sp), engine.add_request(prompts[1], sp)]
    for p in prompts[2:]:
        engine.step()
        engine.step()
        rids.append(engine.add_request(p, sp))
    expect(rids == list(range(5)), "check.value", what=localized(("add_request() ids", "add_request() 返回的 id")), expected=list(range(5)), got=rids)
    while engine.has_unfinished_requests():
        engine.step()
    refs = [greedy_reference(weights, config, p, 5) for p in prompts]
    assert_same_tokens([engine.get_output(r) for r in rids], refs,
                       what=("requests arriving between steps", "在步与步之间到达的请求"))


@pytest.mark.weight(2)
def test_eos_of_each_request_and_max_tokens_one(impl, seed, gen):
    weights, config, _ = model(seed)
    prompts = random_prompts(gen, [5, 3, 6])
    sp = impl(MODULE).SamplingParams
    alone = [greedy_reference(weights, config, p, 6)[0] for p in prompts]
    limits = [(6, alone[0][1]), (6, alone[1][4]), (1, None)]  # (max_tokens, eos_token_id)
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=4, max_num_batched_tokens=32)
    got = engine.generate(prompts, [sp(max_tokens=m, eos_token_id=e) for m, e in limits])
    refs = [greedy_reference(weights, config, p, m, eos=e) for p, (m, e) in zip(prompts, limits)]

    def diagnose(out):
        return next((d for d in (eos_diagnosis(o, r[0]) for o, r in zip(out[:2], refs)) if d), None)
    assert_same_tokens(got, refs, what=("greedy with per-request eos and max_tokens=1",
                                               "每个请求各自 eos 且 max_tokens=1 时的贪心解码"), diagnosis=diagnose)


@pytest.mark.weight(1)
def test_step_returns_the_ids_finished_in_it(impl, seed, gen):
    weights, config, _ = model(seed)
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=4, max_num_batched_tokens=32)
    sp = impl(MODULE).SamplingParams
    for n, max_tokens in [(3, 2), (4, 1), (2, 3)]:
        engine.add_request(random_prompts(gen, [n])[0], sp(max_tokens=max_tokens))
    got = [engine.step() for _ in range(3)]
    expect(got == [[1], [0], [2]], "engine.finished_ids", step="0-2", got=got, want=[[1], [0], [2]])
    unfinished = engine.has_unfinished_requests()
    expect(not unfinished, "check.value", what=localized(("has_unfinished_requests() after every request finished",
                                                          "每个请求都结束之后的 has_unfinished_requests()")),
           expected=False, got=unfinished)
    lengths = [len(engine.get_output(r)) for r in range(3)]
    expect(lengths == [2, 1, 3], "check.value", what="len(get_output(r)) for r = 0, 1, 2", expected=[2, 1, 3],
           got=lengths)


# ---------------------------------------------------------------- sampling

def reference_draw(logits: torch.Tensor, seed: int, temperature: float, top_k: int) -> int:
    """part01 sampling.sample's draw: temperature, top-k (ties kept), softmax, one seeded multinomial."""
    z = logits.double() / temperature
    if top_k:
        z = z.masked_fill(z < z.topk(top_k).values[-1], float("-inf"))
    g = torch.Generator().manual_seed(seed)
    return int(torch.multinomial(torch.softmax(z.float(), -1)[None], 1, generator=g)[0, 0])


@pytest.mark.weight(2)
def test_sampled_tokens_follow_each_requests_own_seed_and_parameters(impl, seed, gen):
    """The i-th token of a request is its own seeded draw (seed + i) from the logits of its prefix.
    False-failure rate < 1e-5 (a uniform within ~1e-7 of a boundary of the cumulative distribution)."""
    weights, config, _ = model(seed)
    sp = impl(MODULE).SamplingParams
    prompts = random_prompts(gen, [5, 7, 4, 6])
    params = [dict(temperature=1.3, seed=seed % 1000, top_k=0), dict(temperature=0.7, top_k=5, seed=3),
              dict(temperature=1.0, seed=11, top_k=0), dict(temperature=2.0, top_k=20, seed=5)]
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=4, max_num_batched_tokens=9)
    got = engine.generate(prompts, [sp(max_tokens=4, **p) for p in params])
    first = params[0]
    for rid, (prompt, out, p) in enumerate(zip(prompts, got, params)):
        tokens, want, as_first = list(prompt), [], []
        for i in range(min(len(out), 4)):
            logits = reference_logits(weights, config, tokens)
            want.append(reference_draw(logits, p["seed"] + i, p["temperature"], p["top_k"]))
            as_first.append(reference_draw(logits, first["seed"] + i, first["temperature"], first["top_k"]))
            tokens.append(out[i])  # follow the answer's own prefix: one flip does not cascade
        if list(out) != want or len(out) != 4:
            diagnosis = PARAMS_IGNORED if rid and list(out) == as_first else None
            raise Mismatch(tr("engine.sampled_differs", rid=rid, seed=p["seed"], got=out, want=want), diagnosis)


# ---------------------------------------------------------------- metrics and counts

@pytest.mark.weight(2)
def test_metrics_and_stats_with_a_fake_clock(impl, seed, gen):
    weights, config, _ = model(seed)
    ticks = [10.0 + 0.5 * i for i in range(40)]  # a fake clock: readings in order
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=2, max_num_batched_tokens=5,
                                     clock=ticks)
    sp = impl(MODULE).SamplingParams
    prompts = random_prompts(gen, [3, 6, 2])
    engine.add_request(prompts[0], sp(max_tokens=4))  # t=10.0
    engine.step()                                     # step 0 ends at 10.5: token 0 of request 0
    engine.add_request(prompts[1], sp(max_tokens=2))  # t=11.0, arrives after 1 step
    engine.add_request(prompts[2], sp(max_tokens=3))  # t=11.5
    while engine.has_unfinished_requests():
        engine.step()
    # step 1 (12.0): r0 decode + 4 of r1's 6; step 2 (12.5): r0, r1's last 2 -> r1 token 0, r2's 2 -> token 0;
    # step 3 (13.0): r0 (done: 4), r1 (done: 2), r2; step 4 (13.5): r2 (done: 3)
    want = {0: dict(ttft_steps=1, tpot_steps=1.0, ttft_s=0.5, tpot_s=2.5 / 3, tokens_per_s=4 / 3.0),
            1: dict(ttft_steps=2, tpot_steps=1.0, ttft_s=1.5, tpot_s=0.5, tokens_per_s=2 / 2.0),
            2: dict(ttft_steps=2, tpot_steps=1.0, ttft_s=1.0, tpot_s=0.5, tokens_per_s=3 / 2.0)}
    for rid, figures in want.items():
        m = engine.metrics(rid)
        expect(set(m) == METRIC_KEYS, "engine.metric_keys", got=sorted(m), want=sorted(METRIC_KEYS))
        figures.update(prompt_tokens=len(prompts[rid]), generated_tokens=[4, 2, 3][rid], cached_tokens=0,
                       preemptions=0)
        for key, value in figures.items():
            expect(m[key] == pytest.approx(value), "engine.metric", rid=rid, metric=key, got=m[key], want=value)
    stats = engine.stats()
    expect(set(stats) == STATS_KEYS, "engine.stats_keys", got=sorted(stats), want=sorted(STATS_KEYS))
    computed = sum(len(p) for p in prompts) + 3 + 1 + 2
    expect(stats["computed_tokens"] == computed, "engine.computed_tokens", got=stats["computed_tokens"], want=computed)
    counts = (stats["steps"], stats["generated_tokens"])
    expect(counts == (5, 9), "check.value", what="(stats()['steps'], stats()['generated_tokens'])", expected=(5, 9),
           got=counts)


@pytest.mark.weight(2)
def test_cached_tokens_are_whole_blocks_of_the_first_chunk_and_never_the_last_token(impl, seed, gen):
    weights, config, _ = model(seed)
    sp = impl(MODULE).SamplingParams(max_tokens=3)
    prompt = random_prompts(gen, [8])[0]

    def engine(budget):
        return impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=2, max_num_batched_tokens=budget,
                                      enable_prefix_caching=True)
    roomy, tight = engine(32), engine(5)
    for e in (roomy, tight):
        e.generate([prompt], sp)
        e.generate([prompt], sp)  # 8 tokens: (8 - 1) // 2 = 3 blocks at most; tight: first chunk of 5 -> 2
        e.generate([prompt[:5]], sp)  # 5 tokens: (5 - 1) // 2 = 2 blocks
    for e, want in [(roomy, [0, 6, 4]), (tight, [0, 4, 4])]:
        got = [e.metrics(r)["cached_tokens"] for r in range(3)]
        expect(got == want, "engine.cached_tokens", what="metrics(0..2)", got=got, want=want)
        computed, counted = 3 * 2 + 8 + 8 + 5 - sum(want), e.stats()["computed_tokens"]
        expect(counted == computed, "engine.computed_tokens", got=counted, want=computed)
        expect(e.stats()["cached_tokens"] == sum(want), "engine.cached_total", got=e.stats()["cached_tokens"],
               want=sum(want))


@pytest.mark.weight(2)
@pytest.mark.parametrize("block_size", [3, 2])
def test_a_prefix_cache_hit_never_returns_a_block_holding_other_tokens(impl, seed, gen, block_size):
    """A prompt made of the first two blocks of an earlier prompt and then its first block again: an
    engine that appended cached tokens to the block manager a second time registered a block under
    exactly that prefix, and hits a block whose K/V belongs to other tokens."""
    weights, config, _ = model(seed)
    bs = block_size
    x = random_prompts(gen, [2 * bs + 1])[0]
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=64, block_size=bs, max_num_batched_tokens=64,
                                     enable_prefix_caching=True)
    sp = impl(MODULE).SamplingParams(max_tokens=4)
    tricky = x[:2 * bs] + x[:bs] + [x[0]]
    got = engine.generate([x], sp) + engine.generate([x], sp) + engine.generate([tricky], sp)
    refs = [greedy_reference(weights, config, p, 4) for p in (x, x, tricky)]
    # the right hits of the tricky prompt: 2 blocks, 3 only if an earlier sequence really began with its 3 blocks
    earlier = [x + out for out, _ in refs[:2]]
    want = [0, 2 * bs, 3 * bs if any(t[:3 * bs] == tricky[:3 * bs] for t in earlier) else 2 * bs]
    cached = [engine.metrics(r)["cached_tokens"] for r in range(3)]
    diagnosis = HIT_HOLDS_OTHER_TOKENS if cached != want else None
    assert_same_tokens(got, refs, what=("greedy after a misleading prefix", "遇到误导性前缀之后的贪心解码"), diagnosis=diagnosis)
    if cached != want:
        raise Mismatch(tr("engine.cached_tokens", what="metrics(0..2)", got=cached, want=want), HIT_HOLDS_OTHER_TOKENS)


def test_bad_arguments_raise_value_error(impl, seed, gen):
    weights, config, _ = model(seed)
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=8, block_size=2, max_num_batched_tokens=8)
    sp = impl(MODULE).SamplingParams
    cases = [("[]", lambda: engine.add_request([], sp())), ("[-1]", lambda: engine.add_request([-1], sp())),
             ("max_tokens=0", lambda: engine.add_request([1, 2], sp(max_tokens=0))),
             ("a prompt needing 9 blocks", lambda: engine.add_request([1] * 17, sp(max_tokens=2))),
             ("2 prompts, 3 params", lambda: engine.generate([[1], [2]], [sp(), sp(), sp()])),
             (f"[{config['vocab_size']}]", lambda: engine.add_request([config["vocab_size"]], sp()))]
    for what, call in cases:
        with pytest.raises(ValueError):
            call()
            raise Mismatch(tr("engine.bad_request", what=what))
    edges = [0, config["vocab_size"] - 1]
    try:
        engine.add_request(edges, sp(max_tokens=1))
    except ValueError as exc:
        raise Mismatch(tr("engine.good_request_refused", what=edges, error=f"ValueError: {exc}")) from exc


def test_tokens_per_s_is_none_when_no_time_elapsed(impl, seed, gen):
    """A clock that never advances (every reading the same): tokens_per_s divides by zero elapsed time,
    which the specification makes None; the other figures are defined (zero seconds)."""
    weights, config, _ = model(seed)
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=16, block_size=2, max_num_batched_tokens=16,
                                     clock=[7.0] * 200)
    engine.generate(random_prompts(gen, [3]), impl(MODULE).SamplingParams(max_tokens=2))
    m = engine.metrics(0)
    for key, value in dict(tokens_per_s=None, ttft_s=0.0, tpot_s=0.0).items():
        expect(m[key] == value if value is None else m[key] == pytest.approx(value), "engine.metric", rid=0,
               metric=key, got=m[key], want=value)
