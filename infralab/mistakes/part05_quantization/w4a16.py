"""References and known mistakes of part05_quantization.w4a16.

The reference unpacks every byte in Python-level torch on the CPU, dequantises in fp32, rounds
to the activation dtype and multiplies in float64: nothing in common with a Triton kernel. Each
known mistake is a switch of the reference.
"""
import torch

from infralab.testing import cancellation_atol, randn

HIGH_NIBBLE_FIRST = ("nibbles unpacked high first: code 2j is the low 4 bits of byte j (quant_basics.pack_int4)",
                     "解包顺序反了：第 2j 个码字是第 j 个字节的低 4 位（与 quant_basics.pack_int4 一致）")
FIXED_ZERO_8 = ("the zero point taken as GPTQ's fixed 8 instead of the stored per-group zeros",
                "零点按 GPTQ 对称量化固定取 8，而没有用每组存储的 zeros")
GROUP_BY_BYTE = ("the group index taken from the packed byte index (k // 2 // group_size) instead of k // group_size",
                 "组号用了打包后的字节下标 (k // 2 // group_size)，应为 k // group_size")
NO_ZERO = ("the zero point was not subtracted: W = code * scale",
           "没有减去零点：W 被算成 code * scale")
UNWRITTEN = ("output elements were never written: mask the stores on M and N, and cover every tile with the grid",
             "输出有元素从未被写入：存储时按 M、N 掩码，并确保网格覆盖所有块")


def random_w4(n, k, group_size, seed, scale_dtype=torch.float32, zero_dtype=torch.int32):
    """(qweight uint8 (N, K/2), scales (N, K/G), zeros (N, K/G)) with every code and zero point 0..15 drawn."""
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 16, (n, k), generator=g, dtype=torch.uint8)
    qweight = codes[:, 0::2] | (codes[:, 1::2] << 4)
    scales = (0.02 + 0.1 * torch.rand(n, k // group_size, generator=g)).to(scale_dtype)
    zeros = torch.randint(0, 16, (n, k // group_size), generator=g).to(zero_dtype)
    return qweight, scales, zeros


def random_activations(m, k, seed, dtype=torch.float32):
    return randn(m, k, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def dequantized(qweight, scales, zeros, group_size, *, nibbles="low_first", zero="stored", group_by_byte=False):
    """W (N, K) in fp32 from the definition, one nibble position at a time."""
    n, half = qweight.shape
    low, high = (qweight & 0xF).float(), (qweight >> 4).float()
    codes = torch.empty(n, 2 * half)
    codes[:, 0::2], codes[:, 1::2] = (low, high) if nibbles == "low_first" else (high, low)
    k = torch.arange(2 * half)
    group = (k // 2 // group_size) if group_by_byte else (k // group_size)
    z = {"stored": zeros.float()[:, group], "eight": torch.full((n, 2 * half), 8.0), "none": 0.0}[zero]
    return (codes - z) * scales.float()[:, group]


def reference_w4a16(x, qweight, scales, zeros, group_size, **mistake):
    w = dequantized(qweight, scales, zeros, group_size, **mistake).to(x.dtype)  # what the tensor-core dot takes
    return (x.double() @ w.double().T).to(x.dtype)


def closest_reference(got, x, qweight, scales, zeros, group_size):
    """Per element, whichever of the two right answers is nearer ``got``: the dequantised weight rounded
    to x's dtype (:func:`reference_w4a16`, what a tensor-core dot takes) or kept in fp32 (a batch-1 GEMV
    that never rounds it). They differ by the weight's rounding summed over K: at K = 4096 in bf16 by up
    to 0.35 where y is near 0 (std 0.07), beyond the table's tolerance, so one reference alone fails a
    right answer of the other kind at some seeds (the GEMV on an H200, 2026-12-07). A wrong answer is far
    from both. All on the CPU, in fp64; NaN in ``got`` picks neither and fails the comparison."""
    got = got.detach().cpu().double()
    rounded = reference_w4a16(x, qweight, scales, zeros, group_size).double()
    kept = (x.double() @ dequantized(qweight, scales, zeros, group_size).double().T).to(x.dtype).double()
    return torch.where((got - rounded).abs() <= (got - kept).abs(), rounded, kept).to(x.dtype)


def w4a16_atol(x, qweight, scales, zeros, group_size):
    """The absolute tolerance of y = x Wᵀ: the table's for x's dtype plus one unit of x's dtype's
    roundoff at the size of the products, max over outputs of sum_k |x_k| |w_nk|. The reference
    rounds the dequantised weight to x's dtype (what a tensor-core dot takes); a kernel that keeps it
    in fp32 (a batch-1 GEMV) differs by up to half a unit per weight, and y may cancel far below
    the products (a sweep found fp16 outputs using 0.6 of the table's atol)."""
    w = dequantized(qweight, scales, zeros, group_size)
    return cancellation_atol(x.float().abs() @ w.abs().T, x.dtype, ulps=1)


def w4a16_mistakes(x, qweight, scales, zeros, group_size):
    out = {HIGH_NIBBLE_FIRST: lambda: reference_w4a16(x, qweight, scales, zeros, group_size, nibbles="high_first"),
           FIXED_ZERO_8: lambda: reference_w4a16(x, qweight, scales, zeros, group_size, zero="eight"),
           NO_ZERO: lambda: reference_w4a16(x, qweight, scales, zeros, group_size, zero="none")}
    if qweight.shape[1] * 2 > group_size:  # one group: the byte index gives the same group
        out[GROUP_BY_BYTE] = lambda: reference_w4a16(x, qweight, scales, zeros, group_size, group_by_byte=True)
    return out
