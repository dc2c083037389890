"""Visible tests for part04_serving.engine: `pytest exercises/part04_serving -m engine`.

The reference for every greedy test is each request decoded alone, by a float64 LLaMA written from
the formulas (it equals part01 ``llama.generate_greedy``), replayed from a recording (the ``golden``
fixture). Models are tiny (hidden 64, 2 layers, vocabulary 128) and in float64, so that batching,
chunking, preemption and the prefix cache cannot move a greedy token (a near-tie, logits within
1e-4, ends the comparison of that request)."""
import pytest
import torch

from infralab.engine_checks import (assert_same_tokens, diagnose_eos, diagnose_with_control, dropped_before_preemption,
                                    matches, random_prompts, run_paged_steps)
from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, expect
from infralab.tiny_llama import tiny_model

MODULE = "part04_serving.engine"


def test_paged_forward_of_a_mixed_batch_gives_each_sequence_its_own_logits(impl, golden):
    weights, config = model(golden)
    seqs = random_prompts(golden.gen, [7, 6, 3])
    # step 1: two prompts; step 2: a decode of sequence 1, the rest of sequence 0, all of sequence 2
    steps = [[(0, 4), (1, 5)], [(1, 1), (0, 3), (2, 3)]]
    rows = run_paged_steps(impl(MODULE).paged_forward, weights, config, seqs, steps, block_size=2, gen=golden.gen)
    for s, chunks in enumerate([[4, 3], [5, 1], [3]]):
        ids = torch.tensor([seqs[s]])
        assert_close(rows[s], golden.ref.chunk_logits(weights, config, ids, chunks), name=(f"logits of sequence {s}",
                                                                                           f"序列 {s} 的 logits"),
                     mistakes=golden.ref.paged_forward_mistakes(weights, config, ids, chunks))


def model(golden):
    """(weights, config) of a float64 tiny LLaMA from the recorded seed."""
    weights, config, _ = tiny_model("llama", int(torch.randint(0, 2**31, (1,), generator=golden.gen)),
                                    dtype=torch.float64)
    return weights, config


def positions_diagnosis(golden, weights, config, prompts, max_tokens):
    return matches(golden.ref.POSITIONS_RESTART,
                   golden.ref.positions_restart_tokens(weights, config, prompts, max_tokens))


def roomy(impl, weights, config, *prompt_lists, max_tokens):
    """The prompt lists generated in turn by an engine with room for everything: no preemption, each
    prompt prefilled in one chunk, no prefix cache (the control of the tests' diagnoses)."""
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=64, block_size=4, max_num_batched_tokens=64)
    return [out for prompts in prompt_lists
            for out in engine.generate(prompts, impl(MODULE).SamplingParams(max_tokens=max_tokens))]


def test_batched_greedy_equals_each_request_decoded_alone(impl, golden):
    weights, config = model(golden)
    prompts = random_prompts(golden.gen, [5, 9, 3, 12])
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=4, max_num_batched_tokens=64)
    got = engine.generate(prompts, impl(MODULE).SamplingParams(max_tokens=6))
    refs = [golden.ref.greedy_reference(weights, config, p, 6) for p in prompts]
    assert_same_tokens(got, refs,
                       what=("batched greedy", "批处理的贪心解码"),
                       diagnosis=positions_diagnosis(golden, weights, config, prompts, 6))


def test_chunked_prefill_changes_no_token(impl, golden):
    weights, config = model(golden)
    prompts = random_prompts(golden.gen, [11, 4, 7])
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=4, max_num_batched_tokens=3)
    got = engine.generate(prompts, impl(MODULE).SamplingParams(max_tokens=5))
    refs = [golden.ref.greedy_reference(weights, config, p, 5) for p in prompts]
    assert_same_tokens(got, refs, what=("chunked prefill", "分块 prefill"), diagnosis=diagnose_with_control(
        refs, lambda: roomy(impl, weights, config, prompts, max_tokens=5), golden.ref.CHANGED_BY_CHUNKING,
        positions_diagnosis(golden, weights, config, prompts, 5)))


