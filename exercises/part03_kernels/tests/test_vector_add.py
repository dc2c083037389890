"""Visible tests for part03_kernels.vector_add: run `pytest exercises/part03_kernels -m vector_add`.

On a CPU the kernels run under the Triton interpreter (slow: keep sizes small); every call must
launch a Triton kernel, and fresh allocations are NaN-filled, so unwritten outputs show up.
"""
import torch

from infralab.testing import assert_close, assert_equal, randn

MODULE = "part03_kernels.vector_add"


def test_vector_add_matches_torch(impl, gen):
    x, y = randn(1000, generator=gen), randn(1000, generator=gen)
    assert_close(impl(MODULE).vector_add(x, y), x + y)


def test_vector_add_handles_a_size_that_is_not_a_multiple_of_the_block(impl, gen):
    x, y = randn(1025, generator=gen), randn(1025, generator=gen)
    assert_close(impl(MODULE).vector_add(x, y), x + y)


def test_vector_add_keeps_shape_and_dtype(impl, gen):
    x, y = randn(7, 33, dtype=torch.float16, generator=gen), randn(7, 33, dtype=torch.float16, generator=gen)
    assert_close(impl(MODULE).vector_add(x, y), x + y)


def test_vector_add_writes_every_block(impl, gen):
    """5000 elements: every program writes its own block at pid * BLOCK_SIZE (unwritten outputs stay NaN)."""
    n = 5000
    x, y = randn(n, generator=gen), randn(n, generator=gen)
    written = ~torch.isnan(impl(MODULE).vector_add(x, y))
    no_stride = {}
    for block in (64, 128, 256, 512, 1024, 2048, 4096):  # programs pid = 0 .. cdiv(n, block) - 1 overlap at the front
        front = torch.arange(n) < -(-n // block) + block - 1
        no_stride[(f"offsets = pid + arange(BLOCK_SIZE) with BLOCK_SIZE {block}: the block stride is missing "
                   "(use pid * BLOCK_SIZE + arange(BLOCK_SIZE))",
                   f"offsets = pid + arange(BLOCK_SIZE)（BLOCK_SIZE {block}）：漏乘了块大小 "
                   "（应为 pid * BLOCK_SIZE + arange(BLOCK_SIZE)）")] = front
    assert_equal(written, torch.ones(n, dtype=torch.bool), name=("elements of the output written",
                                                                 "输出中被写入的元素"), mistakes=no_stride)
