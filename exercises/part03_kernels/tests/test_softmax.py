"""Visible tests for part03_kernels.softmax: run `pytest exercises/part03_kernels -m softmax`."""
import torch

from infralab.testing import assert_close, randn

MODULE = "part03_kernels.softmax"


def test_softmax_matches_torch_on_one_block(impl, gen):
    x = randn(4, 100, generator=gen, scale=3.0)
    assert_close(impl(MODULE).softmax(x), torch.softmax(x, dim=-1))


def test_softmax_long_rows_go_online_across_blocks(impl, gen):
    """block_size=32 < N=100: four blocks per row, the running max grows along the row."""
    x = randn(2, 100, generator=gen) + torch.linspace(0.0, 10.0, 100)
    assert_close(impl(MODULE).softmax(x, block_size=32), torch.softmax(x, dim=-1))


def test_softmax_of_large_logits_subtracts_the_row_max(impl, gen):
    """softmax(x + 85) = softmax(x); exp(85) is finite in fp32, but 100 of them sum past its max (3.4e38)."""
    x = randn(2, 100, generator=gen, scale=0.5) + 85.0
    without_max = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)  # finite / inf = 0
    assert_close(impl(MODULE).softmax(x), torch.softmax(x, dim=-1),
                 mistakes={("exp(x) without subtracting the row max: the sum overflowed",
                            "exp(x) 之前没有减去行最大值：求和溢出了"): without_max})
