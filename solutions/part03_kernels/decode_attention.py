"""Split-KV decode attention with GQA (flash-decoding) in Triton (textbook 04 §4.4).

Reference solution. See exercises/part03_kernels/decode_attention.py for the specification.
"""
from __future__ import annotations

import math
import os

import torch
import triton
import triton.language as tl

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
BLOCK_N = 32 if INTERPRETED else 64  # keys per inner step


@triton.jit
def decode_split_kernel(q_ptr, k_ptr, v_ptr, seq_lens_ptr, mid_o_ptr, mid_lse_ptr,
                        stride_qb, stride_qh, stride_kb, stride_kh, stride_kn,
                        stride_vb, stride_vh, stride_vn,
                        H_KV, NUM_SPLITS, SPLIT_LEN, sm_scale,
                        GROUP: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
                        HEAD_DIM: tl.constexpr):
    """One program: the GROUP query heads that share kv head ``hk`` of sequence ``b``, over the keys
    of one split. Writes the split's normalised partial output and its log2-sum-exp."""
    bh = tl.program_id(0)
    split = tl.program_id(1)
    b, hk = bh // H_KV, bh % H_KV
    seq_len = tl.load(seq_lens_ptr + b).to(tl.int32)
    start = split * SPLIT_LEN
    end = tl.minimum(start + SPLIT_LEN, seq_len)

    offs_g = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, HEAD_DIM)
    heads = hk * GROUP + offs_g  # GQA: query head h reads kv head h // GROUP
    q = tl.load(q_ptr + b.to(tl.int64) * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=offs_g[:, None] < GROUP, other=0.0)  # (BLOCK_H, HEAD_DIM)
    k_base = k_ptr + b.to(tl.int64) * stride_kb + hk.to(tl.int64) * stride_kh
    v_base = v_ptr + b.to(tl.int64) * stride_vb + hk.to(tl.int64) * stride_vh

    qk_scale = sm_scale * 1.4426950408889634  # log2 domain: exp2 is the fast instruction
    m_i = tl.full((BLOCK_H,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_H,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_H, HEAD_DIM), dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(start, end, BLOCK_N):
        cols = start_n + offs_n
        in_range = cols < end
        k = tl.load(k_base + cols[None, :].to(tl.int64) * stride_kn + offs_d[:, None],
                    mask=in_range[None, :], other=0.0)  # (HEAD_DIM, BLOCK_N)
        s = tl.dot(q, k) * qk_scale
        s = tl.where(in_range[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + cols[:, None].to(tl.int64) * stride_vn + offs_d[None, :],
                    mask=in_range[:, None], other=0.0)  # (BLOCK_N, HEAD_DIM)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new

    nonempty = l_i > 0  # a split past the end of a short sequence saw no key
    o = acc / tl.where(nonempty, l_i, 1.0)[:, None]
    lse2 = tl.where(nonempty, m_i + tl.math.log2(tl.where(nonempty, l_i, 1.0)), -float("inf"))
    row = (b * H_KV * GROUP + heads).to(tl.int64) * NUM_SPLITS + split  # (B, H_Q, NUM_SPLITS) layout
    head_ok = offs_g < GROUP
    tl.store(mid_o_ptr + row[:, None] * HEAD_DIM + offs_d[None, :], o, mask=head_ok[:, None])
    tl.store(mid_lse_ptr + row, lse2, mask=head_ok)


@triton.jit
def decode_combine_kernel(mid_o_ptr, mid_lse_ptr, o_ptr, lse_ptr, NUM_SPLITS,
                          BLOCK_S: tl.constexpr, HEAD_DIM: tl.constexpr):
    """One program per (batch, query head): merge the splits, each weighted by exp(lse_s - lse)."""
    row = tl.program_id(0).to(tl.int64)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    split_ok = offs_s < NUM_SPLITS
    lse2 = tl.load(mid_lse_ptr + row * NUM_SPLITS + offs_s, mask=split_ok, other=-float("inf"))
    m = tl.max(lse2, axis=0)  # finite: the first split always holds key 0
    w = tl.math.exp2(lse2 - m)  # empty splits weigh exp2(-inf) = 0
    parts = tl.load(mid_o_ptr + (row * NUM_SPLITS + offs_s[:, None]) * HEAD_DIM + offs_d[None, :],
                    mask=split_ok[:, None], other=0.0)  # (BLOCK_S, HEAD_DIM)
    total = tl.sum(w, axis=0)
    o = tl.sum(parts * w[:, None], axis=0) / total
    tl.store(o_ptr + row * HEAD_DIM + offs_d, o.to(o_ptr.dtype.element_ty))
    tl.store(lse_ptr + row, (m + tl.math.log2(total)) * 0.6931471805599453)  # natural log


def _default_splits(q: torch.Tensor, programs: int, s_max: int) -> int:
    """Enough splits to give every SM a few programs; a handful under the interpreter."""
    if INTERPRETED or q.device.type != "cuda":
        target = 4
    else:
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        target = triton.cdiv(4 * sms, programs)
    return max(1, min(target, triton.cdiv(s_max, BLOCK_N)))


def decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, seq_lens: torch.Tensor,
                     sm_scale: float | None = None, num_splits: int | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """One new token per sequence attends to its cached keys and values, split along the keys."""
    if q.dim() != 3 or k_cache.dim() != 4 or k_cache.shape != v_cache.shape:
        raise ValueError(f"expected q (B, Hq, D), k_cache and v_cache (B, Hkv, S, D); got "
                         f"{tuple(q.shape)}, {tuple(k_cache.shape)}, {tuple(v_cache.shape)}")
    B, H_Q, D = q.shape
    _, H_KV, S, _ = k_cache.shape
    if k_cache.shape[0] != B or k_cache.shape[3] != D or H_Q % H_KV:
        raise ValueError(f"q {tuple(q.shape)} does not fit the cache {tuple(k_cache.shape)} "
                         f"(same B and D; Hq a multiple of Hkv)")
    if D not in (16, 32, 64, 128, 256):
        raise ValueError(f"head dim must be a power of two in 16..256, got {D}")
    if seq_lens.shape != (B,) or seq_lens.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"seq_lens must be an int32/int64 tensor of shape ({B},)")
    if num_splits is not None and num_splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {num_splits}")
    q, k_cache, v_cache = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k_cache, v_cache))
    group = H_Q // H_KV
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    splits = num_splits or _default_splits(q, B * H_KV, S)
    split_len = triton.cdiv(triton.cdiv(S, splits), BLOCK_N) * BLOCK_N
    mid_o = torch.empty((B, H_Q, splits, D), dtype=torch.float32, device=q.device)
    mid_lse = torch.empty((B, H_Q, splits), dtype=torch.float32, device=q.device)
    decode_split_kernel[(B * H_KV, splits)](
        q, k_cache, v_cache, seq_lens, mid_o, mid_lse, q.stride(0), q.stride(1),
        *k_cache.stride()[:3], *v_cache.stride()[:3], H_KV, splits, split_len, sm_scale,
        GROUP=group, BLOCK_H=max(16, triton.next_power_of_2(group)), BLOCK_N=BLOCK_N, HEAD_DIM=D,
        num_warps=1 if INTERPRETED else 4)
    o = torch.empty((B, H_Q, D), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H_Q), dtype=torch.float32, device=q.device)
    decode_combine_kernel[(B * H_Q,)](mid_o, mid_lse, o, lse, splits,
                                      BLOCK_S=triton.next_power_of_2(splits), HEAD_DIM=D)
    return o, lse
