"""Visible tests for part05_quantization.gptq: run `pytest exercises/part05_quantization -m gptq`."""
import pytest
import torch

from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, assert_equal, expect, randn

MODULE = "part05_quantization.gptq"


def test_hessian_is_two_over_n_xtx(impl, gen):
    x = randn(10, 6, generator=gen)
    assert_close(impl(MODULE).gptq_hessian(x), 2 / 10 * x.T @ x, name="Hessian")


def test_rtn_symmetric_4bit_hand_example(impl):
    # amax 7.5 -> scale 2 * 7.5 / 15 = 1, zero point 8; 2.5 is a tie (half to even -> 2)
    w = torch.tensor([[7.5, -7.5, 2.5, 0.0]])
    codes, scales, zeros, g_idx = impl(MODULE).quantize_rtn(w, bits=4, group_size=-1)
    assert_close(scales, torch.tensor([[1.0]]), name="scale")
    assert_equal(zeros, torch.tensor([[8]], dtype=torch.int32), name=("zero point", "零点"))
    assert_equal(codes, torch.tensor([[15, 0, 10, 8]], dtype=torch.uint8), name="codes")  # 7.5 -> 8 -> clamp 15
    assert_equal(g_idx, torch.zeros(4, dtype=torch.int64), name="g_idx")


def test_identity_hessian_makes_gptq_equal_to_rtn(impl, gen):
    """Uncorrelated inputs of equal power: H is a multiple of I and no error is fed back."""
    m = impl(MODULE)
    w = randn(8, 32, generator=gen, scale=0.1)
    x = torch.eye(32)
    got = m.gptq_quantize(w, x, bits=4, group_size=8, block_size=8)
    rtn = m.quantize_rtn(w, bits=4, group_size=8)
    for a, b, name in zip(got, rtn, ("codes", "scales", "zeros", "g_idx")):
        if a.is_floating_point():
            assert_close(a, b, name=name)
        else:
            assert_equal(a, b, name=name)


def test_gptq_output_error_is_below_rtn(impl, gen):
    m = impl(MODULE)
    mix = randn(32, 32, generator=gen) / 32 ** 0.5 + torch.eye(32)
    x = randn(128, 32, generator=gen) @ mix
    w = randn(16, 32, generator=gen, scale=0.05)
    deq = lambda q: m.dequantize_gptq(*q)  # noqa: E731
    e_gptq = torch.linalg.norm(x @ (w - deq(m.gptq_quantize(w, x, bits=4, block_size=8))).T)
    e_rtn = torch.linalg.norm(x @ (w - deq(m.quantize_rtn(w, bits=4))).T)
    expect(e_gptq < e_rtn, "part05.gptq.not_below_rtn", gptq=float(e_gptq), rtn=float(e_rtn))


def test_group_size_must_divide_the_input_dimension(impl, gen):
    with pytest.raises(ValueError):
        impl(MODULE).gptq_quantize(randn(4, 30, generator=gen), randn(8, 30, generator=gen), group_size=8)


def test_group_size_one_is_one_group_per_column(impl):
    """group_size=1 is valid (if costly): every column gets its own scale; refusing it is a mistake."""
    w = torch.tensor([[4.0, -2.0, 1.0]])
    try:
        codes, scales, zeros, g_idx = impl(MODULE).quantize_rtn(w, bits=4, group_size=1, sym=False)
    except ValueError as e:
        raise Mismatch(tr("part05.gptq.group_size_one_refused", error=e)) from None
    assert_equal(tuple(scales.shape), (1, 3), name=("scales shape with group_size=1 (rows, columns)",
                                                    "group_size=1 时 scales 的形状 (rows, columns)"))
    assert_equal(g_idx, torch.arange(3), name=("g_idx with group_size=1 (column j in group j)",
                                               "group_size=1 时的 g_idx（第 j 列在第 j 组）"))


def test_rtn_asymmetric_all_zero_and_one_signed_groups(impl):
    """Groups of 2: all zero (range [-1, 1]), all positive and all negative (range widened to 0)."""
    w = torch.tensor([[0.0, 0.0, 1.0, 3.0, -3.0, -1.0]])
    codes, scales, zeros, _ = impl(MODULE).quantize_rtn(w, bits=4, group_size=2, sym=False)
    assert_close(scales, torch.tensor([[2 / 15, 0.2, 0.2]]), name=("asymmetric scales", "非对称量化的 scales"),
                 mistakes={("the range is the group's [min, max], not widened to include 0",
                            "范围取了组内的 [min, max]，没有扩展到包含 0"):
                           torch.tensor([[2 / 15, 2 / 15, 2 / 15]]),
                           ("an all-zero group was not special-cased (lo, hi = -1, 1)",
                            "全零组没有特殊处理（lo, hi = -1, 1）"): torch.tensor([[0.0, 0.2, 0.2]])})
    z = int(torch.round(1.0 / (torch.tensor(2.0) / 15)))  # round(-lo / scale) in fp32: 7.4999... -> 7
    assert_equal(zeros, torch.tensor([[z, 0, 15]], dtype=torch.int32), name=("asymmetric zero points", "非对称量化的零点"))
    assert_equal(codes, torch.tensor([[z, z, 5, 15, 0, 10]], dtype=torch.uint8), name=("asymmetric codes", "非对称量化的编码"))


