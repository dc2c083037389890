"""Workloads of the performance challenges: inputs, the candidate's call, a reference, baselines.

A challenge in course.yml names its workload (``workload: rmsnorm``). The workload knows:

- ``dims``: the names of a shape (``M``, ``N``); ``options`` it accepts (``causal``);
- ``make_inputs(shape, dtype, options, seed, device, ragged=False)``: random inputs, never zeros
  (``ragged``: per-sequence lengths vary, where the workload has lengths);
- ``gate_shapes``: small shapes off every block multiple, checked by the correctness gate on top of
  the challenge shape (whose sizes are round numbers that a kernel missing its masks gets right);
- ``gate_dtypes``: further dtypes the gate checks those shapes in, for mistakes one dtype hides
  (squares kept in the input dtype are harmless in bf16 and overflow in fp16);
- ``call(module, inputs, options)``: how the exercise's public function is called;
- ``reference(inputs, options)``: the expected outputs, computed in fp32 with plain torch;
- ``baselines``: library versions timed interleaved with the candidate (eager torch, cuBLAS,
  SDPA's flash backend, torch.compile where it is cheap).

Outputs are compared with :func:`infralab.testing.assert_close` at the input dtype's tolerance.
torch is imported inside the functions so that loading course.yml stays light.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Inputs = dict[str, Any]


def sample_index(numel: int, seed: int, count: int):
    """``count`` flat indices into an output of ``numel`` elements, drawn from ``seed`` on the CPU
    (the same on both sides of the cage): where an output is too large to ship whole, the judge
    compares these elements, drawn after the calls ran. A wrong fraction ``f`` of the elements
    escapes with probability ``(1 - f) ** count``."""
    torch = _torch()
    return torch.randint(numel, (count,), generator=torch.Generator().manual_seed(seed))


def call_seed(seed: int, call: int) -> int:
    """The index seed of call ``call``'s output among the checks of a whole batch (both sides of the cage)."""
    return (seed * 1_000_003 + call) % 2**31


def refill(old: Inputs, new: Inputs) -> Inputs:
    """``new``'s values in ``old``'s tensors where every tensor matches in shape, dtype, strides and
    device (the addresses stay, the contents change); else ``new``. Both timing routes rewrite the
    candidate's input sets so before every timed batch: a module that caches its answers by its
    inputs' addresses then answers stale values, which the output checks catch."""
    torch = _torch()
    same = old.keys() == new.keys() and all(
        isinstance(o, torch.Tensor) == isinstance(n, torch.Tensor)
        and (not isinstance(n, torch.Tensor) or (o.shape == n.shape and o.dtype == n.dtype and o.device == n.device
                                                 and o.stride() == n.stride()))
        for o, n in ((old[k], new[k]) for k in new))
    if not same:
        return new
    for k, n in new.items():
        if isinstance(n, torch.Tensor):
            torch.Tensor.copy_(old[k], n)
        else:
            old[k] = n
    return old


@dataclass(frozen=True)
class Workload:
    name: str
    dims: tuple[str, ...]
    function: str  # the exercise's public function that is timed
    make_inputs: Callable[..., Inputs]
    call: Callable[[Any, Inputs, dict], Any]
    reference: Callable[[Inputs, dict], Any]
    baselines: dict[str, Callable[[Inputs, dict], Any]]
    options: dict[str, Any] = field(default_factory=dict)  # option -> default
    reduction: Callable[[Inputs], int | None] = lambda inputs: None  # longest sum, for the tolerance
    atol: float | None = None  # overrides the dtype's absolute tolerance (say why where it is set)
    output_names: tuple[str, ...] = ("output",)
    gate_shapes: tuple[dict[str, int], ...] = ()
    gate_dtypes: tuple[str, ...] = ()


def _torch():
    import torch
    return torch


def _randn(shape, dtype, gen, device, scale=1.0):
    torch = _torch()
    return (torch.randn(*shape, generator=gen, device=device, dtype=torch.float32) * scale).to(dtype)


def _gen(seed: int, device):
    return _torch().Generator(device=device).manual_seed(seed)


def _dtype(name: str):
    return getattr(_torch(), name)


def _compiled(fn: Callable) -> Callable:
    """torch.compile of ``fn``, compiled once per process on first use."""
    cache: dict[str, Callable] = {}

    def run(inputs: Inputs, options: dict):
        if "fn" not in cache:
            cache["fn"] = _torch().compile(fn, dynamic=False)
        return cache["fn"](inputs, options)
    return run