def test_preemption_by_recompute_changes_no_token(impl, golden):
    weights, config = model(golden)
    prompts = random_prompts(golden.gen, [6, 5, 7])
    # 7 blocks of 2 tokens: the three requests (up to 7 + 8 - 1 tokens each) cannot all keep their K/V
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=7, block_size=2, max_num_batched_tokens=16)
    got = engine.generate(prompts, impl(MODULE).SamplingParams(max_tokens=8))
    stats = engine.stats()
    expect(stats["preemptions"] > 0, "engine.no_preemption", blocks=7, block_size=2, stats=stats)
    refs = [golden.ref.greedy_reference(weights, config, p, 8) for p in prompts]
    dropped, changed = golden.ref.DROPPED_ON_PREEMPTION, golden.ref.CHANGED_BY_PREEMPTION
    assert_same_tokens(got, refs, what=("greedy with preemption", "有抢占时的贪心解码"), diagnosis=diagnose_with_control(
        refs, lambda: roomy(impl, weights, config, prompts, max_tokens=8),
        lambda out: dropped_before_preemption(out, refs, dropped) or changed,
        positions_diagnosis(golden, weights, config, prompts, 8)))


def test_prefix_cache_hits_change_nothing_and_are_counted(impl, golden):
    weights, config = model(golden)
    shared = random_prompts(golden.gen, [9])[0]
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=64, block_size=4, max_num_batched_tokens=64,
                                     enable_prefix_caching=True)
    first = engine.generate([shared], impl(MODULE).SamplingParams(max_tokens=4))
    # the same prompt again: (9 - 1) // 4 = 2 whole blocks; a prompt sharing 6 tokens: 1 block
    prompts = [shared, shared[:6] + random_prompts(golden.gen, [4])[0]]
    got = engine.generate(prompts, impl(MODULE).SamplingParams(max_tokens=4))
    refs = [golden.ref.greedy_reference(weights, config, p, 4) for p in [shared] + prompts]
    assert_same_tokens(first + got, refs,
                       what=("greedy with prefix caching", "启用前缀缓存时的贪心解码"), diagnosis=diagnose_with_control(
        refs, lambda: roomy(impl, weights, config, [shared], prompts, max_tokens=4), golden.ref.CHANGED_BY_PREFIX_CACHE,
        positions_diagnosis(golden, weights, config, [shared] + prompts, 4)))
    for rid, want in [(0, 0), (1, 8), (2, 4)]:
        got_cached = engine.metrics(rid)["cached_tokens"]
        expect(got_cached == want, "engine.cached_tokens", what=f"metrics({rid})", got=got_cached, want=want)
    total = engine.stats()["cached_tokens"]
    expect(total == 12, "engine.cached_tokens", what="stats()", got=total, want=12)


def test_a_prefix_cache_hit_never_returns_a_block_holding_other_tokens(impl, golden):
    weights, config = model(golden)
    x = random_prompts(golden.gen, [9])[0]
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=64, block_size=4, max_num_batched_tokens=64,
                                     enable_prefix_caching=True)
    sp = impl(MODULE).SamplingParams(max_tokens=4)
    # x twice (the second hits 2 blocks), then a prompt that starts with x[:8] and then x[:4] again:
    # its third block of 4 is cached under no prefix it has, so it hits x[:8] only
    tricky = x[:8] + x[:4] + [x[8]]
    got = engine.generate([x], sp) + engine.generate([x], sp) + engine.generate([tricky], sp)
    refs = [golden.ref.greedy_reference(weights, config, p, 4) for p in (x, x, tricky)]
    label = golden.ref.HIT_HOLDS_OTHER_TOKENS
    cached = [engine.metrics(r)["cached_tokens"] for r in range(3)]
    want = [0, 8, 8]
    assert_same_tokens(got, refs,
                       what=("greedy after a misleading prefix", "遇到误导性前缀之后的贪心解码"),
                       diagnosis=label if cached != want else None)
    if cached != want:
        raise Mismatch(tr("engine.cached_tokens", what="metrics(0..2)", got=cached, want=want), label)


def test_eos_ends_a_request_and_is_its_last_token(impl, golden):
    weights, config = model(golden)
    prompts = random_prompts(golden.gen, [4, 6])
    alone = golden.ref.greedy_reference(weights, config, prompts[0], 8)[0]
    eos = alone[2]  # request 0 must stop at the first time it produces this token
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=4, max_num_batched_tokens=32)
    got = engine.generate(prompts, impl(MODULE).SamplingParams(max_tokens=8, eos_token_id=eos))
    refs = [golden.ref.greedy_reference(weights, config, p, 8, eos=eos) for p in prompts]
    late, dropped = golden.ref.EOS_LATE, golden.ref.EOS_DROPPED
    assert_same_tokens(got, refs, what=(f"greedy with eos_token_id={eos}", f"eos_token_id={eos} 时的贪心解码"),
                       diagnosis=lambda out: next((d for d in (diagnose_eos(o, r[0], late, dropped) for o, r in
                                                   zip(out, refs)) if d), None))


