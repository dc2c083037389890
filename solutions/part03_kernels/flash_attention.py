"""FlashAttention forward in Triton: causal and not, with the log-sum-exp (textbook 04 §4.2).

Reference solution. See exercises/part03_kernels/flash_attention.py for the specification.
"""
from __future__ import annotations

import math
import os

import torch
import triton
import triton.language as tl

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


def _configs() -> list[triton.Config]:
    """Hopper-friendly tiles on a GPU; one 32 x 32 tile under the CPU interpreter."""
    if INTERPRETED:
        return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=1)]
    tiles = [(128, 128, 3, 8), (128, 64, 3, 8), (128, 64, 4, 4), (128, 128, 2, 8), (64, 64, 3, 4)]
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=s, num_warps=w) for bm, bn, s, w in tiles]


@triton.jit
def _attend_block_range(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d,
                        lo, hi, causal_shift, S_K, qk_scale,
                        BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    """Online softmax over key blocks [lo, hi): scores in the log2 domain, rescale on a new max.

    MASKED blocks apply the causal mask (key j visible to query i iff j <= i + causal_shift) and
    the key-length bound; the others are known to be fully visible and skip the masking."""
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if MASKED:  # the last block may run past S_K
            k = tl.load(k_base + cols[None, :] * stride_kn + offs_d[:, None], mask=cols[None, :] < S_K, other=0.0)
            v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :], mask=cols[:, None] < S_K, other=0.0)
        else:
            k = tl.load(k_base + cols[None, :] * stride_kn + offs_d[:, None])  # (HEAD_DIM, BLOCK_N): K^T
            v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :])  # (BLOCK_N, HEAD_DIM)
        s = tl.dot(q, k) * qk_scale  # (BLOCK_M, BLOCK_N), log2 domain
        if MASKED:
            visible = (cols[None, :] <= offs_m[:, None] + causal_shift) & (cols[None, :] < S_K)
            s = tl.where(visible, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)  # rescale what was summed under the old max
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(configs=_configs(), key=["S_Q", "S_K", "HEAD_DIM", "CAUSAL"])
@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
                           stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
                           stride_vb, stride_vh, stride_vn, stride_ob, stride_oh, stride_om,
                           H, S_Q, S_K, sm_scale,
                           CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """One program: BLOCK_M queries of one (batch, head) against all the keys they may see."""
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b, h = bh // H, bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = q_ptr + b.to(tl.int64) * stride_qb + h * stride_qh
    k_base = k_ptr + b.to(tl.int64) * stride_kb + h * stride_kh
    v_base = v_ptr + b.to(tl.int64) * stride_vb + h * stride_vh
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :], mask=offs_m[:, None] < S_Q, other=0.0)

    qk_scale = sm_scale * 1.4426950408889634  # fold log2(e) in: exp2 is the fast instruction
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    if CAUSAL:
        shift = S_K - S_Q  # bottom-right alignment: the last query sees every key
        first_row_last_key = start_m * BLOCK_M + shift
        full_end = (first_row_last_key + 1) // BLOCK_N * BLOCK_N  # blocks every row sees whole
        diag_end = tl.minimum((start_m + 1) * BLOCK_M + shift, S_K)
        acc, l_i, m_i = _attend_block_range(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m,
                                            offs_d, 0, full_end, shift, S_K, qk_scale, BLOCK_N, False)
        acc, l_i, m_i = _attend_block_range(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m,
                                            offs_d, full_end, diag_end, shift, S_K, qk_scale, BLOCK_N, True)
    else:
        full_end = S_K // BLOCK_N * BLOCK_N
        acc, l_i, m_i = _attend_block_range(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m,
                                            offs_d, 0, full_end, 0, S_K, qk_scale, BLOCK_N, False)
        acc, l_i, m_i = _attend_block_range(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m,
                                            offs_d, full_end, S_K, S_K, S_K, qk_scale, BLOCK_N, True)

    o = acc / l_i[:, None]
    row_ok = offs_m < S_Q
    o_base = o_ptr + b.to(tl.int64) * stride_ob + h * stride_oh
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :], o.to(o_ptr.dtype.element_ty),
             mask=row_ok[:, None])
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453  # back from log2 to natural log
    tl.store(lse_ptr + bh.to(tl.int64) * S_Q + offs_m, lse, mask=row_ok)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    sm_scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T * sm_scale [+ causal mask]) v per (batch, head), and the row log-sum-exp."""
    if q.dim() != 4 or k.shape != v.shape or q.shape[:2] != k.shape[:2] or q.shape[3] != k.shape[3]:
        raise ValueError(f"expected q (B, H, S_q, D), k and v (B, H, S_k, D); got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    B, H, S_Q, D = q.shape
    S_K = k.shape[2]
    if D not in (16, 32, 64, 128, 256):
        raise ValueError(f"head dim must be a power of two in 16..256, got {D}")
    if causal and S_K < S_Q:
        raise ValueError(f"causal attention needs S_k >= S_q (bottom-right alignment), got {S_Q} > {S_K}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    o = torch.empty_like(q, memory_format=torch.contiguous_format)
    lse = torch.empty((B, H, S_Q), dtype=torch.float32, device=q.device)

    def grid(meta):
        return (triton.cdiv(S_Q, meta["BLOCK_M"]), B * H)

    flash_attention_kernel[grid](q, k, v, o, lse, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3],
                                 *o.stride()[:3], H, S_Q, S_K, sm_scale, CAUSAL=bool(causal), HEAD_DIM=D)
    return o, lse
