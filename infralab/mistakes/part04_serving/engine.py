"""References and diagnoses for part04_serving.engine (dev-only).

The greedy reference is one request at a time through the float64 LLaMA written from the formulas
(``knob_forward`` of part01's llama mistakes, which equals ``llama.generate_greedy``), re-run on
the whole sequence for every token, so it shares no cache logic with any engine. It also returns
the gap between the two best logits at every token: where that gap is below ``TIE`` an engine in
fp32 may pick either, and the comparison stops there (a correct answer never fails on a near-tie).
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from infralab.i18n import tr
from infralab.mistakes.part01_transformer.llama import knob_forward
from infralab.testing import Label, Mismatch
from infralab.tiny_llama import random_llama_weights, tiny_llama_config

TIE = 1e-4  # logits closer than this are a tie: fp32 attention inside the engine may flip them

POSITIONS_RESTART = ("positions restart at 0 in every chunk: a decode token gets position 0, its K/V goes to "
                     "slot 0 and it attends to itself only (a token's position is its place in its own sequence: "
                     "start + i for a chunk from start)",
                     "每个块的位置都从 0 重新开始：解码 token 的位置成了 0，K/V 写进了 0 号槽位，只注意到它自己"
                     "（token 的位置是它在自己序列中的位置：从 start 开始的块是 start + i）")
ROPE_POSITIONS_RESTART = ("RoPE positions restart at 0 in every chunk (rotate each token by its position in its "
                          "own sequence)",
                          "每个块的 RoPE 位置都从 0 重新开始（每个 token 应按它在自己序列中的位置旋转）")
TOP_LEFT_MASK = ("a chunk's causal mask is aligned top-left (each token must see the cached tokens before "
                 "the chunk too: context_len = position + 1)",
                 "块的因果遮罩左上对齐（每个 token 还要看到块之前已缓存的 token：context_len = 位置 + 1）")
DROPPED_ON_PREEMPTION = ("the tokens generated before a preemption were dropped from the output (recompute "
                         "keeps the prompt and the generated tokens; only the K/V goes)",
                         "抢占前已生成的 token 从输出里丢失了（重算式抢占保留 prompt 和已生成的 token，只丢弃 K/V）")
CHANGED_BY_PREEMPTION = ("the output changes when sequences are preempted: a preempted sequence must be "
                         "recomputed from all its tokens (blocks freed, its tokens kept) and end the same",
                         "发生抢占后输出变了：被抢占的序列要用它的全部 token 重算（块已释放，token 保留），结果必须不变")
CHANGED_BY_CHUNKING = ("the output changes when a prompt is prefilled in chunks: a chunk from start has positions "
                       "start, start + 1, ... and attends to the K/V cached before it",
                       "prompt 分块预填充后输出变了：从 start 开始的块位置为 start, start + 1, ...，"
                       "并且要注意到它之前已缓存的 K/V")
CHANGED_BY_PREFIX_CACHE = ("the output changes with prefix caching on: a cached block must hold exactly the "
                           "K/V of the query's prefix, and the tokens after the hit are computed at their own "
                           "positions",
                           "开启前缀缓存后输出变了：命中的块必须正好是该前缀的 K/V，命中之后的 token 要在各自的位置上计算")
EOS_LATE = ("the request ran one token past its eos_token_id (test the token just sampled, not the step's input)",
            "请求在 eos_token_id 之后又多生成了一个 token（应检查刚采样出的 token，而不是本步的输入 token）")
EOS_DROPPED = ("the eos token is missing from the output (it is the last generated token)",
               "输出中缺少 eos token（它应当是最后一个生成的 token）")
BATCH_DEPENDENT = ("a request's sampled tokens depend on the rest of the batch: the i-th token of a request "
                   "is sampled with seed + i from its own row, whatever else runs in the step",
                   "请求的采样结果随批中其他请求而变：第 i 个 token 应当用 seed + i 对自己那一行单独采样")
PARAMS_IGNORED = ("a request was sampled with another request's parameters (each row with its own "
                  "temperature, top_k, top_p, min_p and seed)",
                  "请求用了别的请求的采样参数（每一行都要用自己的 temperature、top_k、top_p、min_p 和 seed）")


def tiny_model(seed: int, dtype: torch.dtype = torch.float64, **overrides: Any):
    """(weights, config) of a random tiny LLaMA (hidden 64, 2 layers, vocabulary 128)."""
    config = tiny_llama_config(**overrides)
    weights = random_llama_weights(config, torch.Generator().manual_seed(seed))
    return {k: t.to(dtype) for k, t in weights.items()}, config


def random_prompts(gen: torch.Generator, lengths: list[int], vocab: int = 128) -> list[list[int]]:
    return [torch.randint(0, vocab, (n,), generator=gen).tolist() for n in lengths]


def reference_logits(weights, config, tokens: list[int]) -> torch.Tensor:
    """Next-token logits (V,) after ``tokens``, by the float64 LLaMA on the whole sequence."""
    return knob_forward(weights, config, torch.tensor([tokens]))[0, -1]


def greedy_reference(weights, config, prompt: list[int], max_tokens: int,
                     eos: int | None = None) -> tuple[list[int], list[float]]:
    """The request alone, greedy: its generated ids and, per id, the gap to the runner-up logit."""
    tokens, out, gaps = list(prompt), [], []
    while len(out) < max_tokens:
        logits = reference_logits(weights, config, tokens).double()
        top = logits.topk(2).values
        token = int(logits.argmax())
        tokens.append(token)
        out.append(token)
        gaps.append(float(top[0] - top[1]))
        if token == eos:
            break
    return out, gaps


def first_difference(got: list[int], want: list[int], gaps: list[float]) -> int | None:
    """Index of the first token that differs, ignoring everything from a near-tie on; None if equal."""
    for i, w in enumerate(want):
        if gaps[i] < TIE:
            return None  # either pick is right here, and what follows depends on it
        if i >= len(got) or got[i] != w:
            return i
    return None if len(got) == len(want) else len(want)


def assert_same_tokens(got: Any, refs: list[tuple[list[int], list[float]]], *, what: str,
                       diagnosis: Label | Callable[[list], Label | None] | None = None) -> None:
    """``got[r]`` equals the reference tokens of request ``r`` (tie-aware); Mismatch names the first
    request and token that differ, and ``diagnosis`` (a label, or a function of ``got`` making one,
    called only on a failure) as the likely mistake."""
    if not isinstance(got, (list, tuple)) or len(got) != len(refs):
        raise Mismatch(tr("engine.outputs_count", what=what, want=len(refs),
                          got=len(got) if isinstance(got, (list, tuple)) else type(got).__name__))
    for rid, (out, (want, gaps)) in enumerate(zip(got, refs)):
        out = list(out)
        at = first_difference(out, want, gaps)
        if at is not None:
            label = diagnosis(list(got)) if callable(diagnosis) else diagnosis
            raise Mismatch(tr("engine.tokens_differ", what=what, rid=rid, at=at, got=out, want=want), label)


def dropped_before_preemption(got: list[list[int]], refs) -> Label | None:
    """Output dropped at a preemption shows as a proper suffix of the right tokens."""
    for out, (want, _) in zip(got, refs):
        if 0 < len(out) < len(want) and list(out) == want[len(want) - len(out):]:
            return DROPPED_ON_PREEMPTION
    return None


def preemption_diagnosis(refs) -> Callable[[list], Label]:
    return lambda got: dropped_before_preemption(got, refs) or CHANGED_BY_PREEMPTION


def diagnose_with_control(refs, control: Callable[[], list], specific: Label | Callable[[list], Label | None],
                          fallback: Callable[[list], Label | None] | None = None) -> Callable[[list], Label | None]:
    """A diagnosis function for a feature under test (preemption, the prefix cache): when the same
    implementation without the feature (``control()``, run only on a failure) gets the right tokens,
    the feature is at fault (``specific``); otherwise the mistake is elsewhere (``fallback`` of the
    control's outputs, if given)."""
    def diagnose(got: list) -> Label | None:
        try:
            plain = control()
        except Exception:  # a control that cannot run names nothing
            return None
        if all(first_difference(list(o), w, g) is None for o, (w, g) in zip(plain, refs)):
            return specific(got) if callable(specific) else specific
        return fallback(plain) if fallback else None
    return diagnose


def diagnose_positions(weights, config, prompts: list[list[int]], max_tokens: int):
    """A diagnosis function for :func:`assert_same_tokens`: positions counted from 0 in every chunk,
    for an engine that prefilled each prompt in one chunk (so its first token is right) and then
    decoded one token per step: each decode token sits at position 0, its K/V lands in slot 0 and it
    attends to itself only, so every later token is the greedy successor of the token before alone."""
    def diagnose(got: list) -> Label | None:
        for prompt, out in zip(prompts, got):
            tokens = [int(reference_logits(weights, config, prompt).argmax())]
            while len(tokens) < max_tokens:
                tokens.append(int(reference_logits(weights, config, tokens[-1:]).argmax()))
            if tokens != list(out):
                return None
        return POSITIONS_RESTART
    return diagnose


def diagnose_eos(got: list[int], want: list[int]) -> Label | None:
    if len(got) == len(want) + 1 and list(got[:-1]) == want:
        return EOS_LATE
    if list(got) == want[:-1]:
        return EOS_DROPPED
    return None


def paged_forward_mistakes(weights, config, ids: torch.Tensor, chunks: list[int]) -> dict:
    """Known mistakes of paged_forward as logits of one sequence fed in ``chunks``."""
    return {ROPE_POSITIONS_RESTART: lambda: knob_forward(weights, config, ids, chunks, offset=False)[0],
            TOP_LEFT_MASK: lambda: knob_forward(weights, config, ids, chunks, top_left=True)[0]}


def run_paged_steps(paged_forward, weights, config, seqs: list[list[int]], steps: list[list[tuple[int, int]]],
                    block_size: int, gen: torch.Generator) -> list[torch.Tensor]:
    """Feed ``seqs`` to ``paged_forward`` in ``steps`` (each a list of (sequence, tokens this step),
    one batch per step); blocks are a random permutation of a NaN-poisoned pool, so a read of an
    unwritten slot or a write to the wrong one shows. Returns each sequence's logits rows in order."""
    hkv = config["num_key_value_heads"]
    dh = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    need = [-(-len(s) // block_size) for s in seqs]
    perm = torch.randperm(sum(need) + 2, generator=gen).tolist()
    tables = [perm[sum(need[:i]):sum(need[:i + 1])] for i in range(len(seqs))]
    dtype = weights["model.embed_tokens.weight"].dtype
    shape = (config["num_hidden_layers"], len(perm), block_size, hkv, dh)
    k_cache, v_cache = torch.full(shape, float("nan"), dtype=dtype), torch.full(shape, float("nan"), dtype=dtype)
    done = [0] * len(seqs)
    rows: list[list[torch.Tensor]] = [[] for _ in seqs]
    width = max(need)
    for step in steps:
        ids, pos, slots, table, owner = [], [], [], [], []
        for s, n in step:
            for p in range(done[s], done[s] + n):
                ids.append(seqs[s][p])
                pos.append(p)
                slots.append(tables[s][p // block_size] * block_size + p % block_size)
                table.append(tables[s] + [-1] * (width - len(tables[s])))
                owner.append(s)
            done[s] += n
        logits = paged_forward(weights, config, k_cache, v_cache, torch.tensor(ids), torch.tensor(pos),
                               torch.tensor(slots), torch.tensor(table, dtype=torch.int32))
        for i, s in enumerate(owner):
            rows[s].append(logits[i])
    return [torch.stack(r) for r in rows]
