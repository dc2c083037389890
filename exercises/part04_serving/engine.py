"""A mini-vLLM: continuous batching over a paged KV cache (textbook capstone P1; 05 §5.2 KV 布局,
§5.3 Continuous Batching, §5.4 Chunked Prefill, §5.5 Prefix Cache; docs/serving.md).

The capstone assembles the parts you wrote. It imports them **relatively** and must keep doing
so: the grader runs this file once on your own parts and once on the reference parts (so one bug
in ``llama`` does not zero the capstone)::

    from ..part01_transformer import sampling                 # sample(): one seeded draw per row
    from ..part04_serving import paged_attention, paged_kv, prefix_cache, scheduler

Who does what (vLLM v1's split between the scheduler, the KV-cache manager and the model runner):

- ``scheduler.Scheduler(num_blocks, block_size, max_num_batched_tokens)`` decides every step
  which sequences run and how many tokens each (it sees no ids, no tensors);
- the **block manager** hands out physical blocks: ``paged_kv.PagedKVCache(num_blocks,
  block_size, 1, 1)`` (used for its allocator and block tables only: the engine appends
  placeholder K/V of shape ``(n, 1, 1)``), or, with ``enable_prefix_caching=True``,
  ``prefix_cache.PrefixCache(num_blocks, block_size)``. It has the scheduler's ``num_blocks``;
  its table for a sequence covers exactly the tokens whose K/V is computed, as the scheduler's
  does, so it never runs out when the scheduler said yes;
- the engine owns the K/V: ``k_cache`` and ``v_cache``, ``(num_layers, num_blocks, block_size,
  Hkv, Dh)`` zeros of the weights' dtype and device (``k_cache[l]`` is layer l's pool, as
  ``paged_kv`` and ``paged_attention`` lay it out), written through **slots**:
  ``slot(pos) = table[pos // block_size] * block_size + pos % block_size``;
- :func:`paged_forward` runs the model on every scheduled token of every sequence in **one**
  batch; attention through ``paged_attention.paged_decode_attention``.

``llama`` has no paged entry point, so :func:`paged_forward` is written here, on ``llama``'s
weights layout and formulas (RMSNorm with eps inside the root, rotate-half RoPE with fp32
``inv_freq``, GQA, SwiGLU; part01). It must give ``llama_forward``'s logits: the tests check
the engine's greedy tokens against one-request-at-a-time ``generate_greedy``.

中文说明：
这是推理路线的综合项目（P1，迷你 vLLM）：用你自己写的 scheduler（决定每步算哪些序列、各算几个
token）、块管理器（paged_kv 或 prefix_cache：分配物理块、维护块表）、paged_attention（通过块表读
K/V）和 sampling（采样）拼出一个连续批处理推理引擎。各层的 K/V 缓存由引擎持有，按槽位
slot = 块表[pos // block_size] * block_size + pos % block_size 写入。一步之内所有序列的所有 token
（prefill 的块和 decode 的单个 token）拼成一个批，一次前向算完。必须用相对导入引用其他练习。
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..part01_transformer import sampling  # noqa: F401  (the parts the engine is built on)
from ..part04_serving import paged_attention, paged_kv, prefix_cache, scheduler  # noqa: F401


@dataclass(frozen=True)
class SamplingParams:
    """How one request is decoded (given: nothing to implement here).

    - ``max_tokens`` (>= 1): the request ends after this many generated tokens;
    - ``temperature``, ``top_k``, ``top_p``, ``min_p``: passed to part01 ``sampling.sample``
      (``temperature=0`` is greedy: the arg-max);
    - ``seed``: the request's **i-th** generated token (i = 0, 1, ...) is
      ``sampling.sample(logits[None], seed + i, temperature, top_k, top_p, min_p)`` on the logits
      of its last position: the same tokens whatever else is in the batch and however often the
      request was preempted;
    - ``eos_token_id``: sampling it ends the request; it is the last token of the output.

    中文：每个请求自己的采样参数；第 i 个生成的 token 用种子 seed + i 采样，与批里还有谁无关；
    采到 eos_token_id 即结束（eos 本身包含在输出中），最多生成 max_tokens 个。
    vLLM 的 SamplingParams 同名字段含义相同（vLLM 的种子是每个请求一个随机数生成器，这里是 seed + i）。
    """
    max_tokens: int = 16
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    seed: int = 0
    eos_token_id: int | None = None


def paged_forward(weights: dict[str, torch.Tensor], config: dict[str, Any],
                  k_cache: torch.Tensor, v_cache: torch.Tensor, input_ids: torch.Tensor,
                  positions: torch.Tensor, slots: torch.Tensor, block_tables: torch.Tensor) -> torch.Tensor:
    """One forward over N tokens of many sequences (prefill chunks and decode tokens mixed).

    Args:
        weights, config: part01 ``llama``'s state dict and config (fp32 or fp64 in the tests).
            Qwen-style weights are handled by their presence: ``...self_attn.{q,k,v}_proj.bias``
            (Qwen2) is added after the projection; ``...self_attn.q_norm.weight`` /
            ``k_norm.weight`` (Qwen3) is an RMSNorm over each head of q / k before RoPE.
        k_cache, v_cache: ``(num_layers, num_blocks, block_size, Hkv, Dh)``, layer l's pool at
            ``[l]``; written here, in place (the only inputs that change).
        input_ids: ``(N,)`` int64, the tokens of the step, sequence after sequence.
        positions: ``(N,)`` int64, each token's position **in its own sequence** (a chunk of
            sequence s from ``start`` has positions ``start, start + 1, ...``).
        slots: ``(N,)`` int64, where each token's K/V goes: row ``slots[i]`` of
            ``k_cache[l].view(-1, Hkv, Dh)`` (and ``v_cache[l]``) for every layer l.
        block_tables: ``(N, max_blocks)`` int32, row i = the block table of token i's sequence,
            padded with -1.

    Returns:
        ``(N, V)`` float32 logits, row i the next-token logits after token i; the same as
        ``llama_forward`` on each sequence alone.

    Per layer: RMSNorm, q/k/v projections, RoPE at ``positions`` (per token), then **write this
    layer's k and v at ``slots`` first**, then attention: every token is one query row of
    ``paged_attention.paged_decode_attention(q (N, Hq, Dh), k_cache[l], v_cache[l],
    block_tables, positions + 1)``: token i sees positions ``0..positions[i]`` of its own sequence, which is the
    causal mask, for a prefill chunk too (its own earlier tokens were just written). Then
    ``o_proj``, the residual, RMSNorm, SwiGLU; at the end the final norm and the LM head
    (``embed_tokens`` when ``tie_word_embeddings``).

    中文：把一步里所有序列的所有 token 摊平成 N 行一起算。每个 token 的位置是它在自己序列中的位置
    （不是在批中的下标）。每层先把本层的 K/V 按槽位写进池，再把每个 token 当成一个解码查询，
    context_len = 位置 + 1，这样 prefill 块内部的因果遮罩自动成立。结果必须与 llama_forward 一致。
    """
    raise NotImplementedError("paged_forward")


class LLMEngine:
    """Continuous batching over a paged KV cache (vLLM's ``LLMEngine``, offline use).

    ``LLMEngine(weights, config, num_blocks=64, block_size=4, max_num_batched_tokens=64,
    enable_prefix_caching=False, clock=time.perf_counter)``: the caches live on the device and in
    the dtype of ``weights["model.embed_tokens.weight"]``; ``clock()`` gives the seconds of the
    latency metrics; ``clock`` may also be a list of readings, returned one per reading in order
    (the tests' fake clock: a function cannot cross into the grader's sandbox).

    Errors: ``ValueError`` from ``add_request`` for an empty prompt, an id outside
    ``[0, vocab_size)``, ``max_tokens < 1``, or a request that can never fit the pool (the
    scheduler's check); ``KeyError`` for an unknown request id.

    中文：引擎持有模型权重、各层 K/V 池、调度器和块管理器；add_request 入队，step 跑一步，generate
    一直跑到全部结束。指标：TTFT、TPOT（以步数和秒计）、每秒 token 数。
    """

    def __init__(self, weights: dict[str, torch.Tensor], config: dict[str, Any], num_blocks: int = 64,
                 block_size: int = 4, max_num_batched_tokens: int = 64, enable_prefix_caching: bool = False,
                 clock: Callable[[], float] | list[float] = time.perf_counter):
        """Build the scheduler, the block manager and the K/V caches (see the module docstring).

        中文：按模块说明创建调度器、块管理器（是否启用前缀缓存）和各层的 K/V 缓存；clock 也可以是一个
        读数列表（测试用的假时钟），每读一次按顺序返回下一个。
        """
        raise NotImplementedError("LLMEngine.__init__")

    def add_request(self, prompt_ids: list[int], sampling_params: SamplingParams | None = None) -> int:
        """Queue a request (``SamplingParams()`` when None); returns its id: 0, 1, 2, ... in order of
        arrival. Reads ``clock()`` once (the arrival time) and notes the arrival step (the number of
        steps run so far); hands ``(id, len(prompt), max_tokens)`` to the scheduler.

        中文：请求入队，返回请求号（按到达顺序 0, 1, 2, ...）；记录到达时刻（读一次 clock()）和到达步数。
        """
        raise NotImplementedError("LLMEngine.add_request")

    def step(self) -> list[int]:
        """One engine step; returns the ids of the requests finished in it (the scheduler's order).

        1. ``plan = scheduler.schedule()``; for each preempted id: ``blocks.free(id)`` (recompute:
           its K/V goes, its prompt and generated tokens stay; its output is unchanged).
        2. For each ``[id, start, n]`` of ``plan["scheduled"]`` (tokens ``start .. start + n - 1``
           of prompt + generated):
           - ``start == 0`` (admission, or re-admission after preemption): register it with the
             block manager. With prefix caching: ``hits = blocks.match(tokens[:min(n, len(tokens)
             - 1)])`` (the last token is never taken from the cache: its logits are needed),
             ``c = len(hits) * block_size`` tokens are **cached**: ``blocks.allocate(id,
             tokens[:c])`` and only ``tokens[c:n]`` are computed; without: ``add_sequence(id)``,
             ``c = 0``;
           - the computed tokens are appended to the block manager (``PrefixCache.append(id,
             token_ids)`` / ``PagedKVCache.append(id, zeros(m, 1, 1), zeros(m, 1, 1))``), their
             slots read off its block table, and they join the batch.
        3. One :func:`paged_forward` over the batch (skipped when it is empty).
        4. Every scheduled id whose chunk ends at its last token (``start + n ==
           scheduler.num_tokens(id)``) samples one token from the logits of that last row
           (``SamplingParams``' rule), appended to its tokens and its output.
        5. Read ``clock()`` once: the time of every token sampled in this step.
        6. ``finished = scheduler.update(eos=[ids that sampled their eos_token_id])``; each
           finished id: ``blocks.free(id)``. The step counter goes up by one.

        中文：一步 = 调度 → 释放被抢占序列的块（重算式抢占，已生成的 token 保留）→ 为每个被调度的块
        登记块表（新接纳的序列先查前缀缓存，命中的整块不再计算，但最后一个 token 总要算）→ 一次批量
        前向 → 对块末尾到达序列末尾的序列采样一个 token → 读一次时钟 → scheduler.update(eos=...) 并
        释放已结束序列的块。
        """
        raise NotImplementedError("LLMEngine.step")

    def generate(self, prompts: list[list[int]],
                 sampling_params: SamplingParams | list[SamplingParams] | None = None) -> list[list[int]]:
        """Add every prompt (one ``SamplingParams`` for all, or one per prompt; a list of another
        length is a ``ValueError``), call :meth:`step` until no request is unfinished, return each
        prompt's generated ids (without the prompt), in the prompts' order.

        中文：全部入队后反复 step 直到都结束，按输入顺序返回每个请求生成的 token（不含 prompt）。
        """
        raise NotImplementedError("LLMEngine.generate")

    def has_unfinished_requests(self) -> bool:
        """True while some added request has not finished.

        中文：是否还有未结束的请求。
        """
        raise NotImplementedError("LLMEngine.has_unfinished_requests")

    def get_output(self, request_id: int) -> list[int]:
        """The ids generated so far for the request (a copy).

        中文：该请求目前已生成的 token（副本）。
        """
        raise NotImplementedError("LLMEngine.get_output")

    def metrics(self, request_id: int) -> dict[str, Any]:
        """Latency figures of one request, a dict with exactly these keys:

        - ``prompt_tokens``, ``generated_tokens``;
        - ``cached_tokens``: tokens taken from the prefix cache, summed over its admissions;
        - ``preemptions``: how many times it was preempted;
        - ``ttft_steps``: steps from arrival to its first token, counting the step that sampled it
          (arrived when ``k`` steps had run, first token sampled by step number ``f`` (0-based):
          ``f + 1 - k``; 1 when the very next step samples it);
        - ``tpot_steps``: ``(step of its last token - step of its first) / (generated - 1)``;
        - ``ttft_s``: ``time of its first token - arrival time`` (``clock()`` readings);
        - ``tpot_s``: ``(time of last - time of first) / (generated - 1)``;
        - ``tokens_per_s``: ``generated / (time of last token - arrival time)``.

        A figure that is not defined yet (no token; one token for TPOT; zero elapsed time) is
        ``None``. vLLM's ``RequestMetrics`` measures TTFT and TPOT the same way, in seconds only.

        中文：单个请求的指标。TTFT = 从到达到第一个 token 的步数（含采样那一步）/秒数；TPOT = 之后
        每个 token 的平均间隔（步数/秒数）；tokens_per_s = 生成数 / (最后一个 token 时刻 − 到达时刻)。
        尚未定义的值为 None。
        """
        raise NotImplementedError("LLMEngine.metrics")

    def stats(self) -> dict[str, int]:
        """Engine totals, a dict with exactly these keys: ``steps`` (steps run), ``computed_tokens``
        (tokens run through :func:`paged_forward`), ``cached_tokens`` (tokens taken from the prefix
        cache), ``generated_tokens``, ``preemptions``.

        中文：引擎累计：步数、前向计算的 token 数、前缀缓存命中的 token 数、生成的 token 数、抢占次数。
        """
        raise NotImplementedError("LLMEngine.stats")
