"""Paged decode attention as a Triton kernel: K/V read through the block table, split along the
context (textbook 04 §4.3 PagedAttention, §4.4 flash-decoding; 05 §5.2 KV 布局; site "Decode 专项内核").

``paged_attention`` gathered each sequence's K/V with torch and ran ordinary attention. A serving
engine cannot afford the gather: it copies the whole context every step. This kernel reads the
paged pool in place. Same cache layout and block-table convention as ``paged_kv`` and
``paged_attention`` (the engine may call either)::

    k_pool, v_pool: (num_blocks, block_size, Hkv, D)      block_tables: (B, max_blocks), padded
    token j of sequence i:  block = block_tables[i, j // block_size];  row = j % block_size
                            k_j = k_pool[block, row, h // (Hq // Hkv)]     (GQA)

Only the first ``context_lens[i]`` tokens exist. The rest of the last block and the table entries
past ``ceil(context_lens[i] / block_size)`` are padding and must never be read: the tests fill
padding entries with -1 (an address outside the pool) or with a stale block id (a real block that
holds another sequence's tokens, as an engine's reused table rows do).

Split-KV (flash-decoding, as in part03 ``decode_attention``): with one program per (sequence, kv
head) a batch of long contexts keeps few SMs busy, so the context is cut into ``num_splits``
splits. Split ``s`` covers table entries ``[s * P, (s + 1) * P)``, ``P = ceil(max_blocks /
num_splits)``, i.e. tokens ``[s * P * block_size, (s + 1) * P * block_size)``, cut at the
sequence's own ``context_lens[i]``. A split of a short sequence may hold no token at all.
Each split keeps, per query head, the running max ``m_s`` of its scores, the sum
``l_s = Σ exp(score - m_s)`` and its normalised output ``o_s``; the combine rescales every split
to the common max ``M = max_s m_s``::

    w_s = l_s * exp(m_s - M);    o = Σ_s w_s o_s / Σ_s w_s        (an empty split: l_s = 0, o_s = 0)

vLLM's kernels, and where ours differ:

- vLLM PagedAttention v1 (``paged_attention_v1``): one thread block per (sequence, head), no
  split; v2 (``paged_attention_v2``) splits the context into fixed PARTITION_SIZE = 512 token
  partitions and writes ``max_logits``, ``exp_sums`` and ``tmp_out`` per partition, then a reduce
  kernel rescales by ``exp(max_logit - global_max)``: the same combine as ours. Ours splits into a
  number of splits (chosen to fill the GPU) rather than a fixed partition length, and one program
  serves all the query heads of a GQA group, so each K/V tile is read once.
- vLLM v1/v2's key cache is ``(num_blocks, Hkv, D / x, block_size, x)`` and value cache
  ``(num_blocks, Hkv, D, block_size)``: laid out for its CUDA threads. Ours is the
  ``(num_blocks, block_size, Hkv, D)`` layout of FlashAttention's and FlashInfer's paged KV (and
  vLLM's FlashAttention backend): one token's D values of a head are contiguous.
- Engines pad block tables differently (vLLM's older model runner pads with 0, a real block);
  ours are padded with -1, and a kernel that reads a padding entry is wrong either way.

中文说明：
在分页 KV 池上直接做解码注意力，不再像 paged_attention 那样先用 torch 把 K/V 收集出来。缓存布局和块表约定与
paged_kv、paged_attention 相同：序列 i 的第 j 个 token 位于物理块 block_tables[i, j // block_size] 的第
j % block_size 行。只有前 context_lens[i] 个 token 有效；最后一块的剩余行、块表中超过
ceil(context_lens[i] / block_size) 的填充项（-1 或残留的旧块号）都不能读。
按上下文切分（split-KV，同 part03 的 decode_attention）：第 s 段覆盖块表项 [s*P, (s+1)*P)，
P = ceil(max_blocks / num_splits)，并在该序列自己的 context_lens[i] 处截断；短序列的后几段可能为空。
每段为每个查询头保存段内最大值 m_s、指数和 l_s 与归一化输出 o_s；合并时必须先把各段重缩放到公共最大值
M：w_s = l_s·exp(m_s − M)，o = Σ w_s o_s / Σ w_s。与 vLLM 的区别：vLLM v1 不切分，v2 按固定 512 token
分区、合并方式与本题相同；vLLM v1/v2 的缓存布局是为其 CUDA 线程设计的，本题采用 FlashAttention/FlashInfer
的 (num_blocks, block_size, Hkv, D) 布局；一个程序处理同一 GQA 组的全部查询头，每个 K/V 块只读一次。
torch 一侧只能分配、视图、拷贝、填充；所有计算都在你自己的 @triton.jit 内核里。
On a CPU the kernels run under the Triton interpreter; test in fp32/fp16 there (bf16 dot
products are wrong in the interpreter); bf16 and the performance challenges run on a GPU.
"""
from __future__ import annotations

import os

