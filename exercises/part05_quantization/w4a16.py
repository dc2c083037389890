"""W4A16: a fused dequantise-and-multiply Triton kernel for int4 group-quantised weights
(textbook 08 §8.5 W4A16/W8A8; capstone P3's kernel half; site method: weight-only quantisation).

Serving a 4-bit model at small batch is memory-bound: every decode step reads every weight once,
and the arithmetic is tiny. Storing weights as int4 (half a byte, plus a scale and a zero point
per group of 128) instead of bf16 (2 bytes) cuts the bytes read by almost 4x, *if* the kernel
never writes the dequantised weight back to memory: it loads the packed bytes, unpacks the two
4-bit codes of each byte in registers, dequantises them with their group's scale and zero point,
and feeds them straight to ``tl.dot`` with the activations (fp32 accumulation). Marlin (IST
Austria) reaches close to 4x cuBLAS bf16 at batch 1–16 on A10/A100; at large batch the GEMM
becomes compute-bound and the dequantisation is overhead.

Conventions (those of ``quant_basics``: its ``zeropoint_quantize(w, bits=4, granularity="group")``
and ``pack_int4`` produce exactly these inputs):

- the weight is ``(N, K)`` like ``nn.Linear.weight`` (N outputs, K inputs); the result is
  ``y = x Wᵀ``, ``(M, N)``;
- codes are unsigned 4-bit, ``0..15``, packed two per byte along K, **low nibble first**:
  ``qweight[n, j] = code[n, 2j] | (code[n, 2j+1] << 4)``, ``qweight`` is uint8 ``(N, K/2)``;
- groups are ``group_size`` consecutive inputs of one output row: ``scales`` and ``zeros`` are
  ``(N, K/group_size)``, ``W[n, k] = (code[n, k] - zeros[n, k // group_size]) * scales[n, k // group_size]``,
  computed in fp32 whatever the dtypes of ``scales`` (fp32, fp16, bf16) and ``zeros`` (int32 as
  quant_basics returns them, or uint8);
- the dequantised weight is rounded to the activation dtype (what a tensor-core dot takes), and
  the products are accumulated in fp32; the output has the activation dtype;
- other layouts students will meet: GPTQ/AutoGPTQ checkpoints pack 8 codes per int32 along K and
  store scales as ``(K/group, N)``; GPTQ's symmetric 4-bit has a fixed zero point 8; Marlin
  reorders the weights offline for its tensor-core layout. None of these is ours.

On a CPU the kernel runs under the Triton interpreter (``TRITON_INTERPRET=1``); the interpreter
gets bf16 dot products wrong (GOTCHAS), so the CPU tests use fp32 and fp16 activations; bf16 is
checked on a GPU, where the performance challenge runs: batch 1, 16 and 128 against
``torch.matmul`` in bf16 with the unquantised (dequantised) weight, timed in the same run.

中文说明：
W4A16 = 权重 4 位、激活 16 位。小批量推理时矩阵乘受显存带宽限制：每步都要把全部权重读一遍。权重按
int4 存储（每字节两个码字，低 4 位放偶数列），每组 group_size 个输入共享一个 scale 与零点：
W[n,k] = (code − zero)·scale。融合内核在寄存器里解包、反量化后直接与激活做 tl.dot（fp32 累加），
不把反量化后的权重写回显存，读的字节数约为 bf16 的 1/4。约定与 quant_basics 一致
（zeropoint_quantize + pack_int4）。CPU 上用 Triton 解释器，用 fp32/fp16 测试；bf16 与性能挑战在 GPU 上。
禁止调用 torch.matmul 等；输出的每个元素都必须由你自己的 @triton.jit 内核写出。
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
def w4a16_kernel(x_ptr, q_ptr, scale_ptr, zero_ptr, out_ptr, M, N, K, GROUP,
                 stride_xm, stride_xk, stride_qn, stride_qk, stride_sn, stride_sg, stride_zn, stride_zg,
                 stride_os, stride_om, stride_on, SPLIT_K,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One program computes one BLOCK_M x BLOCK_N tile of the output over a share of K.

    A suggested design (you may choose another, with the same wrapper): program ``(pid, split)``
    takes tile ``(pid // cdiv(N, BLOCK_N), pid % cdiv(N, BLOCK_N))`` and the K range of ``split``
    (``SPLIT_K`` shares, so that a batch-1 call still keeps every SM busy); per BLOCK_K step:

    1. load the x tile ``(BLOCK_M, BLOCK_K)`` (masked on M and K);
    2. load the packed bytes for the weight tile ``(BLOCK_K, BLOCK_N)``: byte ``k // 2`` of row n,
       and take the nibble ``(byte >> ((k % 2) * 4)) & 0xF``;
    3. load each element's scale and zero point at group ``k // GROUP`` and dequantise in fp32;
    4. cast to x's dtype and ``acc = tl.dot(a, w, acc)`` (fp32 accumulator).

    With ``SPLIT_K > 1`` each share writes fp32 partial sums to ``out[split]`` (``stride_os``) and
    a second kernel adds them up into the output.

    中文：每个程序算输出的一个块；在核内解包（低 4 位是偶数 k）、按组反量化（fp32）、转成激活 dtype
    后 tl.dot 累加到 fp32；K、M、N 的尾块都要掩码。
    """
    raise NotImplementedError("w4a16_kernel")


def w4a16_matmul(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor,
                 group_size: int) -> torch.Tensor:
    """``x @ Wᵀ`` with W dequantised from int4 codes inside a Triton kernel.

    Args:
        x: ``(M, K)`` activations, fp16 or bf16 (fp32 works too, multiplied in fp32: the kit
            compiles with ``TRITON_F32_DEFAULT=ieee``), any strides; M ≥ 1.
        qweight: uint8 ``(N, K/2)``, two 4-bit codes per byte along K, low nibble first.
        scales: ``(N, K/group_size)`` float (fp32, fp16 or bf16).
        zeros: ``(N, K/group_size)`` integer zero points (int32 or uint8), 0..15.
        group_size: inputs per group; K must be a multiple of it.

    Returns:
        A new ``(M, N)`` tensor of ``x.dtype``: ``sum_k x[m, k] * W[n, k]`` accumulated in fp32,
        with ``W[n, k] = ((code[n, k] - zeros[n, g]) * scales[n, g])`` (fp32, then rounded to
        ``x.dtype``), ``g = k // group_size``.

    Raises:
        ValueError: if x or qweight is not 2-D, qweight is not uint8, ``K != 2 * qweight.shape[1]``,
            K is not a multiple of ``group_size`` (or ``group_size <= 0``), or scales/zeros are not
            ``(N, K/group_size)``.

    Conventions: torch.matmul, mm, bmm, einsum, linear, addmm and the ``@`` operator are banned, as
    is any torch arithmetic: the torch side may allocate, view, copy, cast and fill; every element
    of the output is written by your own ``@triton.jit`` kernel. Never materialise the dequantised
    weight in memory: a kernel that writes it out and reads it back moves more bytes than cuBLAS on
    the bf16 weight, and the GPU challenge times it. On a GPU autotune the tile sizes; under the CPU
    interpreter keep one small config.

    中文：用 Triton 核计算 x @ Wᵀ，W 在核内由 int4 码字反量化得到；fp32 累加，输出与 x 同 dtype；
    禁止 torch.matmul 等运算，输出必须由你自己的 @triton.jit 内核写出。
    """
    raise NotImplementedError("w4a16_matmul")
