"""Tiled matmul in Triton: grouped program order, fp32 accumulation (textbook 04 §4.7).

``C = A @ B`` with A (M, K), B (K, N). Each program computes one BLOCK_M x BLOCK_N tile of C by
walking K in steps of BLOCK_K: load an A tile and a B tile, ``acc = tl.dot(a, b, acc)``. The
accumulator is fp32 whatever the input dtype (fp16 sums lose precision quickly and overflow at
65504); only the final tile is cast to the output dtype. The *order* in which programs take
tiles matters for speed: row-major order streams all of B through L2 for every tile-row of C;
grouping GROUP_M tile-rows together (program ids run down a group's rows first, then across its
columns) lets neighbouring programs share A and B tiles in L2 (the Triton tutorial's "L2 cache
optimisation"). The last group may be shorter than GROUP_M.

中文说明：
分块矩阵乘：每个程序算 C 的一个 BLOCK_M x BLOCK_N 块，沿 K 方向每次取 BLOCK_K，用 tl.dot 累加到
fp32 累加器，最后再转回输入 dtype。程序编号到 (pid_m, pid_n) 的映射采用分组顺序（GROUP_M 行块为一组，
组内先走行再走列），提高 L2 命中率；最后一组可能不足 GROUP_M 行，要用 min 处理。
K 不是 BLOCK_K 的整数倍时，尾块的 load 要带掩码并按 0 补齐。
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    """Program ``pid`` computes the tile (pid_m, pid_n) of C given by the grouped order::

        num_pid_m, num_pid_n = cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)
        group_id     = pid // (GROUP_M * num_pid_n)
        first_pid_m  = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (pid % (GROUP_M * num_pid_n)) % group_size_m
        pid_n = (pid % (GROUP_M * num_pid_n)) // group_size_m

    Args:
        a_ptr, b_ptr, c_ptr: A (M, K), B (K, N), C (M, N) with the given element strides
            (A and B may be transposed views: use the strides, never assume contiguity).
        BLOCK_M, BLOCK_N, BLOCK_K: tile sizes (powers of two, ≥ 16 for tl.dot); GROUP_M: tile-rows per group.

    中文：按分组顺序求 (pid_m, pid_n)；沿 K 循环，fp32 累加；K 尾块掩码补 0；存储时对 M、N 掩码。
    """
    raise NotImplementedError("matmul_kernel")


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` by a Triton kernel with fp32 accumulation.

    Args:
        a: ``(M, K)``; b: ``(K, N)``; same dtype (fp32, fp16, bf16), M, N, K ≥ 1, any strides.

    Returns:
        A new ``(M, N)`` tensor of the input dtype: ``sum_k a[m, k] * b[k, n]`` accumulated in fp32.
        fp32 inputs are multiplied in fp32 on a GPU too: the kit compiles Triton with
        ``TRITON_F32_DEFAULT=ieee`` (a plain ``tl.dot`` is then IEEE fp32, as under the interpreter);
        do not force ``input_precision="tf32"``, whose ~1e-3 relative error fails the fp32 tests.

    Raises:
        ValueError: if the shapes do not chain or the dtypes differ.

    Conventions: torch.matmul, mm, bmm, einsum, linear, addmm, baddbmm and the ``@`` operator
    are banned here; every element of C is written by your kernel. On a GPU, autotune the tile
    sizes (``@triton.autotune``); under the CPU interpreter keep one small config.

    中文：用 Triton 实现矩阵乘，fp32 累加，输出与输入同 dtype；禁止调用 torch.matmul 等。fp32 输入在 GPU 上
    也按 fp32 相乘（评测以 TRITON_F32_DEFAULT=ieee 编译），不要指定 input_precision="tf32"。
    """
    raise NotImplementedError("matmul")
