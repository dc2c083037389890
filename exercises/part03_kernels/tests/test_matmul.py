"""Visible tests for part03_kernels.matmul: run `pytest exercises/part03_kernels -m matmul`."""
import torch

from infralab.testing import assert_all_written, assert_close, randn

MODULE = "part03_kernels.matmul"


def test_matmul_matches_torch(impl, gen):
    a, b = randn(48, 32, generator=gen), randn(32, 40, generator=gen)
    assert_close(impl(MODULE).matmul(a, b), a @ b, reduction=32)


def test_matmul_ragged_shapes_in_fp16(impl, gen):
    a, b = randn(37, 50, dtype=torch.float16, generator=gen), randn(50, 19, dtype=torch.float16, generator=gen)
    expected = (a.float() @ b.float()).half()
    assert_close(impl(MODULE).matmul(a, b), expected, reduction=50)


def test_matmul_of_a_transposed_input_uses_its_strides(impl, gen):
    """a = (40, 24) buffer viewed transposed: (24, 40) with strides (1, 24); read it through a.stride()."""
    a, b = randn(40, 24, generator=gen).T, randn(40, 16, generator=gen)
    row_major = torch.as_strided(a, a.shape, (a.shape[1], 1))  # what strides (K, 1) read
    assert_close(impl(MODULE).matmul(a, b), a @ b, reduction=40,
                 mistakes={("row-major strides assumed: a transposed input was read in the wrong order (pass a.stride())",
                            "假定了行主序步长：转置的输入按错误顺序读取（应传入 a.stride()）"): lambda: row_major @ b})


def test_matmul_with_tile_rows_not_a_multiple_of_the_group(impl, gen):
    """M = 70 is 3 tile rows of 32: with GROUP_M = 2 the last group has 1 row; every tile is written once."""
    a, b = randn(70, 16, generator=gen), randn(16, 40, generator=gen)
    c = impl(MODULE).matmul(a, b)
    assert_all_written(c, name="C", diagnosis=(
        "some tiles never written: the last, shorter group of tile rows was divided by GROUP_M, not by "
        "min(num_pid_m - first_pid_m, GROUP_M)",
        "有些块从未写入：最后一组较短，却仍按 GROUP_M 而不是 min(num_pid_m - first_pid_m, GROUP_M) 划分"))
    assert_close(c, a @ b)


def test_matmul_accumulates_in_fp32_over_a_long_k(impl, gen):
    """fp16, K = 256: +2048 at k = 0 and -2048 at k = 255 around small terms. An fp32 accumulator keeps the
    small terms; an fp16 one rounds the running sum to a step of 2 after every BLOCK_K."""
    a, b = torch.rand(16, 256, generator=gen).half(), torch.rand(256, 16, generator=gen).half()
    a[:, 0], b[0, :], a[:, -1], b[-1, :] = 64.0, 32.0, 64.0, -32.0
    expected = (a.float() @ b.float()).half()

    def fp16_running_sum(block_k):
        acc = torch.zeros(16, 16, dtype=torch.float16)
        for k in range(0, 256, block_k):
            acc = (acc.float() + a[:, k:k + block_k].float() @ b[k:k + block_k].float()).half()
        return acc

    assert_close(impl(MODULE).matmul(a, b), expected, reduction=256,
                 mistakes={(f"the accumulator kept in fp16 (BLOCK_K {bk}): accumulate in fp32, cast once at the end",
                            f"累加器用了 fp16（BLOCK_K {bk}）：应在 fp32 中累加，最后只转换一次"):
                           (lambda bk=bk: fp16_running_sum(bk)) for bk in (16, 32, 64, 128)})
