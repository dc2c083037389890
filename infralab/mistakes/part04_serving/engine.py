"""References and diagnoses for part04_serving.engine (dev-only).

The greedy reference is one request at a time through the float64 LLaMA written from the formulas
(``knob_forward`` of part01's llama mistakes, which equals ``llama.generate_greedy``), re-run on
the whole sequence for every token, so it shares no cache logic with any engine. It also returns
the gap between the two best logits at every token (infralab.engine_checks compares tie-aware).
The visible tests reach everything here through the ``golden`` fixture.
"""
from __future__ import annotations

import math
from typing import Callable

import torch

from infralab.engine_checks import Refs, diagnose_eos, dropped_before_preemption, first_difference, matches
from infralab.mistakes.part01_transformer.llama import MISTAKE_KNOBS, knob_forward
from infralab.testing import Label
from infralab.tiny_llama import hf_greedy

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
HIT_HOLDS_OTHER_TOKENS = ("a prefix-cache hit returned a block holding other tokens: after a hit only the computed "
                          "tokens (from the end of the hit) are appended to the block manager; appending the cached "
                          "ones again registers blocks under a prefix they do not hold",
                          "前缀缓存命中了一个存放着别的 token 的块：命中之后只应把需要计算的 token（命中部分之后的）"
                          "追加到块管理器；把已缓存的 token 再追加一遍，会把块登记在它并不持有的前缀下")
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


def reference_logits(weights, config, tokens: list[int], **knobs) -> torch.Tensor:
    """Next-token logits (V,) after ``tokens``, by the float64 LLaMA on the whole sequence (``knobs``:
    knob_forward's switches of a known mistake)."""
    return knob_forward(weights, config, torch.tensor([tokens]), **knobs)[0, -1]


def greedy_reference(weights, config, prompt: list[int], max_tokens: int,
                     eos: int | None = None, **knobs) -> tuple[list[int], list[float]]:
    """The request alone, greedy: its generated ids and, per id, the gap to the runner-up logit."""
    tokens, out, gaps = list(prompt), [], []
    while len(out) < max_tokens:
        logits = reference_logits(weights, config, tokens, **knobs).double()
        top = logits.topk(2).values
        token = int(logits.argmax())
        tokens.append(token)
        out.append(token)
        gaps.append(float(top[0] - top[1]))
        if token == eos:
            break
    return out, gaps


def positions_restart_tokens(weights, config, prompts: list[list[int]], max_tokens: int) -> list[list[int]]:
    """What an engine whose positions restart at 0 in every chunk generates, when it prefilled each
    prompt in one chunk (its first token is right) and then decoded one token per step: each decode
    token sits at position 0, its K/V lands in slot 0 and it attends to itself only, so every later
    token is the greedy successor of the token before, alone."""
    out = []
    for prompt in prompts:
        tokens = [int(reference_logits(weights, config, prompt).argmax())]
        while len(tokens) < max_tokens:
            tokens.append(int(reference_logits(weights, config, tokens[-1:]).argmax()))
        out.append(tokens)
    return out


def diagnose_positions(weights, config, prompts: list[list[int]], max_tokens: int) -> Callable[[list], Label | None]:
    """The hidden tests' lazy diagnosis of :data:`POSITIONS_RESTART` (computed on a failure only)."""
    return lambda got: matches(POSITIONS_RESTART, positions_restart_tokens(weights, config, prompts, max_tokens))(got)


def preemption_diagnosis(refs: Refs) -> Callable[[list], Label]:
    return lambda got: dropped_before_preemption(got, refs, DROPPED_ON_PREEMPTION) or CHANGED_BY_PREEMPTION


def eos_diagnosis(got: list[int], want: list[int]) -> Label | None:
    return diagnose_eos(got, want, EOS_LATE, EOS_DROPPED)


def chunk_logits(weights, config, ids: torch.Tensor, chunks: list[int]) -> torch.Tensor:
    """Logits (T, V) of one sequence ``ids`` (1, T) fed in ``chunks``, by the float64 LLaMA."""
    return knob_forward(weights, config, ids, chunks)[0]


def paged_forward_mistakes(weights, config, ids: torch.Tensor, chunks: list[int]) -> dict:
    """Known mistakes of paged_forward as logits of one sequence fed in ``chunks`` (with the Qwen
    mistakes when the weights hold biases or q/k norms)."""
    def variant(knobs):
        return lambda: knob_forward(weights, config, ids, chunks, **knobs)[0]
    knobs = {ROPE_POSITIONS_RESTART: {"offset": False}, TOP_LEFT_MASK: {"top_left": True}, **qwen_mistakes(weights)}
    return {label: variant(k) for label, k in knobs.items()}


def qwen_mistakes(weights) -> dict:
    """part01's known mistakes of Qwen weights that apply to ``weights``: label -> knob_forward switches
    (the bias mistakes where a ``*_proj.bias`` is present, the q/k-norm ones where ``q_norm`` is)."""
    biased = any(name.endswith("_proj.bias") for name in weights)
    qk_norm = any(name.endswith("q_norm.weight") for name in weights)
    return {label: knobs for label, knobs in MISTAKE_KNOBS.items()
            if ("skip_bias" in knobs and biased) or ("qk_norm" in knobs and qk_norm)}


def qwen_diagnosis(weights, config, prompts: list[list[int]], max_tokens: int) -> Callable[[list], Label | None]:
    """A lazy diagnosis: the first Qwen mistake (:func:`qwen_mistakes`) whose own greedy tokens the
    outputs equal (tie-aware), computed on a failure only."""
    def diagnose(got: list) -> Label | None:
        for label, knobs in qwen_mistakes(weights).items():
            wrong = [greedy_reference(weights, config, p, max_tokens, **knobs) for p in prompts]
            if all(first_difference(list(o), w, g) is None for o, (w, g) in zip(got, wrong)):
                return label
        return None
    return diagnose


def hf_refs(hf, prompts: list[list[int]], max_tokens: int) -> Refs:
    """transformers' greedy tokens of each prompt alone (infralab.tiny_llama.hf_greedy) as tie-aware
    references: from HF's first near tie on a token's gap is 0, so the comparison stops there."""
    refs = []
    for prompt in prompts:
        sequences, compared = hf_greedy(hf, torch.tensor([prompt]), max_tokens)
        sure = compared - len(prompt)
        refs.append((sequences[0, len(prompt):].tolist(), [math.inf] * sure + [0.0] * (max_tokens - sure)))
    return refs


