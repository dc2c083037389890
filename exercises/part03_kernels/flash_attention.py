"""FlashAttention forward in Triton: causal and not, returning the log-sum-exp (textbook 04 §4.2).

Attention ``O = softmax(Q K^T * scale) V`` never materialises the (S_q, S_k) score matrix:
one program takes BLOCK_M queries, walks the keys in blocks of BLOCK_N and keeps, per query, a
running max ``m``, a running sum ``l`` and an unnormalised output ``acc``; when a block raises the
max, ``l`` and ``acc`` are rescaled by ``exp(m_old - m_new)`` (online softmax). At the end
``O = acc / l`` and the log-sum-exp ``lse = m + log(l)`` is saved: the backward pass rebuilds the
probabilities from it as ``exp(s - lse)``. FlashAttention-2 habits make it fast: fold
``log2(e)`` into the scale and use ``exp2``; in causal attention, skip the key blocks that are
wholly masked and apply the mask only on the diagonal blocks.

Causal alignment is bottom-right: with S_q queries and S_k ≥ S_q keys (e.g. a chunk of new
tokens after a cached prefix), query i sees keys j ≤ i + (S_k - S_q). With S_q == S_k this is
the usual lower triangle.

中文说明：
FlashAttention 前向：每个程序负责 BLOCK_M 个查询，按 BLOCK_N 分块遍历键，维护每行的运行最大值 m、
运行和 l 和未归一化的输出 acc；最大值变大时，l 和 acc 都要乘以 exp(m_old - m_new)。最后 O = acc / l，
并保存 lse = m + ln(l)（自然对数，fp32），反向传播要用它。用 exp2 时要把 log2(e) 乘进缩放因子，
最后把以 2 为底的结果换回自然对数。因果掩码按右下角对齐：查询 i 能看到键 j ≤ i + (S_k - S_q)。
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
                           stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
                           stride_vb, stride_vh, stride_vn, stride_ob, stride_oh, stride_om,
                           H, S_Q, S_K, sm_scale,
                           CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Program (start_m, b * H + h) computes O and lse for queries [start_m*BLOCK_M, +BLOCK_M) of head (b, h).

    Args:
        q_ptr, k_ptr, v_ptr, o_ptr: (B, H, S, HEAD_DIM) tensors with the given strides for
            batch, head and sequence; the last dimension is contiguous.
        lse_ptr: contiguous fp32 (B, H, S_Q).
        H, S_Q, S_K: heads, query and key lengths (not multiples of the blocks in general).
        sm_scale: the softmax scale (1/sqrt(HEAD_DIM) by default).
        CAUSAL: apply the bottom-right causal mask j <= i + (S_K - S_Q).

    中文：在线 softmax 遍历键块；因果时跳过整块被屏蔽的键块；保存自然对数的 lse。
    """
    raise NotImplementedError("flash_attention_kernel")


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    sm_scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """FlashAttention forward by a Triton kernel.

    Args:
        q: ``(B, H, S_q, D)``; k, v: ``(B, H, S_k, D)``; one dtype (fp32, fp16, bf16);
            D a power of two in 16..256; the last dimension contiguous (copy otherwise).
        causal: bottom-right causal mask (query i sees keys j <= i + S_k - S_q).
        sm_scale: scale of the scores; ``None`` means ``1 / sqrt(D)``.

    Returns:
        ``(o, lse)``: ``o`` of ``q``'s shape and dtype; ``lse`` fp32 ``(B, H, S_q)``, the natural
        log of ``sum_j exp(sm_scale * q_i . k_j)`` over the keys query i sees::

            s = sm_scale * q @ k^T (masked to -inf where hidden);  o = softmax(s) @ v;  lse = logsumexp(s, -1)

    Raises:
        ValueError: on mismatched shapes or dtypes, an unsupported D, or causal with S_k < S_q.

    Conventions: fp32 accumulation; ``scaled_dot_product_attention``, ``softmax`` and
    matmul routines are banned here; every element of ``o`` and ``lse`` is written by your kernel.

    中文：返回 (o, lse)；lse 为 fp32 自然对数；因果掩码右下角对齐；禁止调用 SDPA/softmax/matmul。
    """
    raise NotImplementedError("flash_attention")