def test_sampling_is_reproducible_per_request_and_independent_of_the_batch(impl, golden):
    """False-failure rate < 1e-5: a draw may flip only if its uniform falls within ~1e-7 of a
    boundary of the cumulative distribution (the batched and the lone logits differ by rounding)."""
    weights, config = model(golden)
    sp = impl(MODULE).SamplingParams
    prompts = random_prompts(golden.gen, [6, 6, 6])
    params = [sp(max_tokens=5, temperature=1.0, seed=12), sp(max_tokens=5, temperature=1.0, top_k=1, seed=7),
              sp(max_tokens=5, temperature=0.8, seed=13)]

    def run(ps, ids):
        engine = impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=4, max_num_batched_tokens=8)
        return engine.generate([prompts[i] for i in ids], [ps[i] for i in ids])

    batch = run(params, [0, 1, 2])
    # top_k=1 is greedy whatever the temperature: request 1 keeps its own parameters in the batch
    refs = [golden.ref.greedy_reference(weights, config, prompts[1], 5)]
    assert_same_tokens([batch[1]], refs,
                       what=("request 1 (top_k=1) in a tempered batch", "带温度的批次中的请求 1（top_k=1）"),
                       diagnosis=diagnose_with_control(
        refs, lambda: roomy(impl, weights, config, [prompts[1]], max_tokens=5), golden.ref.PARAMS_IGNORED))
    again = run(params, [0, 1, 2])
    expect(batch == again, "engine.not_reproducible", first=batch, second=again)
    # request 2 waits for budget in the batch; alone it starts at once: the same tokens all the same
    assert_same_tokens([batch[2]], [(run(params, [2])[0], [1.0] * 5)],
                       what=("request 2 in a batch vs alone", "请求 2 在批次中与单独运行对比"),
                       diagnosis=golden.ref.BATCH_DEPENDENT)


def test_metrics_count_steps_and_clock_seconds(impl, golden):
    weights, config = model(golden)
    prompts = random_prompts(golden.gen, [4, 4, 4])
    ticks = [float(t) for t in range(20)]  # a fake clock: every reading is the next whole second
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=32, block_size=4, max_num_batched_tokens=8,
                                     clock=ticks)
    sp = impl(MODULE).SamplingParams
    engine.add_request(prompts[0], sp(max_tokens=3))   # arrives at t=0, step 0
    engine.add_request(prompts[1], sp(max_tokens=2))   # t=1
    engine.add_request(prompts[2], sp(max_tokens=1))   # t=2; no budget left in step 0 (4 + 4 tokens)
    finished = [engine.step() for _ in range(3)]       # steps end at t=3, 4, 5
    expect(finished == [[], [1, 2], [0]], "engine.finished_ids", step="0-2", got=finished, want=[[], [1, 2], [0]])
    want = {0: {"ttft_steps": 1, "tpot_steps": 1.0, "ttft_s": 3.0, "tpot_s": 1.0, "tokens_per_s": 3 / 5},
            1: {"ttft_steps": 1, "tpot_steps": 1.0, "ttft_s": 2.0, "tpot_s": 1.0, "tokens_per_s": 2 / 3},
            2: {"ttft_steps": 2, "tpot_steps": None, "ttft_s": 2.0, "tpot_s": None, "tokens_per_s": 1 / 2}}
    for rid, figures in want.items():
        m = engine.metrics(rid)
        for key, value in figures.items():
            ok = m[key] is None if value is None else m[key] == pytest.approx(value)
            expect(ok, "engine.metric", rid=rid, metric=key, got=m[key], want=value)
    stats = engine.stats()
    want_stats = {"steps": 3, "computed_tokens": 12 + 3, "cached_tokens": 0, "generated_tokens": 6, "preemptions": 0}
    expect(stats == want_stats, "check.value", what="stats()", expected=want_stats, got=stats)


def test_a_request_that_cannot_be_served_is_refused(impl, golden):
    weights, config = model(golden)
    engine = impl(MODULE).LLMEngine(weights, config, num_blocks=4, block_size=2, max_num_batched_tokens=8)
    for what, prompt in [("[]", []), ("an id >= vocab_size", [1, 128]), ("9 tokens + 8 new > 4 blocks of 2", [1] * 9)]:
        with pytest.raises(ValueError):
            engine.add_request(prompt, impl(MODULE).SamplingParams(max_tokens=8))
            raise Mismatch(tr("engine.bad_request", what=what))
