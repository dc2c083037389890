"""Hidden tests for part05_quantization.awq."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from infralab.mistakes.part05_quantization.awq import (DIVIDED_WEIGHT, dequantize_groups, fold_mistakes,
                                                       outlier_layer, output_error, reference_fake_quantize,
                                                       reference_fold, reference_group_codes, reference_scales,
                                                       reference_search, reference_stats, search_mistakes,
                                                       stats_mistakes)
from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, assert_equal, cancellation_atol, check_tensor, randn

MODULE = "part05_quantization.awq"
# Grid-search errors: an s one ulp away (fp32 pow vs the float64 reference, or another equally right
# operation order) can flip a code at a rounding tie, and a flipped weight of an outlier channel moves
# the mean error visibly, the more so the fewer output rows share the mean: in a 4-row layer of 256
# inputs (groups of 128) the solution read 2.6% over 1,000 seeds and 3.6% at one seed in CI (70007),
# so the defaults test uses 64 rows: at most 0.69% over 5,000 seeds, while the closest known mistake
# (max|x|) differs by 6.6% or more there (9% or more on the search test's layers). 3% keeps a
# factor of two from both.
ERROR_RTOL = 3e-2


@given(shape=st.sampled_from([(5, 8), (2, 3, 16), (1, 4)]), dtype=st.sampled_from([torch.float32, torch.bfloat16]),
       seed=st.integers(0, 2**31 - 1))
def test_activation_stats_are_the_mean_absolute_value_per_input_channel(impl, shape, dtype, seed):
    x = randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed), scale=3.0)
    got = impl(MODULE).activation_stats(x)
    assert_close(got, reference_stats(x), name="x_mean (in,)", mistakes=stats_mistakes(x))


@given(alpha=st.sampled_from([0.0, 0.05, 0.3, 0.5, 0.95]), seed=st.integers(0, 2**31 - 1))
def test_awq_scales_are_mean_to_the_alpha_normalised_by_the_geometric_middle(impl, alpha, seed):
    g = torch.Generator().manual_seed(seed)
    x_mean = torch.rand(24, generator=g) * 10
    x_mean[:2] = torch.tensor([0.0, 1e-9])  # dead channels: clamped to 1e-4 before normalising
    assert_close(impl(MODULE).awq_scales(x_mean, alpha), reference_scales(x_mean, alpha), name=(f"s at alpha={alpha}",
                                                                                                f"alpha={alpha} 时的 s"),
                 mistakes={("not normalised by sqrt(max(s) * min(s))", "没有除以 sqrt(max(s)·min(s)) 归一化"):
                           lambda: x_mean.pow(alpha).clamp(min=1e-4)})


@pytest.mark.weight(2)
@given(out=st.integers(1, 5), groups=st.integers(1, 3), gs=st.sampled_from([4, 16, 32]), bits=st.sampled_from([3, 4, 8]),
       shift=st.sampled_from([0.0, 0.2, -0.5]), seed=st.integers(0, 2**31 - 1))
def test_fake_quantize_is_group_wise_zero_point_quantisation(impl, out, groups, gs, bits, shift, seed):
    w = randn(out, groups * gs, generator=torch.Generator().manual_seed(seed), scale=0.1) + shift
    assert_close(impl(MODULE).fake_quantize(w, bits, gs), reference_fake_quantize(w, bits, gs),
                 name=(f"Q(w), {bits} bits, groups of {gs}", f"Q(w)，{bits} 位，每组 {gs} 个"),
                 mistakes={("one scale per row instead of per group", "每行一个 scale，而不是每组一个"):
                           lambda: reference_fake_quantize(w, bits, groups * gs),
                           ("symmetric (absmax) instead of zero-point quantisation", "用了对称量化而不是零点量化"):
                           lambda: _symmetric(w, bits, gs)})


def _symmetric(w, bits, gs):
    g = w.reshape(w.shape[0], -1, gs)
    qmax = 2 ** (bits - 1) - 1
    scale = g.abs().amax(-1, keepdim=True).clamp(min=1e-8) / qmax
    return (torch.clamp(torch.round(g / scale), -qmax, qmax) * scale).reshape(w.shape)


@pytest.mark.parametrize("group_size", [8, 0, -4])
def test_fake_quantize_rejects_a_group_size_that_does_not_divide_the_input(impl, group_size):
    with pytest.raises(ValueError):
        impl(MODULE).fake_quantize(torch.ones(2, 12), 4, group_size)


def test_fake_quantize_handles_constant_groups_and_groups_of_one(impl, gen):
    """A constant group has max - min = 0: the 1e-5 floor keeps its scale positive (no 0 / 0); in an
    all-negative group the zero point clamps to 2^bits - 1 and the codes clamp at 0."""
    w = randn(3, 8, generator=gen)
    w[0, :4] = 0.7
    w[1, 4:] = 0.0
    w[2] = -1.0 - torch.rand(8, generator=gen)
    m = impl(MODULE)
    assert_close(m.fake_quantize(w, 4, 4), reference_fake_quantize(w, 4, 4), name=("Q(w) with constant groups",
                                                                                   "组内为常数时的 Q(w)"))
    assert_close(m.fake_quantize(w, 4, 1), reference_fake_quantize(w, 4, 1), name=("Q(w) with group_size=1",
                                                                                   "group_size=1 时的 Q(w)"))


def test_defaults_are_4_bits_groups_of_128_and_a_grid_of_20(impl, gen):
    w, x = outlier_layer(gen, n=16, cin=256, out=64)
    m = impl(MODULE)
    assert_close(m.fake_quantize(w), reference_fake_quantize(w, 4, 128), name="fake_quantize(w) defaults")
    _, _, errors = m.search_scales(w, x)
    check_tensor(errors, shape=(20,), dtype=torch.float32, name=("search_scales defaults: errors (n_grid = 20,)",
                                                                 "search_scales 默认参数：errors (n_grid = 20,)"))
    assert_close(errors, reference_search(w, x, 4, 128, 20)[2], rtol=ERROR_RTOL, atol=0.0,
                 name=("search_scales defaults: errors (4 bits, groups of 128)",
                       "search_scales 默认参数：errors（4 位，每组 128 个）"))
    q, scale, zero, s = m.awq_quantize(w, x)
    eq, escale, ezero = reference_group_codes(w * s, 4, 128)
    assert_equal(q, eq, name=("awq_quantize defaults: codes (4 bits, groups of 128)",
                              "awq_quantize 默认参数：编码（4 位，每组 128 个）"))
    assert_close(scale, escale, name=("awq_quantize defaults: scales (64, 2)",
                                      "awq_quantize 默认参数：scales (64, 2)"))
    _check_chosen_s(s, w, x, 4, 128, 20, "awq_quantize defaults: s (grid of 20)")


def _check_search(got, w, x, bits, gs, n_grid):
    s, alpha, errors = got
    check_tensor(errors, shape=(n_grid,), dtype=torch.float32, name="errors (n_grid,)")
    check_tensor(s, shape=(w.shape[1],), dtype=torch.float32, name="s (in,)")
    ref_s, _, ref_errors = reference_search(w, x, bits, gs, n_grid)
    assert_close(errors, ref_errors, rtol=ERROR_RTOL, atol=0.0, name=("output error at each grid point", "每个网格点处的输出误差"),
                 mistakes=search_mistakes(w, x, bits, gs, n_grid, "errors"))
    if not isinstance(alpha, float) or int(round(alpha * n_grid)) not in range(n_grid) \
            or abs(alpha * n_grid - round(alpha * n_grid)) > 1e-9:
        raise Mismatch(tr("part05.awq.alpha_not_on_grid", n_grid=n_grid, last=n_grid - 1, got=repr(alpha)))
    i = int(round(alpha * n_grid))
    first_min = int(torch.nonzero(errors <= errors.min()).min())
    if i != first_min:
        raise Mismatch(tr("part05.awq.not_first_minimum", alpha=alpha, i=i, error=f"{float(errors[i]):.6g}",
                          first=first_min, best=f"{float(errors[first_min]):.6g}"))
    assert_close(s, reference_scales(reference_stats(x), alpha), name=(f"s of the chosen alpha = {alpha}",
                                                                       f"选中的 alpha = {alpha} 对应的 s"),
                 mistakes=search_mistakes(w, x, bits, gs, n_grid, "s"))
    return s, alpha, errors


def _check_chosen_s(s, w, x, bits, gs, n_grid, name):
    """s is the factors of a grid point whose reference error is the minimum (within ERROR_RTOL: near-ties
    may go either way in fp32)."""
    check_tensor(s, shape=(w.shape[1],), dtype=torch.float32, name=name)
    best_s, _, errors = reference_search(w, x, bits, gs, n_grid)
    x_mean = reference_stats(x)
    for i in torch.nonzero(errors <= errors.min() * (1 + ERROR_RTOL)).flatten().tolist():
        candidate = reference_scales(x_mean, i / n_grid)
        if bool(torch.allclose(s, candidate, rtol=1e-5, atol=1e-5)):
            return
    assert_close(s, best_s, name=name, mistakes=search_mistakes(w, x, bits, gs, n_grid, "s"))


@pytest.mark.weight(3)
@settings(max_examples=10)  # each example runs a 10-point grid search twice
@given(n_outliers=st.integers(1, 4), gs=st.sampled_from([16, 32]), bits=st.sampled_from([3, 4]),
       three_d=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_search_scales_minimises_the_output_error_over_the_grid(impl, n_outliers, gs, bits, three_d, seed):
    w, x = outlier_layer(torch.Generator().manual_seed(seed), n=48, n_outliers=n_outliers)
    calib = x.reshape(4, 12, -1) if three_d else x
    _check_search(impl(MODULE).search_scales(w, calib, bits, gs, 10), w, x, bits, gs, 10)


@pytest.mark.weight(2)
def test_grid_point_zero_is_round_to_nearest(impl, gen):
    """alpha = 0 gives s = 1: the first error is plain RTN's, so the search never does worse on calibration."""
    w, x = outlier_layer(gen)
    _, _, errors = impl(MODULE).search_scales(w, x, 4, 16, 8)
    check_tensor(errors, shape=(8,), dtype=torch.float32, name="errors (8,)")
    rtn = output_error(w, reference_fake_quantize(w, 4, 16), x)
    assert_close(errors[:1], torch.tensor([rtn], dtype=torch.float32), rtol=ERROR_RTOL, atol=0.0,
                 name=("error at alpha = 0 (round-to-nearest)", "alpha = 0 时的误差（就近舍入）"))


