"""A mini-vLLM (textbook P1; 05 §5.2–5.5): continuous batching over a paged KV cache, built on the
course's own parts. Reference solution; the stub is the specification."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F

from ..part01_transformer import sampling
from ..part04_serving import paged_attention, paged_kv, prefix_cache, scheduler


@dataclass(frozen=True)
class SamplingParams:
    """How one request is decoded (the stub documents every field)."""
    max_tokens: int = 16
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    seed: int = 0
    eos_token_id: int | None = None


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    h = x.float() if x.dtype != torch.float64 else x
    h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


def _rope(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotate-half RoPE of x (N, H, Dh), each row at its own position."""
    d = x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, d, 2, device=x.device).float() / d)
    angles = positions.float()[:, None] * inv_freq[None, :]  # (N, Dh/2)
    emb = torch.cat([angles, angles], dim=-1)[:, None, :]  # (N, 1, Dh)
    x1, x2 = x.chunk(2, dim=-1)
    return (x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()).to(x.dtype)


def _project(w: dict[str, torch.Tensor], name: str, h: torch.Tensor) -> torch.Tensor:
    y = h @ w[name + ".weight"].T
    bias = w.get(name + ".bias")  # Qwen2: q/k/v carry a bias
    return y if bias is None else y + bias


def paged_forward(weights: dict[str, torch.Tensor], config: dict[str, Any],
                  k_cache: torch.Tensor, v_cache: torch.Tensor, input_ids: torch.Tensor,
                  positions: torch.Tensor, slots: torch.Tensor, block_tables: torch.Tensor) -> torch.Tensor:
    """Logits (N, V) float32 of N tokens of many sequences; their K/V written into the caches."""
    n = input_ids.shape[0]
    hq, hkv, eps = config["num_attention_heads"], config["num_key_value_heads"], config["rms_norm_eps"]
    dh = config.get("head_dim") or config["hidden_size"] // hq
    context_lens = positions + 1  # token i attends to positions 0..positions[i] of its own sequence
    x = weights["model.embed_tokens.weight"][input_ids]  # (N, D)
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w = {name[len(p):]: t for name, t in weights.items() if name.startswith(p)}
        h = _rms_norm(x, w["input_layernorm.weight"], eps)
        q = _project(w, "self_attn.q_proj", h).view(n, hq, dh)
        k = _project(w, "self_attn.k_proj", h).view(n, hkv, dh)
        v = _project(w, "self_attn.v_proj", h).view(n, hkv, dh)
        if "self_attn.q_norm.weight" in w:  # Qwen3: RMSNorm over each head before RoPE
            q, k = _rms_norm(q, w["self_attn.q_norm.weight"], eps), _rms_norm(k, w["self_attn.k_norm.weight"], eps)
        q, k = _rope(q, positions, config["rope_theta"]), _rope(k, positions, config["rope_theta"])
        k_cache[i].view(-1, hkv, dh)[slots] = k.to(k_cache.dtype)  # write first: a chunk attends to itself
        v_cache[i].view(-1, hkv, dh)[slots] = v.to(v_cache.dtype)
        o = paged_attention.paged_decode_attention(q, k_cache[i], v_cache[i], block_tables, context_lens)
        x = x + o.reshape(n, hq * dh).to(x.dtype) @ w["self_attn.o_proj.weight"].T
        h = _rms_norm(x, w["post_attention_layernorm.weight"], eps)
        x = x + (F.silu(h @ w["mlp.gate_proj.weight"].T) * (h @ w["mlp.up_proj.weight"].T)) @ w["mlp.down_proj.weight"].T
    x = _rms_norm(x, weights["model.norm.weight"], eps)
    head = weights["lm_head.weight"] if "lm_head.weight" in weights and not config.get("tie_word_embeddings") \
        else weights["model.embed_tokens.weight"]
    return (x @ head.T).float()


@dataclass
class _Request:
    prompt: list[int]
    params: SamplingParams
    arrival_step: int
    arrival_time: float
    tokens: list[int]  # prompt + generated
    output: list[int]
    token_steps: list[int]
    token_times: list[float]
    cached_tokens: int = 0
    preemptions: int = 0
    finished: bool = False


