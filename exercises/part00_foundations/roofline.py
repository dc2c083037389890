"""The roofline model: arithmetic intensity, attainable FLOP/s, compute- vs memory-bound
(textbook 00 §0.2.2 Roofline; 11 §11.2 Roofline 分析).

A kernel that does ``F`` floating-point operations and moves ``Q`` bytes between the GPU's
memory (HBM) and its chip has *arithmetic intensity* ``I = F / Q`` (FLOP/byte). A device with
compute ceiling ``P`` (FLOP/s) and memory-bandwidth ceiling ``W`` (bytes/s) runs it no faster
than ``min(P, I * W)`` FLOP/s: below the *ridge point* ``I* = P / W`` the kernel is
memory-bound (the bytes set its time), at or above it compute-bound. Part 03's performance bars
are this model: a memory-bound kernel (vector add, RMSNorm, softmax, decode attention) is judged
by bytes/s against the copy bandwidth, a compute-bound one (matmul, FlashAttention) by FLOP/s.

Conventions of this exercise (the ones Part 03's bars use):

- FLOPs: a multiply-add is 2 FLOPs, so a matmul is ``2*M*N*K``;
- bytes: every input read once and every output written once from/to HBM, each element at its
  dtype's size (``dtype.itemsize``): the *minimum* traffic, reached when everything else stays
  on chip (an ideal fused kernel);
- ceilings are plain numbers in FLOP/s and bytes/s. A hardware profile gives them in TFLOP/s
  and GB/s (``hardware_profiles/h200.yml``: ``matmul_bf16_tflops: 737.7`` -> ``P = 737.7e12``,
  ``copy_gbps: 4228.0`` -> ``W = 4228e9``); read them with
  ``infralab.perf.profiles.load_profile(path).ceilings``.

中文说明：
Roofline 模型：算术强度 I = FLOPs / 访存字节数。设备的算力上限 P（FLOP/s）和带宽上限 W（字节/s）
决定了可达性能 min(P, I·W)；拐点 I* = P/W 以下是访存受限（memory-bound），以上（含等于）是计算受限
（compute-bound）。约定：一次乘加算 2 FLOPs（矩阵乘 2·M·N·K）；字节数按"每个输入读一次、每个输出写
一次"乘以数据类型的字节数计算（理想融合内核的最小访存量），读和写都要算。第 03 部分的性能门槛就是这样
定的：访存受限的内核按带宽评，计算受限的按 FLOP/s 评。
"""
from __future__ import annotations

import torch


def op_cost(op: str, shape: dict[str, int], dtype: torch.dtype, causal: bool = False) -> tuple[int, int]:
    """FLOPs and minimum HBM bytes of one operation.

    Args:
        op: one of
            ``"matmul"``, shape ``{M, N, K}``: ``C (M, N) = A (M, K) @ B (K, N)``;
            ``"attention"``, shape ``{B, H, S, D}``: FlashAttention forward of B sequences of S
            tokens, H heads of size D (Q, K, V, O all ``(B, H, S, D)``; the ``S x S`` scores
            stay on chip);
            ``"norm"``, shape ``{M, N}``: RMSNorm of an ``(M, N)`` activation with an ``(N,)``
            weight;
            ``"decode"``, shape ``{B, HQ, HKV, S, D}``: decode attention of one new query token
            per sequence (HQ query heads) against a KV cache of S tokens with HKV KV heads (GQA).
        shape: the sizes named above (ints).
        dtype: every tensor's dtype (its ``itemsize`` ``s`` is the bytes per element).
        causal: attention only: a causal mask skips the upper triangle, halving the FLOPs.

    Returns:
        ``(flops, bytes)``, Python ints::

            matmul:     flops 2*M*N*K,                  bytes (M*K + K*N + M*N) * s
            attention:  flops 4*B*H*S*S*D (QK^T and PV; halved if causal),
                        bytes 4*B*H*S*D * s             (read Q, K, V; write O)
            norm:       flops 4*M*N (square, sum, scale, weight),
                        bytes (2*M*N + N) * s           (read x, write y, read the weight)
            decode:     flops 4*B*HQ*S*D,
                        bytes (2*B*HKV*S*D + 2*B*HQ*D) * s   (read K and V cache; read q, write o)

    Raises:
        ValueError: unknown ``op``; ``causal`` for an op other than attention.
        KeyError: a size missing from ``shape``.

    中文：按上面的约定算 FLOPs 与最小访存字节数（读、写都算，按 dtype 字节数）；decode 读的是 KV 头
    （HKV）的缓存，不是查询头。
    """
    raise NotImplementedError("op_cost")


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """FLOPs per byte: ``flops / bytes_moved``.

    Raises:
        ValueError: ``bytes_moved <= 0``.

    中文：算术强度 = FLOPs / 字节数。
    """
    raise NotImplementedError("arithmetic_intensity")


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """The intensity where the two ceilings meet: ``peak_flops / bandwidth`` (FLOP/byte).

    Args:
        peak_flops: compute ceiling in FLOP/s (> 0).
        bandwidth: memory ceiling in bytes/s (> 0).

    中文：拐点 = 算力上限 / 带宽上限。
    """
    raise NotImplementedError("ridge_point")


def attainable_flops(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """The roofline: ``min(peak_flops, intensity * bandwidth)`` FLOP/s.

    中文：可达性能 = min(P, I·W)。
    """
    raise NotImplementedError("attainable_flops")


def bound(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> str:
    """``"compute"`` if the intensity is at or above the ridge point, else ``"memory"``.

    中文：强度 ≥ 拐点为 "compute"（计算受限），否则为 "memory"（访存受限）。
    """
    raise NotImplementedError("bound")


def roofline_time(flops: float, bytes_moved: float, peak_flops: float, bandwidth: float) -> float:
    """The shortest time the operation can take on the device, in seconds:
    ``max(flops / peak_flops, bytes_moved / bandwidth)`` (compute and memory traffic overlap
    perfectly; the slower of the two sets the time).

    中文：最短用时 = max(FLOPs/P, 字节数/W)（计算与访存完全重叠时，慢的一方决定时间）。
    """
    raise NotImplementedError("roofline_time")