def test_equal_errors_keep_the_first_grid_point(impl, gen):
    """Every channel has the same mean |x|: every alpha gives s = 1 and the same error; alpha must stay 0."""
    x = torch.sign(randn(32, 32, generator=gen))            # |x| = 1 everywhere
    w = randn(8, 32, generator=gen, scale=0.05)
    s, alpha, _ = impl(MODULE).search_scales(w, x, 4, 16, 10)
    if alpha != 0.0:
        raise Mismatch(tr("part05.awq.tie_not_first", got=repr(alpha)),
                       ("the last minimum was kept (<= instead of <)", "保留了最后一个最小值（用了 <= 而不是 <）"))
    assert_close(s, torch.ones(32), name=("s (all ones)", "s（全为 1）"))


@pytest.mark.weight(2)
@pytest.mark.parametrize("prev", ["norm", "linear"])
@pytest.mark.parametrize("bias", [False, True])
def test_fold_scales_divides_the_previous_op_and_leaves_the_output_unchanged(impl, gen, prev, bias):
    cin, out = 24, 10
    s = torch.rand(cin, generator=gen) * 4 + 0.25
    w = randn(out, cin, generator=gen)
    prev_w = randn(cin, generator=gen) if prev == "norm" else randn(cin, 16, generator=gen)
    prev_b = randn(cin, generator=gen) if bias else None
    new_prev, new_bias, new_w = impl(MODULE).fold_scales(prev_w, w, s, prev_b)
    ref_prev, ref_bias, ref_w = reference_fold(prev_w, w, s, prev_b)
    assert_close(new_prev, ref_prev, name=(f"previous op's weight ({prev})",
                                           f"前一个算子的权重（{prev}）"), mistakes=fold_mistakes(prev_w, s))
    assert_close(new_w, ref_w, name=("layer weight * s", "该层权重 * s"),
                 mistakes={DIVIDED_WEIGHT: lambda: w / s})
    if bias:
        assert_close(check_tensor(new_bias, name=("previous bias", "前一个 bias")), ref_bias, name=("previous bias / s", "前一个 bias / s"))
    elif new_bias is not None:
        raise Mismatch(tr("part05.awq.bias_not_none", got=type(new_bias).__name__))
    h = randn(5, cin if prev == "norm" else 16, generator=gen)
    x = h * prev_w if prev == "norm" else h @ prev_w.T
    x_new = h * new_prev if prev == "norm" else h @ new_prev.T
    # the output is a sum of terms that may cancel; a correct fold carries float32 roundoff at
    # the size of those terms (|h| |prev_w| + |prev_b|) |w|, however small the output
    size = h.abs() * prev_w.abs() if prev == "norm" else h.abs() @ prev_w.abs().T
    if bias:
        x, x_new = x + prev_b, x_new + new_bias
        size = size + prev_b.abs()
    assert_close(x_new @ new_w.T, x @ w.T, name=("layer output after folding", "折叠后该层的输出"),
                 atol=cancellation_atol(size @ w.abs().T))


