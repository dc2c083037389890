"""Visible tests for part03_kernels.matmul: run `pytest exercises/part03_kernels -m matmul`."""
import torch

from infralab.testing import assert_close, randn

MODULE = "part03_kernels.matmul"


def test_matmul_matches_torch(impl, gen):
    a, b = randn(48, 32, generator=gen), randn(32, 40, generator=gen)
    assert_close(impl(MODULE).matmul(a, b), a @ b, reduction=32)


def test_matmul_ragged_shapes_in_fp16(impl, gen):
    a, b = randn(37, 50, dtype=torch.float16, generator=gen), randn(50, 19, dtype=torch.float16, generator=gen)
    expected = (a.float() @ b.float()).half()
    assert_close(impl(MODULE).matmul(a, b), expected, reduction=50)