# --- vector_add -----------------------------------------------------------------------------

def _add_inputs(shape, dtype, options, seed, device, ragged=False):
    g = _gen(seed, device)
    return {"x": _randn((shape["N"],), _dtype(dtype), g, device), "y": _randn((shape["N"],), _dtype(dtype), g, device)}


def _add_eager(inp, opt):
    return inp["x"] + inp["y"]


# --- rmsnorm (fused residual add + RMSNorm) ----------------------------------------------------

def _rms_inputs(shape, dtype, options, seed, device, ragged=False):
    g = _gen(seed, device)
    dt = _dtype(dtype)
    M, N = shape["M"], shape["N"]
    f32 = _torch().float32
    x, r = _randn((M, N), f32, g, device), _randn((M, N), f32, g, device)
    if ragged:
        x[1::2] *= 1e-3  # odd rows tiny: the mean square is close to eps, and where eps goes matters
        r[1::2] *= 1e-3
        x[2::4] *= 100.0  # some rows large: their sum of squares overflows fp16 (65504) unless in fp32
        r[2::4] *= 100.0
    return {"x": x.to(dt), "residual": r.to(dt), "weight": (1.0 + 0.1 * _randn((N,), f32, g, device)).to(dt)}


def _rms_eager(inp, opt):
    torch = _torch()
    eps = opt.get("eps", 1e-6)
    h = inp["x"] + inp["residual"]
    hf = h.float()
    y = (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps)).to(h.dtype) * inp["weight"]
    return y, h


def _rms_reference(inp, opt):
    torch = _torch()
    eps = opt.get("eps", 1e-6)
    h = inp["x"].float() + inp["residual"].float()
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * inp["weight"].float()
    return y.to(inp["x"].dtype), h.to(inp["x"].dtype)


# --- softmax ---------------------------------------------------------------------------------

def _softmax_inputs(shape, dtype, options, seed, device, ragged=False):
    x = _randn((shape["M"], shape["N"]), _torch().float32, _gen(seed, device), device, scale=2.0)
    if ragged:  # odd rows get large logits: exp without subtracting the row max overflows there
        x[1::2] *= 15.0
    return {"x": x.to(_dtype(dtype))}


def _softmax_eager(inp, opt):
    return _torch().softmax(inp["x"], dim=-1)


def _softmax_reference(inp, opt):
    return _torch().softmax(inp["x"].float(), dim=-1).to(inp["x"].dtype)


# --- matmul ----------------------------------------------------------------------------------

def _mm_inputs(shape, dtype, options, seed, device, ragged=False):
    g = _gen(seed, device)
    dt = _dtype(dtype)
    a = _randn((shape["M"], shape["K"]), dt, g, device)
    if ragged:  # the gate also hands over a transposed (non-contiguous) b: strides must be honoured
        return {"a": a, "b": _randn((shape["N"], shape["K"]), dt, g, device).t()}
    return {"a": a, "b": _randn((shape["K"], shape["N"]), dt, g, device)}


def _mm_cublas(inp, opt):
    return _torch().matmul(inp["a"], inp["b"])


def _mm_reference(inp, opt):
    torch = _torch()
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return torch.matmul(inp["a"].float(), inp["b"].float()).to(inp["a"].dtype)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


# Attention gates: q of standard deviation 4 gives scores of standard deviation 4, so each output is
# dominated by a few keys (|o| ~ 1); with q ~ N(0, 1) attention over thousands of keys averages V to
# |o| ~ 0.02, and an output of zeros passes bf16's tolerance. No tolerance widens with the context
# either: an output is a convex combination of V rows, its error does not grow with their number.
PEAKY_Q = 4.0


# --- flash_attention (forward, returns O and LSE) --------------------------------------------

def _attn_inputs(shape, dtype, options, seed, device, ragged=False):
    g = _gen(seed, device)
    dt = _dtype(dtype)
    B, H, S, D = shape["B"], shape["H"], shape["S"], shape["D"]
    s_k = S + 57 if ragged else S  # the gate: more keys than queries, where the causal alignment shows
    # q of standard deviation 4 (scores of standard deviation 4): see PEAKY_Q
    return {"q": _randn((B, H, S, D), dt, g, device, scale=PEAKY_Q), "k": _randn((B, H, s_k, D), dt, g, device),
            "v": _randn((B, H, s_k, D), dt, g, device)}