@pytest.mark.weight(3)
@settings(max_examples=10)  # each example runs a 10-point grid search twice
@given(gs=st.sampled_from([16, 32]), bits=st.sampled_from([3, 4]), seed=st.integers(0, 2**31 - 1))
def test_awq_quantize_codes_are_the_groups_of_w_times_s(impl, gs, bits, seed):
    w, x = outlier_layer(torch.Generator().manual_seed(seed), n=32)
    m = impl(MODULE)
    q, scale, zero, s = m.awq_quantize(w, x, bits, gs, 10)
    _check_chosen_s(s, w, x, bits, gs, 10, "s (the search's best factors)")
    eq, escale, ezero = reference_group_codes(w * s, bits, gs)   # replayed on the answer's own s
    assert_close(scale, escale, name=("group scales of w * s", "w * s 的分组 scales"))
    assert_equal(zero, ezero, name=("zero points (int32)", "零点（int32）"))
    assert_equal(q, eq, name=(f"uint{bits} codes of w * s", f"w * s 的 uint{bits} 编码"),
                 mistakes={DIVIDED_WEIGHT: lambda: reference_group_codes(w / s, bits, gs)[0],
                           ("the codes are of w, not of w * s", "量化的是 w 而不是 w·s"):
                           lambda: reference_group_codes(w, bits, gs)[0]})