def test_defaults_are_4_bits_one_group_per_row_symmetric(impl, gen):
    codes, scales, zeros, _ = impl(MODULE).quantize_rtn(randn(3, 256, generator=gen))
    expect(tuple(scales.shape) == (3, 1), "part05.gptq.default_group_size", got=tuple(scales.shape))
    expect(int(codes.max()) <= 15, "part05.gptq.default_bits", got=int(codes.max()))
    assert_equal(zeros, torch.full((3, 1), 8, dtype=torch.int32), name=("default symmetric zero points", "默认对称量化的零点"))


def test_act_order_returns_codes_in_the_original_column_order(impl, gen):
    """Inputs x = diag(1..32): H is diagonal, so no error is fed back and GPTQ equals RTN column for
    column, whatever order act-order processes the columns in (here 31, 30, ..., 0: largest H_ii first)."""
    m = impl(MODULE)
    w = randn(8, 32, generator=gen, scale=0.1)
    x = torch.diag(torch.arange(1.0, 33.0))
    codes, _, _, _ = m.gptq_quantize(w, x, bits=4, group_size=-1, act_order=True, block_size=8)
    rtn_codes = m.quantize_rtn(w, bits=4, group_size=-1)[0]
    assert_equal(codes, rtn_codes, name=("act-order codes with a diagonal Hessian", "对角 Hessian 下 act-order 的编码"),
                 mistakes={("act-order permutation not undone: codes returned in processing order",
                            "act-order 的列置换没有还原：编码按处理顺序返回"): rtn_codes.flip(1)})


def test_lazy_block_size_does_not_change_the_codes(impl, gen):
    """Lazy batches only delay the update of later columns: blocks of 8 and one block of 32 give the same
    codes (a rare code may flip from fp32 rounding order; none did in 200 seeds)."""
    m = impl(MODULE)
    mix = randn(32, 32, generator=gen) / 32 ** 0.5 + torch.eye(32)
    x = randn(128, 32, generator=gen) @ mix
    w = randn(16, 32, generator=gen, scale=0.05)
    lazy = m.gptq_quantize(w, x, bits=4, block_size=8)[0]
    one_block = m.gptq_quantize(w, x, bits=4, block_size=32)[0]
    blocks_that_differ = [bool((lazy[:, i:i + 8] != one_block[:, i:i + 8]).float().mean() > 0.05)
                          for i in range(0, 32, 8)]
    assert_equal(blocks_that_differ, [False] * 4, name=("blocks of 8 columns whose codes differ from one block of 32",
                                                        "8 列一块时与 32 列一块编码不同的情形"),
                 mistakes={("the lazy update reached only the next block (W[:, i2:i2 + B]), not every later column",
                            "惰性更新只作用于下一个块（W[:, i2:i2 + B]），而不是之后的所有列"): [False, False, True, True]})


def test_damping_makes_a_singular_hessian_invertible(impl, gen):
    """8 samples of 32 inputs: H = 2/n X^T X has rank 8; only percdamp * mean(diag H) on the diagonal
    makes it invertible (the default percdamp is 0.01)."""
    w, x = randn(8, 32, generator=gen, scale=0.1), randn(8, 32, generator=gen)
    try:
        deq = impl(MODULE).dequantize_gptq(*impl(MODULE).gptq_quantize(w, x))
        outcome = "finite weights" if bool(torch.isfinite(deq).all()) else "non-finite weights"
    except torch.linalg.LinAlgError:
        outcome = "LinAlgError"
    assert_equal(outcome, "finite weights", name=("gptq_quantize with a singular Hessian",
                                                  "奇异 Hessian 下的 gptq_quantize"),
                 mistakes={("no damping: H inverted as it is (add percdamp * mean(diag H) to the diagonal)",
                            "没有加阻尼：直接对 H 求逆（应在对角线上加 percdamp * mean(diag H)）"): "LinAlgError"})