class LLMEngine:
    """Continuous batching over a paged KV cache: the scheduler decides, the engine computes."""

    def __init__(self, weights: dict[str, torch.Tensor], config: dict[str, Any], num_blocks: int = 64,
                 block_size: int = 4, max_num_batched_tokens: int = 64, enable_prefix_caching: bool = False,
                 clock: Callable[[], float] | list[float] = time.perf_counter):
        self.weights, self.config = weights, config
        if not callable(clock):  # a list of readings, returned in order (a fake clock for tests)
            readings = iter([float(t) for t in clock])
            clock = lambda: next(readings)  # noqa: E731
        self.clock = clock
        self.block_size = block_size
        embed = weights["model.embed_tokens.weight"]
        hkv = config["num_key_value_heads"]
        dh = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        shape = (config["num_hidden_layers"], num_blocks, block_size, hkv, dh)
        self.k_cache = torch.zeros(shape, dtype=embed.dtype, device=embed.device)
        self.v_cache = torch.zeros_like(self.k_cache)
        self.scheduler = scheduler.Scheduler(num_blocks, block_size, max_num_batched_tokens)
        self.prefix_caching = enable_prefix_caching
        self.blocks = prefix_cache.PrefixCache(num_blocks, block_size) if enable_prefix_caching \
            else paged_kv.PagedKVCache(num_blocks, block_size, 1, 1)  # the block manager; K/V live in the pools
        self.requests: dict[int, _Request] = {}
        self.num_steps = 0
        self.totals = {"computed_tokens": 0, "cached_tokens": 0, "generated_tokens": 0, "preemptions": 0}

    # ---------------------------------------------------------------- requests

    def add_request(self, prompt_ids: list[int], sampling_params: SamplingParams | None = None) -> int:
        """Queue a request; returns its id (0, 1, 2, ... in the order of arrival)."""
        params = sampling_params or SamplingParams()
        prompt = [int(t) for t in prompt_ids]
        if not prompt or any(not 0 <= t < self.config["vocab_size"] for t in prompt):
            raise ValueError(f"prompt_ids must be a non-empty list of ids in [0, {self.config['vocab_size']})")
        if params.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {params.max_tokens}")
        rid = len(self.requests)
        self.scheduler.add_request(rid, len(prompt), params.max_tokens)
        self.requests[rid] = _Request(prompt, params, self.num_steps, self.clock(), list(prompt), [], [], [])
        return rid

    def has_unfinished_requests(self) -> bool:
        """True while some added request has not finished."""
        return any(not r.finished for r in self.requests.values())

    def get_output(self, request_id: int) -> list[int]:
        """The ids generated so far for the request (a copy)."""
        return list(self.requests[request_id].output)

    # ---------------------------------------------------------------- one step

    def _admit(self, rid: int, n: int) -> int:
        """Block table for the first chunk [0, n); returns how many of its tokens are cached."""
        tokens = self.requests[rid].tokens
        if not self.prefix_caching:
            self.blocks.add_sequence(rid)
            return 0
        hits = self.blocks.match(tokens[:min(n, len(tokens) - 1)])  # the last token is always computed
        cached = len(hits) * self.block_size
        self.blocks.allocate(rid, tokens[:cached])
        return cached

    def _reserve(self, rid: int, start: int, first: int, end: int) -> None:
        """Grow the block manager's table by the tokens [first, end) computed this step (a chunk from
        ``start``; ``first > start`` after a prefix-cache hit: the cached tokens are in the table already)."""
        if self.prefix_caching:
            self.blocks.append(rid, self.requests[rid].tokens[first:end])
        else:
            self.blocks.append(rid, torch.zeros(end - first, 1, 1), torch.zeros(end - first, 1, 1))

    def _slots(self, rid: int, positions: torch.Tensor) -> torch.Tensor:
        table = torch.tensor(self.blocks.block_table(rid), dtype=torch.int64)
        return table[positions // self.block_size] * self.block_size + positions % self.block_size

    def _preempt(self, rid: int) -> None:
        """Recompute: the K/V goes, the prompt and generated tokens stay."""
        self.blocks.free(rid)
        self.requests[rid].preemptions += 1
        self.totals["preemptions"] += 1

    def _positions(self, first: int, end: int) -> torch.Tensor:
        """Positions of the tokens [first, end) of one sequence: their places in that sequence."""
        return torch.arange(first, end)

    def _seed(self, r: _Request) -> int:
        return r.params.seed + len(r.output)  # the i-th token of a request: seed + i, whatever the batch

    def _sample(self, rids: list[int], logits: torch.Tensor) -> list[int]:
        """One token per request, each with its own params and seed (the greedy rows in one call:
        an arg-max per row needs no seed, and one call is one device sync instead of one per row)."""
        out: list[int | None] = [None] * len(rids)
        greedy = [i for i, rid in enumerate(rids) if self.requests[rid].params.temperature == 0]
        if greedy:
            for i, token in zip(greedy, sampling.sample(logits[greedy], 0, temperature=0).tolist()):
                out[i] = token
        for i, rid in enumerate(rids):
            if out[i] is None:
                r = self.requests[rid]
                p = r.params
                out[i] = int(sampling.sample(logits[i:i + 1], self._seed(r), p.temperature, p.top_k, p.top_p,
                                             p.min_p)[0])
        return out

    def _ends(self, r: _Request) -> bool:
        """Did the token just sampled end the request?"""
        return r.tokens[-1] == r.params.eos_token_id

    def step(self) -> list[int]:
        """Schedule, run one batched forward, sample, finish; returns the ids finished this step."""
        plan = self.scheduler.schedule()
        for rid in plan["preempted"]:
            self._preempt(rid)
        ids, positions, slots, tables, last_row = [], [], [], [], {}
        for rid, start, n in plan["scheduled"]:
            first = start
            if start == 0:
                first = self._admit(rid, n)
                self.requests[rid].cached_tokens += first
                self.totals["cached_tokens"] += first
            if first == start + n:
                continue  # the whole chunk came from the prefix cache
            self._reserve(rid, start, first, start + n)
            pos = self._positions(first, start + n)
            ids += self.requests[rid].tokens[first:start + n]
            positions.append(pos)
            slots.append(self._slots(rid, pos))
            tables += [self.blocks.block_table(rid)] * len(pos)
            last_row[rid] = len(ids) - 1
        samplers = [rid for rid, start, n in plan["scheduled"] if start + n == self.scheduler.num_tokens(rid)]
        new_tokens = {}
        if ids:
            device = self.k_cache.device
            width = max(len(t) for t in tables)
            table = torch.tensor([t + [-1] * (width - len(t)) for t in tables], dtype=torch.int32, device=device)
            logits = paged_forward(self.weights, self.config, self.k_cache, self.v_cache,
                                   torch.tensor(ids, device=device), torch.cat(positions).to(device),
                                   torch.cat(slots).to(device), table)
            self.totals["computed_tokens"] += len(ids)
            new_tokens = dict(zip(samplers, self._sample(samplers, logits[[last_row[rid] for rid in samplers]])))
        now = self.clock()
        eos = []
        for rid in samplers:
            r, token = self.requests[rid], new_tokens[rid]
            r.tokens.append(token)
            r.output.append(token)
            r.token_steps.append(self.num_steps)
            r.token_times.append(now)
            if self._ends(r):
                eos.append(rid)
        self.totals["generated_tokens"] += len(samplers)
        finished = self.scheduler.update(eos=eos)
        for rid in finished:
            self.blocks.free(rid)
            self.requests[rid].finished = True
        self.num_steps += 1
        return finished

    def generate(self, prompts: list[list[int]],
                 sampling_params: SamplingParams | list[SamplingParams] | None = None) -> list[list[int]]:
        """Add every prompt, step until all are finished; the generated ids of each, in order."""
        if not isinstance(sampling_params, (list, tuple)):
            sampling_params = [sampling_params] * len(prompts)
        if len(sampling_params) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(sampling_params)} sampling params")
        rids = [self.add_request(p, sp) for p, sp in zip(prompts, sampling_params)]
        while self.has_unfinished_requests():
            self.step()
        return [self.get_output(rid) for rid in rids]

    # ---------------------------------------------------------------- metrics

    def metrics(self, request_id: int) -> dict[str, Any]:
        """Per-request latency figures, in engine steps and in clock seconds (stub: the definitions)."""
        r = self.requests[request_id]
        n = len(r.output)
        m: dict[str, Any] = {"prompt_tokens": len(r.prompt), "generated_tokens": n,
                             "cached_tokens": r.cached_tokens, "preemptions": r.preemptions,
                             "ttft_steps": None, "tpot_steps": None, "ttft_s": None, "tpot_s": None,
                             "tokens_per_s": None}
        if n:
            m["ttft_steps"] = r.token_steps[0] + 1 - r.arrival_step
            m["ttft_s"] = r.token_times[0] - r.arrival_time
            elapsed = r.token_times[-1] - r.arrival_time
            m["tokens_per_s"] = n / elapsed if elapsed > 0 else None
        if n > 1:
            m["tpot_steps"] = (r.token_steps[-1] - r.token_steps[0]) / (n - 1)
            m["tpot_s"] = (r.token_times[-1] - r.token_times[0]) / (n - 1)
        return m

    def stats(self) -> dict[str, int]:
        """Engine totals: steps, tokens run through the model, cached, generated, preemptions."""
        return {"steps": self.num_steps, **self.totals}