def _sdpa_flash(inp, opt):
    torch = _torch()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(inp["q"], inp["k"], inp["v"],
                                                                is_causal=bool(opt.get("causal", False)))


def _attn_reference(inp, opt):
    """O and LSE (natural log, fp32, (B, H, S)) in fp32, one batch entry at a time."""
    torch = _torch()
    q, k, v = inp["q"], inp["k"], inp["v"]
    B, H, S, D = q.shape
    scale = 1.0 / math.sqrt(D)
    outs, lses = [], []
    for b in range(B):
        s = torch.matmul(q[b].float(), k[b].float().transpose(-1, -2)) * scale
        if opt.get("causal", False):
            mask = torch.ones(S, k.shape[2], dtype=torch.bool, device=q.device).tril(k.shape[2] - S)
            s = s.masked_fill(~mask, float("-inf"))
        lse = torch.logsumexp(s, dim=-1)
        outs.append(torch.matmul(torch.exp(s - lse[..., None]), v[b].float()).to(q.dtype))
        lses.append(lse)
        del s
    return torch.stack(outs), torch.stack(lses)


# --- decode_attention (split-KV, GQA) ------------------------------------------------------

def _decode_inputs(shape, dtype, options, seed, device, ragged=False):
    torch = _torch()
    g = _gen(seed, device)
    dt = _dtype(dtype)
    B, HQ, HKV, S, D = shape["B"], shape["HQ"], shape["HKV"], shape["S"], shape["D"]
    return {"q": _randn((B, HQ, D), dt, g, device, scale=PEAKY_Q), "k_cache": _randn((B, HKV, S, D), dt, g, device),
            "v_cache": _randn((B, HKV, S, D), dt, g, device),
            "seq_lens": (torch.randint(1, S + 1, (B,), generator=g, device=device, dtype=torch.int32) if ragged
                         else torch.full((B,), S, dtype=torch.int32, device=device))}


def _decode_sdpa_flash(inp, opt):
    torch = _torch()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        o = torch.nn.functional.scaled_dot_product_attention(inp["q"][:, :, None, :], inp["k_cache"],
                                                             inp["v_cache"], enable_gqa=True)
    return o[:, :, 0, :]


def _decode_reference(inp, opt):
    torch = _torch()
    q, k, v, lens = inp["q"], inp["k_cache"], inp["v_cache"], inp["seq_lens"]
    B, HQ, D = q.shape
    group = HQ // k.shape[1]
    out = torch.empty(B, HQ, D, dtype=q.dtype, device=q.device)
    lse = torch.empty(B, HQ, dtype=torch.float32, device=q.device)
    for b in range(B):
        n = int(lens[b])
        kb = k[b, :, :n].float().repeat_interleave(group, dim=0)  # (HQ, n, D)
        vb = v[b, :, :n].float().repeat_interleave(group, dim=0)
        s = torch.einsum("hd,hnd->hn", q[b].float(), kb) / math.sqrt(D)
        out[b] = torch.einsum("hn,hnd->hd", torch.softmax(s, dim=-1), vb).to(q.dtype)
        lse[b] = torch.logsumexp(s, dim=-1)
    return out, lse


# --- paged_decode (split-KV decode through block tables, GQA; part04's Triton kernel) ----------------

