"""Hidden tests for part05_quantization.quant_basics."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.mistakes.part05_quantization.quant_basics import (FP8, NO_SATURATION, absmax_mistakes,
                                                                check_scale_shape, reference_absmax, reference_fp8,
                                                                reference_zeropoint, scale_mistakes,
                                                                zeropoint_mistakes)
from infralab.testing import assert_close, assert_equal, randn

MODULE = "part05_quantization.quant_basics"


# ---- absmax -----------------------------------------------------------------------------------

@pytest.mark.weight(3)
@given(out=st.integers(1, 6), groups=st.integers(1, 4), gs=st.sampled_from([4, 8, 32]),
       bits=st.sampled_from([4, 8]), granularity=st.sampled_from(["tensor", "channel", "group"]),
       dtype=st.sampled_from([torch.float32, torch.bfloat16]), seed=st.integers(0, 2**31 - 1))
def test_absmax_matches_reference(impl, out, groups, gs, bits, granularity, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    w = randn(out, groups * gs, dtype=dtype, generator=g, scale=0.05)
    q, scale = impl(MODULE).absmax_quantize(w, bits=bits, granularity=granularity, group_size=gs)
    eq, escale = reference_absmax(w, bits, granularity, gs)
    check_scale_shape(scale, escale.shape, w, granularity)
    assert_close(scale, escale, name=f"{granularity} scales", mistakes=scale_mistakes(w, bits, granularity, gs))
    assert_equal(q, eq, name=(f"int{bits} codes ({granularity})",
                              f"int{bits} 编码（{granularity}）"), mistakes=absmax_mistakes(w, bits, granularity, gs))


@pytest.mark.weight(2)
def test_absmax_rounds_half_to_even(impl, gen):
    """amax = 127 * 2^-3 makes the scale exactly 2^-3; the other entries sit on k + 0.5 steps."""
    halves = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 3.5, -6.5, 10.5]) + torch.randint(-40, 40, (8,), generator=gen)
    w = torch.cat([torch.full((4, 1), 127.0), halves.repeat(4, 1)], dim=1) * 0.125
    q, scale = impl(MODULE).absmax_quantize(w, bits=8, granularity="channel")
    eq, escale = reference_absmax(w, 8, "channel", 0)
    assert_close(scale, escale, name=("scales (exactly 1/8)", "scales（恰为 1/8）"))
    assert_equal(q, eq, name=("int8 codes of exact ties",
                              "恰在中点（tie）处的 int8 编码"), mistakes=absmax_mistakes(w, 8, "channel", 0))


@pytest.mark.weight(2)
def test_absmax_per_channel_is_one_scale_per_output_row(impl, gen):
    """Rows of very different magnitude and a non-square weight (out != in)."""
    w = randn(6, 20, generator=gen) * torch.logspace(-3, 1, 6)[:, None]
    q, scale = impl(MODULE).absmax_quantize(w, bits=8, granularity="channel")
    eq, escale = reference_absmax(w, 8, "channel")
    check_scale_shape(scale, (6, 1), w, "channel")
    assert_close(scale, escale, name=("per-channel scales", "逐通道的 scales"), mistakes=scale_mistakes(w, 8, "channel", 0))
    assert_equal(q, eq, name="int8 codes", mistakes=absmax_mistakes(w, 8, "channel", 0))


@pytest.mark.weight(2)
def test_absmax_scale_comes_from_the_largest_magnitude(impl, gen):
    """One outlier per group: a mean-based scale clips it; the max-based one represents it."""
    w = randn(4, 32, generator=gen, scale=0.01)
    w[:, ::8] = 1.0
    m = impl(MODULE)
    q, scale = m.absmax_quantize(w, bits=4, granularity="group", group_size=8)
    eq, escale = reference_absmax(w, 4, "group", 8)
    assert_close(scale, escale, name=("group scales", "分组 scales"), mistakes=scale_mistakes(w, 4, "group", 8))
    assert_equal(q, eq, name="int4 codes", mistakes=absmax_mistakes(w, 4, "group", 8))


def test_absmax_all_zero_group_gets_unit_scale_and_zero_codes(impl):
    w = torch.zeros(2, 8)
    w[1, 4:] = torch.tensor([1.0, -2.0, 0.5, 3.0])
    q, scale = impl(MODULE).absmax_quantize(w, bits=8, granularity="group", group_size=4)
    eq, escale = reference_absmax(w, 8, "group", 4)
    assert_close(scale, escale, name=("scales (1 for all-zero groups)", "scales（全零的组为 1）"))
    assert_equal(q, eq, name="codes")


@pytest.mark.parametrize("bits,gs", [(2, 4), (8, 1), (2, 1)], ids=["2-bit", "groups-of-one", "2-bit-groups-of-one"])
def test_smallest_bits_and_group_size_are_accepted(impl, gen, bits, gs):
    """bits = 2 (grids -1..1 and 0..3) and group_size = 1 (one scale per element) are inside the allowed ranges."""
    w = randn(3, 8, generator=gen, scale=0.1)
    w[0, :4] = 0.0  # an all-zero group
    m = impl(MODULE)
    q, scale = m.absmax_quantize(w, bits=bits, granularity="group", group_size=gs)
    eq, escale = reference_absmax(w, bits, "group", gs)
    check_scale_shape(scale, escale.shape, w, "group")
    assert_close(scale, escale, name=(f"group scales (bits={bits}, group_size={gs})",
                                      f"分组 scales（bits={bits}，group_size={gs}）"),
                 mistakes=scale_mistakes(w, bits, "group", gs))
    assert_equal(q, eq, name=(f"int{bits} codes (group_size={gs})", f"int{bits} 编码（group_size={gs}）"),
                 mistakes=absmax_mistakes(w, bits, "group", gs))
    q, scale, zero = m.zeropoint_quantize(w, bits=bits, granularity="group", group_size=gs)
    eq, escale, ezero = reference_zeropoint(w, bits, "group", gs)
    check_scale_shape(scale, escale.shape, w, "group")
    assert_close(scale, escale, name=(f"zero-point scales (bits={bits}, group_size={gs})",
                                      f"零点量化的 scales（bits={bits}，group_size={gs}）"),
                 mistakes=zeropoint_mistakes(w, bits, "group", gs, "scale"))
    assert_equal(zero, ezero, name=("zero points (int32)", "零点（int32）"),
                 mistakes=zeropoint_mistakes(w, bits, "group", gs, "zero"))
    assert_equal(q, eq, name=(f"uint{bits} codes (group_size={gs})", f"uint{bits} 编码（group_size={gs}）"),
                 mistakes=zeropoint_mistakes(w, bits, "group", gs, "q"))


# ---- zero point -------------------------------------------------------------------------------

@pytest.mark.weight(3)
@given(out=st.integers(1, 5), groups=st.integers(1, 4), gs=st.sampled_from([4, 16]),
       bits=st.sampled_from([4, 8]), granularity=st.sampled_from(["tensor", "channel", "group"]),
       shift=st.sampled_from([0.0, 0.3, -0.3]), seed=st.integers(0, 2**31 - 1))
def test_zeropoint_matches_reference(impl, out, groups, gs, bits, granularity, shift, seed):
    g = torch.Generator().manual_seed(seed)
    w = randn(out, groups * gs, generator=g, scale=0.1) + shift
    q, scale, zero = impl(MODULE).zeropoint_quantize(w, bits=bits, granularity=granularity, group_size=gs)
    eq, escale, ezero = reference_zeropoint(w, bits, granularity, gs)
    check_scale_shape(scale, escale.shape, w, granularity)
    assert_close(scale, escale, name="scales", mistakes=zeropoint_mistakes(w, bits, granularity, gs, "scale"))
    assert_equal(zero, ezero, name=("zero points (int32)", "零点（int32）"),
                 mistakes=zeropoint_mistakes(w, bits, granularity, gs, "zero"))
    assert_equal(q, eq, name=(f"uint{bits} codes",
                              f"uint{bits} 编码"), mistakes=zeropoint_mistakes(w, bits, granularity, gs, "q"))


@pytest.mark.weight(2)
def test_zeropoint_is_clamped_for_one_signed_groups(impl, gen):
    """All-positive and all-negative groups: -round(min/scale) falls outside 0..15."""
    w = randn(4, 16, generator=gen, scale=0.1).abs() + 0.5
    w[1] = -w[1]
    w[2, :8] = -w[2, :8]
    q, scale, zero = impl(MODULE).zeropoint_quantize(w, bits=4, granularity="group", group_size=8)
    eq, escale, ezero = reference_zeropoint(w, 4, "group", 8)
    assert_equal(zero, ezero, name=("zero points", "零点"), mistakes=zeropoint_mistakes(w, 4, "group", 8, "zero"))
    assert_equal(q, eq, name="uint4 codes", mistakes=zeropoint_mistakes(w, 4, "group", 8, "q"))


# ---- dequantize -------------------------------------------------------------------------------

@given(out=st.integers(1, 5), G=st.sampled_from([1, 2, 4]), gs=st.sampled_from([2, 8]),
       per_row=st.booleans(), asym=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_dequantize_uses_each_columns_group(impl, out, G, gs, per_row, asym, seed):
    g = torch.Generator().manual_seed(seed)
    R = out if per_row else 1
    scale = torch.rand(R, G, generator=g) + 0.1
    if asym:
        q = torch.randint(0, 256, (out, G * gs), generator=g, dtype=torch.uint8)
        zero = torch.randint(0, 256, (R, G), generator=g, dtype=torch.int32)
    else:
        q = torch.randint(-127, 128, (out, G * gs), generator=g, dtype=torch.int8)
        zero = None
    expected = torch.zeros(out, G * gs)
    for r in range(out):
        for j in range(G * gs):
            z = 0 if zero is None else int(zero[r % R, j // gs])
            expected[r, j] = (int(q[r, j]) - z) * scale[r % R, j // gs]
    wrong_groups = (q.float() - (0 if zero is None else zero.float().repeat_interleave(gs, 1))) \
        * scale.repeat(1, gs) if G > 1 else None
    assert_close(impl(MODULE).dequantize(q, scale, zero), expected, name=("dequantised weight", "反量化后的权重"),
                 mistakes={("groups interleaved (column j in group j % G) instead of consecutive",
                            "组是交错的（第 j 列属于组 j % G），而不是连续的"):
                           lambda: wrong_groups})


# ---- int4 packing -----------------------------------------------------------------------------

@pytest.mark.weight(2)
@given(shape=st.lists(st.integers(1, 5), min_size=0, max_size=2), half=st.integers(1, 9),
       seed=st.integers(0, 2**31 - 1))
def test_pack_int4_low_nibble_first_and_round_trips(impl, shape, half, seed):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 16, (*shape, 2 * half), generator=g, dtype=torch.uint8)
    expected = torch.zeros(*shape, half, dtype=torch.uint8)
    for i in range(half):
        expected[..., i] = codes[..., 2 * i] + 16 * codes[..., 2 * i + 1]
    swapped = codes[..., 1::2] | (codes[..., 0::2] << 4)
    m = impl(MODULE)
    packed = m.pack_int4(codes)
    assert_equal(packed, expected, name=("packed bytes", "打包后的字节"),
                 mistakes={("nibble order swapped: the first code went to the high nibble",
                            "4 位码字的顺序反了：第一个码字放进了高 4 位"): swapped})
    assert_equal(m.unpack_int4(expected), codes, name=("unpacked codes", "解包后的编码"),
                 mistakes={("nibble order swapped: the high nibble was read as the first code",
                            "4 位码字的顺序反了：把高 4 位读成了第一个码字"):
                           torch.stack((expected >> 4, expected & 0xF), -1).reshape(codes.shape)})


def test_pack_int4_rejects_odd_lengths_and_codes_above_15(impl):
    m = impl(MODULE)
    with pytest.raises(ValueError):
        m.pack_int4(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(ValueError):
        m.pack_int4(torch.tensor([3, 16], dtype=torch.uint8))


# ---- fp8 --------------------------------------------------------------------------------------

@pytest.mark.weight(2)
@given(fmt=st.sampled_from(["e4m3", "e5m2"]), dtype=st.sampled_from([torch.float32, torch.bfloat16]),
       rows=st.integers(1, 8), magnitude=st.sampled_from([1e-3, 1.0, 300.0]), seed=st.integers(0, 2**31 - 1))
def test_fp8_dynamic_scaling_matches_reference(impl, fmt, dtype, rows, magnitude, seed):
    g = torch.Generator().manual_seed(seed)
    x = randn(rows, 24, dtype=dtype, generator=g, scale=magnitude)
    x8, scale = impl(MODULE).fp8_quantize(x, fmt)
    e8, escale = reference_fp8(x, fmt)
    assert_close(scale, escale.reshape(()), name=("dynamic fp8 scale", "动态 fp8 scale"))
    assert_close(x8, e8, name=f"{fmt} values")


@pytest.mark.weight(3)
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_static_scale_saturates_out_of_range_values(impl, gen, fmt):
    """Delayed scaling: the scale came from an earlier, smaller amax; new values overflow."""
    fmax = FP8[fmt][1]
    x = randn(6, 32, generator=gen)
    x[0, :4] = torch.tensor([4.0, -4.0, 100.0, -1e4])  # 4x .. 10^4x the range
    scale = x[1:].abs().max() / fmax
    x8, got_scale = impl(MODULE).fp8_quantize(x, fmt, scale=scale)
    e8, _ = reference_fp8(x, fmt, scale)
    assert_close(got_scale, scale.reshape(()), name=("the static scale, returned unchanged", "静态 scale，原样返回"))
    assert_close(x8, e8, name=(f"{fmt} values with saturation", f"饱和处理后的 {fmt} 值"),
                 mistakes={NO_SATURATION: reference_fp8(x, fmt, scale, saturate=False)[0]})


def test_fp8_of_all_zeros_has_unit_scale(impl):
    x8, scale = impl(MODULE).fp8_quantize(torch.zeros(3, 5), "e4m3")
    assert_close(scale, torch.tensor(1.0), name=("scale of an all-zero tensor", "全零张量的 scale"))
    assert_close(x8, torch.zeros(3, 5, dtype=torch.float8_e4m3fn), name="fp8 zeros")


@pytest.mark.parametrize("call", [
    dict(fn="absmax_quantize", w=(4, 8), kwargs=dict(granularity="row")),
    dict(fn="absmax_quantize", w=(4, 12), kwargs=dict(granularity="group", group_size=8)),
    dict(fn="absmax_quantize", w=(4, 8), kwargs=dict(granularity="group", group_size=0)),
    dict(fn="absmax_quantize", w=(4, 8), kwargs=dict(bits=1)),
    dict(fn="absmax_quantize", w=(4, 8), kwargs=dict(bits=9)),
    dict(fn="zeropoint_quantize", w=(2, 4, 8), kwargs=dict()),
    dict(fn="zeropoint_quantize", w=(4, 8), kwargs=dict(granularity="block")),
    dict(fn="zeropoint_quantize", w=(4, 8), kwargs=dict(bits=1)),
    dict(fn="zeropoint_quantize", w=(4, 8), kwargs=dict(bits=9)),
], ids=["unknown-granularity", "group-not-dividing", "group-size-zero", "bits-one", "bits-nine", "3d-weight",
        "zp-unknown-granularity", "zp-bits-one", "zp-bits-nine"])
def test_invalid_arguments_raise_value_error(impl, call):
    with pytest.raises(ValueError):
        getattr(impl(MODULE), call["fn"])(torch.ones(*call["w"]), **call["kwargs"])
