"""Vector add: your first Triton kernel (textbook 04 §4.6, Triton 基础).

A Triton program is launched once per *block* of the data: ``kernel[grid](...)`` starts
``grid[0]`` copies of the kernel, each told its index by ``tl.program_id(0)``. Each program
builds the offsets of its block with ``tl.arange``, loads, computes and stores a whole block at
once. The last block usually runs past the end of the data: every load and store must carry a
mask (``offsets < n_elements``). On a CPU the course runs kernels under the Triton interpreter
(``TRITON_INTERPRET=1``, set by the test plugin), which checks every masked load and store
against the tensors you passed; on a GPU an unmasked access silently reads or corrupts memory.

中文说明：
Triton 以"块"为单位编程：kernel[grid](...) 启动 grid 个程序实例，每个实例用 tl.program_id(0)
得到自己的编号，用 tl.arange 算出本块的偏移，整块地 load / 计算 / store。数据长度通常不是块大小
的整数倍，最后一块会越界，所以每次 load 和 store 都必须带掩码 mask=offsets < n_elements。
grid 要向上取整：triton.cdiv(n, BLOCK_SIZE)。
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Program ``pid`` writes ``out[i] = x[i] + y[i]`` for i in [pid*BLOCK_SIZE, (pid+1)*BLOCK_SIZE) ∩ [0, n).

    Args:
        x_ptr, y_ptr, out_ptr: pointers to the first element of three contiguous buffers of
            ``n_elements`` values of one dtype (fp32, fp16 or bf16).
        n_elements: how many elements there are (not a multiple of BLOCK_SIZE in general).
        BLOCK_SIZE: elements per program, a power of two (``tl.arange`` needs one).

    中文：每个程序处理一块；偏移 = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)，load/store 都要带掩码。
    """
    raise NotImplementedError("add_kernel")


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x + y``, computed by launching :func:`add_kernel` once over the flattened tensors.

    Args:
        x, y: non-empty tensors of the same shape, dtype (fp32, fp16, bf16) and device; they
            may be non-contiguous (make contiguous copies first).

    Returns:
        A new tensor of ``x``'s shape and dtype with ``x + y``. Every element must be written by
        the kernel (the tests fill fresh allocations with NaN).

    Raises:
        ValueError: if the shapes, dtypes or devices differ.

    Conventions: allocate the output (``torch.empty_like``), choose BLOCK_SIZE, launch with
    ``grid = (triton.cdiv(n, BLOCK_SIZE),)``. Computing the sum with torch instead of a Triton
    kernel fails the tests ("no Triton kernel was launched").

    中文：分配输出，按 cdiv(n, BLOCK_SIZE) 个程序启动 add_kernel；不要用 torch 直接相加。
    """
    raise NotImplementedError("vector_add")
