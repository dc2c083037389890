"""Split-KV decode attention with GQA, "flash-decoding" (textbook 04 §4.4, site "Decode 专项内核").

At decode time each sequence brings one new query token per head, and the work is reading the
KV cache: with a batch of a few sequences and one program per (sequence, head), a long cache
keeps only a handful of SMs busy. Flash-decoding splits the keys of each sequence into
``num_splits`` chunks, one program per (sequence, kv head, split), each producing a partial
output normalised over its chunk and the chunk's log-sum-exp; a second kernel combines them::

    lse = log(sum_s exp(lse_s));   o = sum_s exp(lse_s - lse) * o_s

With grouped-query attention (GQA) Hq query heads share Hkv kv heads: query head h reads kv
head ``h // (Hq // Hkv)``. Let one program handle all the query heads of a group, so each K/V
tile is read once and used by the whole group (a (group, D) x (D, BLOCK_N) ``tl.dot``, the
group padded to 16 rows). Sequences have different lengths: only the first ``seq_lens[b]``
positions of the cache are valid; a split that starts past the end of a short sequence sees no
key at all and must contribute nothing (weight 0, no NaN).

中文说明：
解码阶段每条序列每个头只有一个查询，瓶颈在读 KV cache。flash-decoding 把每条序列的键切成
num_splits 段，每段一个程序算出段内归一化的部分输出 o_s 和段内 lse_s，再用第二个 kernel 按
exp(lse_s - lse) 加权合并。GQA 中查询头 h 使用 kv 头 h // (Hq // Hkv)；一个程序处理同组的全部查询头，
K/V 只读一次。每条序列只有前 seq_lens[b] 个位置有效；完全越过序列末尾的段没有任何键，
它的权重必须为 0，且不能产生 NaN。
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def decode_split_kernel(q_ptr, k_ptr, v_ptr, seq_lens_ptr, mid_o_ptr, mid_lse_ptr,
                        stride_qb, stride_qh, stride_kb, stride_kh, stride_kn,
                        stride_vb, stride_vh, stride_vn,
                        H_KV, NUM_SPLITS, SPLIT_LEN, sm_scale,
                        GROUP: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
                        HEAD_DIM: tl.constexpr):
    """Program (b * H_KV + hk, split): query heads [hk*GROUP, (hk+1)*GROUP) of sequence b against
    keys [split*SPLIT_LEN, min((split+1)*SPLIT_LEN, seq_lens[b])).

    Args:
        q_ptr: (B, Hq, HEAD_DIM); k_ptr, v_ptr: (B, H_KV, S, HEAD_DIM) caches (last dim contiguous).
        seq_lens_ptr: (B,) valid lengths.
        mid_o_ptr: fp32 (B, Hq, NUM_SPLITS, HEAD_DIM) partial outputs, each normalised over its split.
        mid_lse_ptr: fp32 (B, Hq, NUM_SPLITS) log-sum-exp of each split (-inf for an empty split).
        GROUP: Hq // H_KV; BLOCK_H: GROUP padded to a power of two ≥ 16.

    中文：一个程序处理一组查询头、一段键；写出段内归一化的输出和段内 lse（空段为 -inf，输出 0）。
    """
    raise NotImplementedError("decode_split_kernel")


@triton.jit
def decode_combine_kernel(mid_o_ptr, mid_lse_ptr, o_ptr, lse_ptr, NUM_SPLITS,
                          BLOCK_S: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Program ``b * Hq + h`` merges the NUM_SPLITS partial results of one query head.

    Writes ``o = sum_s exp(lse_s - lse) * o_s`` (in o's dtype) and ``lse = log(sum_s exp(lse_s))``
    (fp32, natural log), with BLOCK_S = next power of two ≥ NUM_SPLITS.

    中文：按 exp(lse_s - lse) 加权合并各段结果。
    """
    raise NotImplementedError("decode_combine_kernel")


def decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, seq_lens: torch.Tensor,
                     sm_scale: float | None = None, num_splits: int | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode attention of one query token per sequence over its KV cache, split along the keys.

    Args:
        q: ``(B, Hq, D)``, the new token's queries; fp32, fp16 or bf16; D a power of two in 16..256.
        k_cache, v_cache: ``(B, Hkv, S, D)``, same dtype; ``Hq`` a multiple of ``Hkv``.
        seq_lens: ``(B,)`` int32 or int64, ``1 <= seq_lens[b] <= S``; positions ≥ seq_lens[b]
            hold garbage and must not be read into the result.
        sm_scale: score scale, ``None`` means ``1 / sqrt(D)``.
        num_splits: how many key chunks per sequence (each of ``ceil(ceil(S / num_splits) / BLOCK_N)
            * BLOCK_N`` positions); ``None``: your choice. Splits may be empty for short sequences.

    Returns:
        ``(o, lse)``: ``o`` ``(B, Hq, D)`` in ``q``'s dtype, ``lse`` fp32 ``(B, Hq)``, with kv head
        ``g = h // (Hq // Hkv)`` and ``L = seq_lens[b]``::

            s = sm_scale * k_cache[b, g, :L] @ q[b, h];  o[b, h] = softmax(s) @ v_cache[b, g, :L];  lse = logsumexp(s)

    Raises:
        ValueError: on mismatched shapes, Hq not a multiple of Hkv, unsupported D, a bad seq_lens
            dtype/shape, or num_splits < 1.

    Conventions: two launches (split, combine); ``scaled_dot_product_attention``, ``softmax`` and
    matmul routines are banned here.

    中文：返回 (o, lse)；GQA 映射 h // (Hq // Hkv)；只读前 seq_lens[b] 个位置；分段结果按 lse 加权合并。
    """
    raise NotImplementedError("decode_attention")
