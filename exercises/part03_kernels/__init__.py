"""Part 03: Triton kernels, from vector add to FlashAttention."""