if "TRITON_INTERPRET" not in os.environ:  # no GPU: run kernels under the interpreter (before triton loads)
    import torch as _torch

    if not _torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def paged_decode_split_kernel(q_ptr, k_pool_ptr, v_pool_ptr, block_tables_ptr, context_lens_ptr,
                              mid_o_ptr, mid_max_ptr, mid_sum_ptr,
                              stride_qb, stride_qh, stride_kblk, stride_ktok, stride_kh,
                              stride_vblk, stride_vtok, stride_vh, stride_tb,
                              H_KV, NUM_SPLITS, SPLIT_LEN, MAX_CONTEXT, sm_scale,
                              GROUP: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
                              BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Program ``(b * H_KV + hk, split)``: query heads ``[hk*GROUP, (hk+1)*GROUP)`` of sequence ``b``
    against tokens ``[split*SPLIT_LEN, min((split+1)*SPLIT_LEN, context_lens[b]))``.

    A suggested design (you may choose another behind the same wrapper): load the group's queries
    ``(BLOCK_H, HEAD_DIM)`` (BLOCK_H = GROUP padded to a power of two ≥ 16, for ``tl.dot``); then per
    tile of BLOCK_N token positions ``pos``: look up ``block = block_tables[b, pos // BLOCK_SIZE]``
    (masked: only positions < the split's end), address each token's row
    ``block * stride_kblk + (pos % BLOCK_SIZE) * stride_ktok + hk * stride_kh``, load K
    ``(HEAD_DIM, BLOCK_N)`` and V ``(BLOCK_N, HEAD_DIM)``, and update an online softmax (running max,
    sum, fp32 accumulator rescaled whenever the max grows). ``MAX_CONTEXT = max_blocks * BLOCK_SIZE``
    bounds every read to the table row.

    Writes, per query head (``(B, H_Q, NUM_SPLITS)`` layout, fp32): ``mid_o`` ``(..., HEAD_DIM)`` the
    split's normalised output, ``mid_max`` its max score, ``mid_sum`` its sum of exponentials
    relative to that max. An empty split writes output 0, max -inf, sum 0 (no 0 / 0).

    中文：一个程序处理一条序列、一个 KV 头（同组全部查询头）的一段 token；经块表找到物理块，在线 softmax，
    写出段内归一化输出、段内最大值与指数和（空段：输出 0、最大值 -inf、和 0）。
    """
    raise NotImplementedError("paged_decode_split_kernel")


@triton.jit
def paged_decode_combine_kernel(mid_o_ptr, mid_max_ptr, mid_sum_ptr, out_ptr, NUM_SPLITS,
                                BLOCK_S: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Program ``b * H_Q + h`` merges the NUM_SPLITS partial results of one query head into ``out``
    ``(B, H_Q, HEAD_DIM)`` (contiguous, in q's dtype): ``w_s = l_s * exp(m_s - M)``, ``M = max_s m_s``;
    ``o = Σ_s w_s o_s / Σ_s w_s``. BLOCK_S = next power of two ≥ NUM_SPLITS.

    中文：先求各段最大值的最大值 M，把每段的指数和重缩放到 M 后再加权合并。
    """
    raise NotImplementedError("paged_decode_combine_kernel")


def paged_decode_attention(q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor,
                           block_tables: torch.Tensor, context_lens: torch.Tensor,
                           scale: float | None = None, num_splits: int | None = None) -> torch.Tensor:
    """One decode step of attention for a batch whose K/V live in a paged pool, in Triton.

    Args:
        q: ``(B, Hq, D)``, the new token's query per head; fp32, fp16 or bf16; D a power of two in 16..256;
            any strides (a slice of a wider tensor too: make it contiguous first if your kernel
            indexes D as contiguous).
        k_pool, v_pool: ``(num_blocks, block_size, Hkv, D)``, q's dtype; ``Hq`` a multiple of ``Hkv``.
        block_tables: ``(B, max_blocks)`` int32 or int64, any strides; row ``i`` lists sequence ``i``'s physical
            blocks in order; entries past ``ceil(context_lens[i] / block_size)`` are padding (-1 or
            a stale block id) and must not be read.
        context_lens: ``(B,)`` int32 or int64, ``1 <= context_lens[i] <= max_blocks * block_size``.
        scale: softmax scale, default ``1 / sqrt(D)``.
        num_splits: splits of the context per sequence (split ``s`` covers table entries
            ``[s * P, (s + 1) * P)``, ``P = ceil(max_blocks / num_splits)``); ``None``: your choice.

    Returns:
        ``(B, Hq, D)`` in q's dtype, the same as ``paged_attention.paged_decode_attention``::

            out[i, h] = softmax(scale * K_i[:, g] @ q[i, h]) @ V_i[:, g],   g = h // (Hq // Hkv)

        with ``K_i``, ``V_i`` the ``context_lens[i]`` tokens of sequence ``i`` read through its table.

    Raises:
        ValueError: mismatched shapes, Hq not a multiple of Hkv, unsupported D, a block table or
            context_lens of the wrong shape or dtype, or num_splits < 1.

    Conventions: two launches (split, combine); on the torch side only allocation, views, copies
    and fills (``course.yml`` ``triton: true``): ``scaled_dot_product_attention``, softmax,
    matmul and reductions such as ``context_lens.max()`` are banned, so the split length comes
    from the table's width, not from the longest sequence.

    中文：返回 (B, Hq, D)；q 与块表可以是任意步长（例如更宽张量的切片、列优先的块表；kernel 按连续内存读取时先 contiguous）；
    GQA 映射 h // (Hq // Hkv)；只读每条序列自己的前 context_lens[i] 个 token；
    两次启动（分段 kernel、合并 kernel）；torch 一侧不能做计算，连 context_lens.max() 也不行，
    所以分段长度由块表宽度决定。
    """
    raise NotImplementedError("paged_decode_attention")