def _paged_inputs(shape, dtype, options, seed, device, ragged=False):
    """Pools ``(num_blocks, BS, HKV, D)`` and tables whose entries are a random permutation of the pool's
    blocks, so every entry past a sequence's length is a stale real block (never -1: a kernel that reads
    it gets garbage, not an illegal address that would end the process's CUDA context). Lengths: CTX
    for every sequence; ``options.ragged``: the ramp CTX*(b+1)/B in a random order (its sum is
    CTX*(B+1)/2, what the challenge's bytes formula counts); the gate's ``ragged``: uniform in 1..CTX."""
    torch = _torch()
    g = _gen(seed, device)
    dt = _dtype(dtype)
    B, HQ, HKV, CTX, D, BS = (shape[k] for k in ("B", "HQ", "HKV", "CTX", "D", "BS"))
    max_blocks = -(-CTX // BS)
    num_blocks = B * max_blocks + 3
    tables = torch.randperm(num_blocks, generator=g, device=device)[:B * max_blocks].view(B, max_blocks)
    if ragged:
        lens = torch.randint(1, CTX + 1, (B,), generator=g, device=device)
    elif options.get("ragged", False):
        ramp = (torch.arange(1, B + 1, device=device) * CTX) // B
        lens = ramp[torch.randperm(B, generator=g, device=device)]
    else:
        lens = torch.full((B,), CTX, device=device)
    return {"q": _randn((B, HQ, D), dt, g, device, scale=PEAKY_Q),
            "k_pool": _randn((num_blocks, BS, HKV, D), dt, g, device),
            "v_pool": _randn((num_blocks, BS, HKV, D), dt, g, device), "block_tables": tables.to(torch.int32),
            "context_lens": lens.to(torch.int32), "max_len": CTX}


def _paged_rows(inp):
    """Pool row of every table position, ``(B, max_blocks * BS)``, and the positions."""
    torch = _torch()
    tables, bs = inp["block_tables"], inp["k_pool"].shape[1]
    pos = torch.arange(tables.shape[1] * bs, device=tables.device)
    return tables.long()[:, pos // bs] * bs + pos % bs, pos


def _paged_gather_sdpa(inp, opt):
    """What an engine without the kernel runs: gather each sequence's K/V through its table into a
    contiguous (B, HKV, CTX, D) copy, then SDPA (a key mask when the lengths differ)."""
    torch = _torch()
    q, k_pool, v_pool, lens = inp["q"], inp["k_pool"], inp["v_pool"], inp["context_lens"]
    rows, pos = (t[..., :inp["max_len"]] for t in _paged_rows(inp))
    hkv, d = k_pool.shape[2], k_pool.shape[3]
    k = k_pool.view(-1, hkv, d)[rows].transpose(1, 2)
    v = v_pool.view(-1, hkv, d)[rows].transpose(1, 2)
    mask = None if not opt.get("ragged", False) else (pos[None, :] < lens[:, None])[:, None, None, :]
    o = torch.nn.functional.scaled_dot_product_attention(q[:, :, None, :], k, v, attn_mask=mask, enable_gqa=True)
    return o[:, :, 0, :]


def _paged_reference(inp, opt):
    torch = _torch()
    q, k_pool, v_pool, lens = inp["q"], inp["k_pool"], inp["v_pool"], inp["context_lens"]
    B, HQ, D = q.shape
    hkv = k_pool.shape[2]
    rows, _ = _paged_rows(inp)
    out = torch.empty(B, HQ, D, dtype=q.dtype, device=q.device)
    for b in range(B):
        r = rows[b, :int(lens[b])]
        kb = k_pool.view(-1, hkv, D)[r].float().transpose(0, 1).repeat_interleave(HQ // hkv, dim=0)  # (HQ, n, D)
        vb = v_pool.view(-1, hkv, D)[r].float().transpose(0, 1).repeat_interleave(HQ // hkv, dim=0)
        s = torch.einsum("hd,hnd->hn", q[b].float(), kb) / math.sqrt(D)
        out[b] = torch.einsum("hn,hnd->hd", torch.softmax(s, dim=-1), vb).to(q.dtype)
    return out


# --- w4a16 (int4 group-quantised weight, 16-bit activations) -----------------------------------

def _w4a16_inputs(shape, dtype, options, seed, device, ragged=False):
    """quant_basics' layout: codes 0..15 packed low nibble first along K, scales in the activation dtype,
    uint8 zero points, groups of ``group_size``; ``w`` is the dequantised weight (N, K) the baseline multiplies."""
    torch = _torch()
    g = _gen(seed, device)
    dt = _dtype(dtype)
    M, N, K, group = shape["M"], shape["N"], shape["K"], int(options.get("group_size", 128))
    codes = torch.randint(0, 16, (N, K), generator=g, device=device, dtype=torch.uint8)
    scales = (0.002 + 0.01 * torch.rand(N, K // group, generator=g, device=device)).to(dt)
    zeros = torch.randint(0, 16, (N, K // group), generator=g, device=device, dtype=torch.uint8)
    index = torch.arange(K, device=device) // group
    w = ((codes.float() - zeros.float()[:, index]) * scales.float()[:, index]).to(dt)
    # the gate also hands over a transposed (non-contiguous) x: strides must be honoured
    x = _randn((K, M), dt, g, device).t() if ragged else _randn((M, K), dt, g, device)
    return {"x": x, "qweight": codes[:, 0::2] | (codes[:, 1::2] << 4), "scales": scales, "zeros": zeros,
            "group_size": group, "w": w}


def _w4a16_cublas(inp, opt):
    return _torch().matmul(inp["x"], inp["w"].t())


def _w4a16_reference(inp, opt):
    torch = _torch()
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return torch.matmul(inp["x"].float(), inp["w"].float().t()).to(inp["x"].dtype)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("vector_add", ("N",), "vector_add", _add_inputs,
             call=lambda m, i, o: m.vector_add(i["x"], i["y"]),
             reference=lambda i, o: (i["x"].float() + i["y"].float()).to(i["x"].dtype),
             baselines={"eager": _add_eager}, gate_shapes=({"N": 1_000_003},)),
    Workload("rmsnorm", ("M", "N"), "fused_add_rmsnorm", _rms_inputs,
             call=lambda m, i, o: m.fused_add_rmsnorm(i["x"], i["residual"], i["weight"], o.get("eps", 1e-6)),
             reference=_rms_reference,
             baselines={"eager": _rms_eager, "compile": _compiled(_rms_eager)},
             options={"eps": 1e-6}, output_names=("output", "residual"), gate_shapes=({"M": 37, "N": 3000},),
             gate_dtypes=("float16",)),
    Workload("softmax", ("M", "N"), "softmax", _softmax_inputs,
             call=lambda m, i, o: m.softmax(i["x"]),
             reference=_softmax_reference,
             baselines={"eager": _softmax_eager, "compile": _compiled(_softmax_eager)},
             gate_shapes=({"M": 37, "N": 3001}, {"M": 5, "N": 70001}),
             atol=1e-6),  # probabilities are mostly tiny: bf16's atol (3e-2) would hide errors in all of them
    Workload("matmul", ("M", "N", "K"), "matmul", _mm_inputs,
             call=lambda m, i, o: m.matmul(i["a"], i["b"]),
             reference=_mm_reference, baselines={"cublas": _mm_cublas},
             reduction=lambda i: int(i["a"].shape[1]),
             gate_shapes=({"M": 1400, "N": 777, "K": 555},)),  # 1400: a short last group for 64/128/256-row tiles
    Workload("flash_attention", ("B", "H", "S", "D"), "flash_attention", _attn_inputs,
             call=lambda m, i, o: m.flash_attention(i["q"], i["k"], i["v"], causal=bool(o.get("causal", False))),
             reference=_attn_reference, baselines={"sdpa_flash": _sdpa_flash},
             options={"causal": False},  # no reduction widening: PEAKY_Q
             output_names=("o", "lse"), gate_shapes=({"B": 2, "H": 3, "S": 1000, "D": 128},)),
    Workload("decode_attention", ("B", "HQ", "HKV", "S", "D"), "decode_attention", _decode_inputs,
             call=lambda m, i, o: m.decode_attention(i["q"], i["k_cache"], i["v_cache"], i["seq_lens"]),
             reference=_decode_reference, baselines={"sdpa_flash": _decode_sdpa_flash},
             output_names=("o", "lse"),  # no reduction widening: PEAKY_Q
             gate_shapes=({"B": 5, "HQ": 32, "HKV": 8, "S": 3001, "D": 128},)),
    Workload("paged_decode", ("B", "HQ", "HKV", "CTX", "D", "BS"), "paged_decode_attention", _paged_inputs,
             call=lambda m, i, o: m.paged_decode_attention(i["q"], i["k_pool"], i["v_pool"], i["block_tables"],
                                                           i["context_lens"]),
             # no reduction widening: an output is a convex combination of V rows, its error does not grow
             # with the context (and a widened bf16 atol of 0.17 at 8192 keys would pass zeros)
             reference=_paged_reference, baselines={"gather_sdpa": _paged_gather_sdpa}, options={"ragged": False},
             # lengths off every block and tile, MHA and GQA, blocks of 16 and 32
             gate_shapes=({"B": 5, "HQ": 32, "HKV": 8, "CTX": 3001, "D": 128, "BS": 16},
                          {"B": 3, "HQ": 8, "HKV": 8, "CTX": 999, "D": 64, "BS": 32})),
    Workload("w4a16", ("M", "N", "K"), "w4a16_matmul", _w4a16_inputs,
             call=lambda m, i, o: m.w4a16_matmul(i["x"], i["qweight"], i["scales"], i["zeros"], i["group_size"]),
             reference=_w4a16_reference, baselines={"cublas": _w4a16_cublas}, options={"group_size": 128},
             reduction=lambda i: int(i["x"].shape[1]),
             # batch 1 and 37 (the split-K and the plain path), N off every tile, K not a power of two
             gate_shapes=({"M": 1, "N": 1000, "K": 640}, {"M": 37, "N": 777, "K": 1152})),
)}
