"""Visible tests for part05_quantization.w4a16: run `pytest exercises/part05_quantization -m w4a16`.

On a CPU the kernel runs under the Triton interpreter (slow: shapes are tiny). ``golden`` replays
recorded inputs and expectations (infralab.golden).
"""
import pytest
import torch

from infralab.testing import assert_all_written, assert_close

MODULE = "part05_quantization.w4a16"


def check(impl, golden, m, n, k, group_size, dtype):
    """Random codes, zero points and scales (quant_basics' layout) and activations of ``dtype``."""
    seed = int(torch.randint(0, 2**31 - 1, (), generator=golden.gen))
    qweight, scales, zeros = golden.ref.random_w4(n, k, group_size, seed)
    x = golden.ref.random_activations(m, k, seed + 1, dtype)
    got = impl(MODULE).w4a16_matmul(x, qweight, scales, zeros, group_size)
    assert_all_written(got, name="y", diagnosis=golden.ref.UNWRITTEN)
    assert_close(got, golden.ref.reference_w4a16(x, qweight, scales, zeros, group_size), name="y = x Wᵀ",
                 reduction=k, atol=golden.ref.w4a16_atol(x, qweight, scales, zeros, group_size),
                 mistakes=golden.ref.w4a16_mistakes(x, qweight, scales, zeros, group_size))


def test_low_nibble_holds_the_even_column(impl, golden):
    """One byte 0x21 holds code 1 (column 0, low nibble) and code 2 (column 1): y = 1*1 + 10*2."""
    qweight = torch.tensor([[0x21]], dtype=torch.uint8)
    y = impl(MODULE).w4a16_matmul(torch.tensor([[1.0, 10.0]]), qweight, torch.ones(1, 1), torch.zeros(1, 1,
                                  dtype=torch.int32), 2)
    assert_close(y, torch.tensor([[21.0]]), name="y", mistakes={golden.ref.HIGH_NIBBLE_FIRST: torch.tensor([[12.0]])})


def test_one_group_matches_dequantize_then_multiply(impl, golden):
    check(impl, golden, m=3, n=8, k=32, group_size=32, dtype=torch.float32)


def test_several_groups_at_ragged_sizes_in_fp16(impl, golden):
    """K = 96 in three groups, N = 19 off every tile, one batch row; fp16 activations."""
    check(impl, golden, m=1, n=19, k=96, group_size=32, dtype=torch.float16)


def test_a_batch_of_twenty_rows(impl, golden):
    check(impl, golden, m=20, n=10, k=64, group_size=16, dtype=torch.float32)


def test_shapes_that_do_not_fit_are_rejected(impl):
    w4a16 = impl(MODULE)
    q, s, z = torch.zeros(4, 16, dtype=torch.uint8), torch.ones(4, 2), torch.zeros(4, 2, dtype=torch.int32)
    with pytest.raises(ValueError):  # K = 30 but qweight holds 32 codes per row
        w4a16.w4a16_matmul(torch.ones(2, 30), q, s, z, 16)
    with pytest.raises(ValueError):  # 32 columns are not groups of 12
        w4a16.w4a16_matmul(torch.ones(2, 32), q, torch.ones(4, 3), torch.zeros(4, 3, dtype=torch.int32), 12)
