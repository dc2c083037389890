"""Hidden tests for part03_kernels.softmax (one block per row, and online across blocks)."""
import pytest
import torch

from infralab.testing import assert_all_written, assert_close, randn

MODULE = "part03_kernels.softmax"


def reference(x):
    return torch.softmax(x.double(), dim=-1).to(x.dtype)


def online_without_rescale(x, block):
    """The online pass with l += sum(exp(x_b - m_new)) but the old l never multiplied by exp(m - m_new)."""
    xf = x.double()
    m = torch.full(x.shape[:-1], -torch.inf, dtype=torch.float64)
    l = torch.zeros(x.shape[:-1], dtype=torch.float64)
    for start in range(0, x.shape[-1], block):
        chunk = xf[..., start:start + block]
        m = torch.maximum(m, chunk.amax(-1))
        l = l + torch.exp(chunk - m[..., None]).sum(-1)
    return (torch.exp(xf - m[..., None]) / l[..., None]).to(x.dtype)


def zero_padded(x, block):
    """Masked lanes loaded as 0 instead of -inf: each padded lane adds exp(0 - m) to the sum."""
    n = x.shape[-1]
    width = -(-n // block) * block
    padded = torch.nn.functional.pad(x.double(), (0, width - n))
    return (torch.exp(x.double() - padded.amax(-1, keepdim=True))
            / torch.exp(padded - padded.amax(-1, keepdim=True)).sum(-1, keepdim=True)).to(x.dtype)


def mistakes(x, block):
    pow2 = 1 << (x.shape[-1] - 1).bit_length()
    return {
        ("the running sum was not rescaled by exp(m_old - m_new) when the max grew",
         "最大值增大时，累加和没有乘 exp(m_old - m_new) 重新缩放"):
            lambda: online_without_rescale(x, block),
        ("masked lanes were loaded as 0 instead of -inf, so padding adds to the sum",
         "被掩码的位置按 0 而不是 -inf 读入，填充值计入了求和"):
            lambda: zero_padded(x, block or pow2),
        ("the row max was not subtracted before exp", "exp 之前没有减去行最大值"):
            lambda: (torch.exp(x.double()) / torch.exp(x.double()).sum(-1, keepdim=True)).to(x.dtype),
    }


def check(impl, x, block_size=None):
    got = impl(MODULE).softmax(x, block_size=block_size)
    assert_all_written(got, diagnosis=("exp overflowed to inf and inf / inf gave NaN: subtract the row max before "
                                      "exp (or part of the output was never written)",
                                       "exp 溢出为 inf，inf / inf 得到 NaN：exp 之前要减去行最大值（或者部分输出从未写入）"))
    assert_close(got, reference(x), mistakes=mistakes(x, block_size))


@pytest.mark.weight(2)
@pytest.mark.parametrize("shape", [(3, 100), (2, 2, 37), (1, 64)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_softmax_matches_reference_in_one_block(impl, gen, shape, dtype):
    """Rows shifted negative so that a padded lane read as 0 would be the largest value."""
    check(impl, (randn(*shape, generator=gen, scale=2.0) - 4.0).to(dtype))


@pytest.mark.weight(3)
@pytest.mark.parametrize("n, block", [(100, 32), (70, 16), (64, 16)])
def test_softmax_online_across_blocks_rescales_the_running_sum(impl, gen, n, block):
    """The max grows from block to block, so every block's new max must rescale the sum so far."""
    x = randn(3, n, generator=gen) + torch.linspace(0.0, 12.0, n)
    check(impl, x, block)


@pytest.mark.weight(2)
def test_softmax_online_pads_the_last_block_with_minus_infinity(impl, gen):
    x = randn(2, 50, generator=gen) - 5.0
    check(impl, x, 16)


@pytest.mark.weight(2)
@pytest.mark.parametrize("block", [None, 16])
def test_softmax_large_values_do_not_overflow(impl, gen, block):
    """|x| up to ~3e4: exp(x) overflows fp32 unless the max is subtracted first."""
    check(impl, randn(2, 40, generator=gen, scale=1e4), block)


def test_softmax_a_row_wider_than_one_default_block(impl, gen):
    """block_size None on a row of 9000: whatever block the implementation picks must work (a default block
    that is not a power of two passed every CPU hidden test: mutation run of 2026-12-07)."""
    check(impl, randn(2, 9000, generator=gen, scale=3.0))


def test_softmax_rows_sum_to_one(impl, gen):
    got = impl(MODULE).softmax(randn(5, 33, generator=gen, scale=4.0), block_size=8)
    assert_close(got.sum(-1), torch.ones(5), name=("row sums", "行和"), rtol=1e-5, atol=1e-5)


def test_softmax_accepts_a_block_size_of_one(impl, gen):
    """1 = 2^0 is a power of two: one column per step of the online pass, accepted and correct (a check
    written `block_size <= 1` rejected it and passed every other hidden test: mutation run of 2026-12-07)."""
    check(impl, randn(2, 5, generator=gen, scale=2.0), 1)


def test_softmax_rejects_a_block_size_that_is_not_a_power_of_two(impl, gen):
    with pytest.raises(ValueError):
        impl(MODULE).softmax(randn(2, 20, generator=gen), block_size=24)


@pytest.mark.gpu
@pytest.mark.parametrize("shape, block", [((4096, 4096), None), ((64, 20000), None), ((256, 5000), 1024)])
def test_softmax_bf16_large_on_gpu(impl, gen, shape, block):
    check(impl, randn(*shape, dtype=torch.bfloat16, generator=gen, device="cuda", scale=3.0), block)