LAYERS = 3  # layers whose output errors are pooled in the comparison with round-to-nearest


@pytest.mark.weight(3)
@pytest.mark.parametrize("n_outliers,factor", [(1, 30.0), (3, 20.0), (6, 10.0)])
def test_awq_output_error_is_well_below_round_to_nearest_with_outlier_channels(impl, gen, n_outliers, factor):
    """The errors of LAYERS layers are pooled: one layer's AWQ/RTN ratio has a long tail (6 outliers x10:
    median 0.43, but 0.90 at worst over 3000 seeds, so a single layer failed a correct answer at about 1
    seed in 300); pooled over 3 layers the worst of 1500 seeds is 0.61 (0.50 for 3 outliers x20), under
    the 0.8 bar with room."""
    totals = {tr("part05.awq.calibration_inputs"): [0.0, 0.0], tr("part05.awq.held_out_inputs"): [0.0, 0.0]}
    for _ in range(LAYERS):
        w, x = outlier_layer(gen, n_outliers=n_outliers, factor=factor)
        q, scale, zero, s = impl(MODULE).awq_quantize(w, x, 4, 16, 20)
        w_awq = dequantize_groups(q, scale, zero) / s
        rtn = reference_fake_quantize(w, 4, 16)
        fresh = torch.randn(64, x.shape[1], generator=gen) * reference_stats(x) * 1.25   # held-out tokens
        for total, inputs in zip(totals.values(), (x, fresh)):
            total[0] += output_error(w, w_awq, inputs)
            total[1] += output_error(w, rtn, inputs)
    for name, (e_awq, e_rtn) in totals.items():
        if not e_awq < 0.8 * e_rtn:
            raise Mismatch(tr("part05.awq.not_below_rtn", inputs=name, awq=f"{e_awq:.4g}", rtn=f"{e_rtn:.4g}"))
