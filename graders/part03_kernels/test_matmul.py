"""Hidden tests for part03_kernels.matmul (tiled, grouped program order, fp32 accumulation)."""
import pytest
import torch

from infralab.testing import assert_all_written, assert_close, randn

MODULE = "part03_kernels.matmul"
UNWRITTEN = ("tiles of C were never written: the grouped order maps two programs to one tile; in the last "
             "group use group_size_m = min(num_pid_m - first_pid_m, GROUP_M), not GROUP_M",
             "C 的部分 tile 没有被写入：分组顺序让两个 program 映射到同一个 tile；最后一组应使用 "
             "group_size_m = min(num_pid_m - first_pid_m, GROUP_M)，而不是 GROUP_M")


def reference(a, b):
    return (a.double() @ b.double()).to(a.dtype)


def mistakes(a, b):
    return {("the strides were ignored (row-major assumed), so a transposed input was read in the wrong order",
             "忽略了步长（假定行主序），转置的输入按错误顺序读取"):
            lambda: (torch.as_strided(a, a.shape, (a.shape[1], 1)).double()
                     @ torch.as_strided(b, b.shape, (b.shape[1], 1)).double()).to(a.dtype)}


def check(impl, a, b, **tol):
    got = impl(MODULE).matmul(a, b)
    assert_all_written(got, name="C", diagnosis=UNWRITTEN)
    assert_close(got, reference(a, b), name="C", reduction=a.shape[1], mistakes=mistakes(a, b), **tol)


@pytest.mark.weight(3)
@pytest.mark.parametrize("m, k, n", [(70, 40, 50), (33, 16, 17), (1, 40, 9)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_matmul_matches_reference_on_ragged_shapes(impl, gen, m, k, n, dtype):
    """Ragged M, N and K; with 32-row tiles and GROUP_M = 2, 70 rows leave a last group of one tile-row."""
    check(impl, randn(m, k, dtype=dtype, generator=gen), randn(k, n, dtype=dtype, generator=gen))


@pytest.mark.weight(2)
def test_matmul_accumulates_in_fp32(impl, gen):
    """fp16 inputs, K = 1024 of positive products: an fp32 accumulator rounds once, at the end, so
    the result is within one fp16 ulp (~1e-3 relative) of the exact sum; an fp16 running sum
    rounds at every K step and drifts further (the table's fp16 tolerance would hide that).
    Three draws: the drift of one draw can stay small by chance, of all three it does not."""
    for _ in range(3):
        a = torch.rand(32, 1024, generator=gen).half()
        b = torch.rand(1024, 32, generator=gen).half()
        got = impl(MODULE).matmul(a, b)
        assert_all_written(got, name="C", diagnosis=UNWRITTEN)
        expected = reference(a, b)
        fp16_sum = torch.zeros(32, 32, dtype=torch.float16)
        for k in range(0, 1024, 16):
            fp16_sum = (fp16_sum.float() + a[:, k:k + 16].float() @ b[k:k + 16].float()).half()
        assert_close(got, expected, name="C", rtol=1.5e-3, atol=0.0,  # one fp16 ulp is 2**-10 = 9.8e-4 relative
                     mistakes={("the running sum was kept in fp16: accumulate in fp32 and cast once at the end",
                                "累加和保留在 fp16 中：应在 fp32 中累加，最后只转换一次"): fp16_sum})


@pytest.mark.weight(2)
def test_matmul_follows_the_strides_of_transposed_and_sliced_inputs(impl, gen):
    a = randn(70, 100, generator=gen)[:, 10:50]  # row stride 100
    b = randn(30, 40, generator=gen).t()  # column-major
    check(impl, a, b)


def test_matmul_rejects_shapes_that_do_not_chain(impl, gen):
    with pytest.raises(ValueError):
        impl(MODULE).matmul(randn(4, 5, generator=gen), randn(6, 3, generator=gen))


@pytest.mark.gpu
@pytest.mark.parametrize("m, k, n", [(1000, 1000, 999), (2048, 4096, 1024)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_matmul_large_on_gpu(impl, gen, m, k, n, dtype):
    a = randn(m, k, dtype=dtype, generator=gen, device="cuda")
    b = randn(k, n, dtype=dtype, generator=gen, device="cuda")
    got = impl(MODULE).matmul(a, b)
    assert_all_written(got, name="C", diagnosis=UNWRITTEN)
    expected = (a.float() @ b.float()).to(dtype)
    assert_close(got, expected, name="C", reduction=k)
