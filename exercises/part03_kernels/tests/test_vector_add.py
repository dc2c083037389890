"""Visible tests for part03_kernels.vector_add: run `pytest exercises/part03_kernels -m vector_add`.

On a CPU the kernels run under the Triton interpreter (slow: keep sizes small); every call must
launch a Triton kernel, and fresh allocations are NaN-filled, so unwritten outputs show up.
"""
import torch

from infralab.testing import assert_close, randn

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
