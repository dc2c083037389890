"""Row softmax in Triton, online across blocks for long rows (textbook 04 §4.2, online softmax).

``softmax(x)_j = exp(x_j - m) / sum_k exp(x_k - m)`` with ``m = max_k x_k``: subtracting the
row maximum keeps exp from overflowing. When a row fits in one block, one program loads it,
takes the max and the sum and stores the result. When it does not, the *online* softmax
(Milakov & Gimelshein 2018, the heart of FlashAttention) walks the row block by block keeping a
running max ``m`` and a running sum ``l``; when a block raises the max from ``m`` to ``m'``, the
sum so far must be rescaled: ``l = l * exp(m - m') + sum(exp(x_block - m'))``. A second walk then
writes ``exp(x - m) / l``.

中文说明：
softmax 先减去行最大值再取指数，防止溢出。一行放得进一个块时直接计算；放不下时用在线 softmax：
逐块维护运行最大值 m 和运行和 l，最大值从 m 变成 m' 时，之前累加的和要乘以 exp(m - m') 重新缩放，
然后第二遍写出 exp(x - m) / l。被掩码屏蔽的位置要按 -inf 读入（exp(-inf) = 0），不能按 0 读入。
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr, NUM_BLOCKS: tl.constexpr):
    """Program ``row`` writes the softmax of one contiguous row of ``n_cols`` values.

    Args:
        x_ptr, out_ptr: row-major (rows, n_cols) input and output.
        n_cols: the row length N.
        BLOCK_SIZE: columns per block (power of two); NUM_BLOCKS = cdiv(N, BLOCK_SIZE).
            NUM_BLOCKS == 1: one pass. NUM_BLOCKS > 1: online max/sum pass, then a write pass.

    中文：每行一个程序；多块时先在线求 m 与 l（注意重新缩放 l），再写出结果；屏蔽位置按 -inf 读入。
    """
    raise NotImplementedError("softmax_kernel")


def softmax(x: torch.Tensor, block_size: int | None = None) -> torch.Tensor:
    """Softmax over the last dimension of ``x`` by one Triton kernel launch.

    Args:
        x: ``(..., N)`` non-empty tensor, fp32, fp16 or bf16; values may be large (|x| ~ 1e4).
        block_size: the most columns one block may hold (a power of two). ``None``: your choice
            (e.g. next_power_of_2(N) up to a few thousand). With ``block_size < N`` the kernel
            must take the online path across ceil(N / block_size) blocks; the tests use this.

    Returns:
        A new tensor of ``x``'s shape and dtype; each row sums to 1. Computed in fp32, cast once.

    Raises:
        ValueError: if ``block_size`` is not a positive power of two.

    Conventions: ``torch.softmax`` and friends are banned here; every element is written by
    your kernel.

    中文：沿最后一维做 softmax，fp32 计算；block_size 小于 N 时必须走在线（分块）路径。
    """
    raise NotImplementedError("softmax")
