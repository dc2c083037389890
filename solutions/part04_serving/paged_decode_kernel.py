"""Split-KV paged decode attention in Triton: K/V read through the block table (textbook 04 §4.3
PagedAttention, §4.4 flash-decoding; 05 §5.2 KV 布局).

Reference solution. See exercises/part04_serving/paged_decode_kernel.py for the specification.
中文：参考实现（按块表取 K/V 的 split-KV 解码注意力：分段内在线 softmax，合并时按各段最大值重缩放）。
"""
from __future__ import annotations

import math
import os

if "TRITON_INTERPRET" not in os.environ:  # no GPU: run kernels under the interpreter (before triton loads)
    import torch as _torch

    if not _torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
# Launch settings. GPU: a 64-token tile is 16 KB of K and 16 KB of V in bf16 at D = 128; three stages
# keep ~96 KB in flight per program, two programs per SM (benchmarks/h200_paged_decode.sh tries others).
TILE = {"BLOCK_N": 32, "num_warps": 1, "num_stages": 1} if INTERPRETED else \
    {"BLOCK_N": 64, "num_warps": 4, "num_stages": 3}
PROGRAMS_PER_SM = 8  # default splits: (sequence, kv head, split) programs per SM; more splits shorten a ragged batch's tail


@triton.jit
def paged_decode_split_kernel(q_ptr, k_pool_ptr, v_pool_ptr, block_tables_ptr, context_lens_ptr,
                              mid_o_ptr, mid_max_ptr, mid_sum_ptr,
                              stride_qb, stride_qh, stride_kblk, stride_ktok, stride_kh,
                              stride_vblk, stride_vtok, stride_vh, stride_tb,
                              H_KV, NUM_SPLITS, SPLIT_LEN, MAX_CONTEXT, sm_scale,
                              GROUP: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
                              BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    """One program: the GROUP query heads of kv head ``hk`` of sequence ``b`` over the tokens of one split."""
    bh = tl.program_id(0)
    split = tl.program_id(1)
    b, hk = bh // H_KV, bh % H_KV
    # never past the table row, whatever context_lens says
    context_len = tl.minimum(tl.load(context_lens_ptr + b).to(tl.int32), MAX_CONTEXT)
    start = split * SPLIT_LEN
    end = tl.minimum(start + SPLIT_LEN, context_len)

    offs_g = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, HEAD_DIM)
    heads = hk * GROUP + offs_g  # GQA: query head h reads kv head h // GROUP
    q = tl.load(q_ptr + b.to(tl.int64) * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=offs_g[:, None] < GROUP, other=0.0)  # (BLOCK_H, HEAD_DIM)
    table_row = block_tables_ptr + b.to(tl.int64) * stride_tb
    k_head = k_pool_ptr + hk.to(tl.int64) * stride_kh
    v_head = v_pool_ptr + hk.to(tl.int64) * stride_vh

    qk_scale = sm_scale * 1.4426950408889634  # log2 domain: exp2 is the fast instruction
    m_i = tl.full((BLOCK_H,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_H,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_H, HEAD_DIM), dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(start, end, BLOCK_N):
        pos = start_n + offs_n  # logical token positions of this tile
        in_range = pos < end
        block = tl.load(table_row + pos // BLOCK_SIZE, mask=in_range, other=0).to(tl.int64)  # physical block
        k_rows = block * stride_kblk + (pos % BLOCK_SIZE) * stride_ktok
        v_rows = block * stride_vblk + (pos % BLOCK_SIZE) * stride_vtok
        k = tl.load(k_head + k_rows[None, :] + offs_d[:, None], mask=in_range[None, :], other=0.0)  # (D, BLOCK_N)
        s = tl.dot(q, k) * qk_scale
        s = tl.where(in_range[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_head + v_rows[:, None] + offs_d[None, :], mask=in_range[:, None], other=0.0)  # (BLOCK_N, D)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new

    nonempty = l_i > 0  # a split past the end of a short sequence saw no token
    o = acc / tl.where(nonempty, l_i, 1.0)[:, None]
    row = (b * H_KV * GROUP + heads).to(tl.int64) * NUM_SPLITS + split  # (B, H_Q, NUM_SPLITS) layout
    head_ok = offs_g < GROUP
    tl.store(mid_o_ptr + row[:, None] * HEAD_DIM + offs_d[None, :], o, mask=head_ok[:, None])
    tl.store(mid_max_ptr + row, m_i, mask=head_ok)  # log2 units; -inf for an empty split
    tl.store(mid_sum_ptr + row, l_i, mask=head_ok)  # sum of exp2(s - m_i); 0 for an empty split


@triton.jit
def paged_decode_combine_kernel(mid_o_ptr, mid_max_ptr, mid_sum_ptr, out_ptr, NUM_SPLITS,
                                BLOCK_S: tl.constexpr, HEAD_DIM: tl.constexpr):
    """One program per (sequence, query head): the splits' outputs weighted by their sums rescaled to the common max."""
    row = tl.program_id(0).to(tl.int64)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    split_ok = offs_s < NUM_SPLITS
    m_s = tl.load(mid_max_ptr + row * NUM_SPLITS + offs_s, mask=split_ok, other=-float("inf"))
    l_s = tl.load(mid_sum_ptr + row * NUM_SPLITS + offs_s, mask=split_ok, other=0.0)
    m = tl.max(m_s, axis=0)  # finite: split 0 holds token 0
    w = l_s * tl.math.exp2(m_s - m)  # each split's sum of exponentials, rescaled from its own max to m
    parts = tl.load(mid_o_ptr + (row * NUM_SPLITS + offs_s[:, None]) * HEAD_DIM + offs_d[None, :],
                    mask=split_ok[:, None], other=0.0)  # (BLOCK_S, HEAD_DIM)
    o = tl.sum(parts * w[:, None], axis=0) / tl.sum(w, axis=0)
    tl.store(out_ptr + row * HEAD_DIM + offs_d, o.to(out_ptr.dtype.element_ty))


def _default_splits(q: torch.Tensor, programs: int, max_blocks: int, block_size: int) -> int:
    """Enough splits to give every SM a few programs; two under the interpreter; never a split under one tile."""
    if INTERPRETED or q.device.type != "cuda":
        target = 2
    else:
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        target = triton.cdiv(PROGRAMS_PER_SM * sms, programs)
    return max(1, min(target, triton.cdiv(max_blocks * block_size, TILE["BLOCK_N"])))


def _check(q, k_pool, v_pool, block_tables, context_lens, num_splits) -> None:
    if q.dim() != 3 or k_pool.dim() != 4 or k_pool.shape != v_pool.shape:
        raise ValueError(f"expected q (B, Hq, D) and k_pool, v_pool (num_blocks, block_size, Hkv, D); got "
                         f"{tuple(q.shape)}, {tuple(k_pool.shape)}, {tuple(v_pool.shape)}")
    b, hq, d = q.shape
    hkv = k_pool.shape[2]
    if k_pool.shape[3] != d or hq % hkv:
        raise ValueError(f"q {tuple(q.shape)} does not fit the pool {tuple(k_pool.shape)} (same D; Hq a multiple of Hkv)")
    if d not in (16, 32, 64, 128, 256):
        raise ValueError(f"head dim must be a power of two in 16..256, got {d}")
    if block_tables.dim() != 2 or block_tables.shape[0] != b or block_tables.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"block_tables must be an int32/int64 tensor of shape ({b}, max_blocks)")
    if context_lens.shape != (b,) or context_lens.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"context_lens must be an int32/int64 tensor of shape ({b},)")
    if num_splits is not None and num_splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {num_splits}")


def paged_decode_attention(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                           block_tables: torch.Tensor, context_lens: torch.Tensor,
                           scale: float | None = None, num_splits: int | None = None) -> torch.Tensor:
    """One decode step for a batch whose K/V live in a paged pool: split kernel, then combine kernel."""
    _check(q, k_pool, v_pool, block_tables, context_lens, num_splits)
    q, k_pool, v_pool, block_tables, context_lens = (t if t.stride(-1) == 1 else t.contiguous()
                                                     for t in (q, k_pool, v_pool, block_tables, context_lens))
    B, H_Q, D = q.shape
    _, block_size, H_KV, _ = k_pool.shape
    max_blocks = block_tables.shape[1]
    group = H_Q // H_KV
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    splits = num_splits or _default_splits(q, B * H_KV, max_blocks, block_size)
    split_len = triton.cdiv(max_blocks, splits) * block_size  # whole table entries per split
    mid_o = torch.empty((B, H_Q, splits, D), dtype=torch.float32, device=q.device)
    mid_max = torch.empty((B, H_Q, splits), dtype=torch.float32, device=q.device)
    mid_sum = torch.empty((B, H_Q, splits), dtype=torch.float32, device=q.device)
    paged_decode_split_kernel[(B * H_KV, splits)](
        q, k_pool, v_pool, block_tables, context_lens, mid_o, mid_max, mid_sum,
        q.stride(0), q.stride(1), *k_pool.stride()[:3], *v_pool.stride()[:3], block_tables.stride(0),
        H_KV, splits, split_len, max_blocks * block_size, scale,
        GROUP=group, BLOCK_H=max(16, triton.next_power_of_2(group)), BLOCK_N=TILE["BLOCK_N"],
        BLOCK_SIZE=block_size, HEAD_DIM=D, num_warps=TILE["num_warps"], num_stages=TILE["num_stages"])
    out = torch.empty((B, H_Q, D), dtype=q.dtype, device=q.device)
    paged_decode_combine_kernel[(B * H_Q,)](mid_o, mid_max, mid_sum, out, splits,
                                            BLOCK_S=triton.next_power_of_2(splits), HEAD_DIM=D)
    return out
