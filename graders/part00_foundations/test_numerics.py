"""Hidden tests for part00_foundations.numerics."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.i18n import localized, tr
from infralab.testing import Mismatch, Name, assert_close, assert_equal, check_tensor, expect

MODULE = "part00_foundations.numerics"
FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
FP8_LAYOUT = {"e4m3": (4, 3, True), "e5m2": (5, 2, False)}


# ---- bf16 from fp32 bits -------------------------------------------------------------------------

def as_int32(unsigned: torch.Tensor) -> torch.Tensor:
    """int64 values in [0, 2**32) -> the int32 tensor with those bit patterns."""
    return torch.where(unsigned >= 2**31, unsigned - 2**32, unsigned).to(torch.int32)


def torch_bf16_bits(bits: torch.Tensor) -> torch.Tensor:
    return bits.view(torch.float32).to(torch.bfloat16).view(torch.int16).to(torch.int32) & 0xFFFF


def bf16_mistakes(bits: torch.Tensor) -> dict:
    u = bits.to(torch.int64) & 0xFFFFFFFF
    return {
        ("truncation (the lower 16 bits dropped) instead of round-to-nearest-even",
         "截断（直接丢弃低 16 位），而不是就近舍入到偶数"): (u >> 16).to(torch.int32),
        ("ties rounded up (away from zero: add 0x8000) instead of to even",
         "中点值向上舍入（远离零：加 0x8000），而不是舍入到偶数"): ((u + 0x8000) >> 16).to(torch.int32),
        ("ties rounded down (add 0x7FFF, no even correction)",
         "中点值向下舍入（加 0x7FFF，没有偶数修正）"): ((u + 0x7FFF) >> 16).to(torch.int32),
    }


def assert_bf16_bits(got, bits: torch.Tensor, name: Name = "bf16 bits") -> None:
    """Non-NaN inputs: exactly torch's pattern. NaN inputs: a quiet NaN pattern, never inf."""
    name = localized(name)
    expected = torch_bf16_bits(bits)
    nan = torch.isnan(bits.view(torch.float32))
    if not bool(nan.any()):
        assert_equal(got, expected, name=name, mistakes=bf16_mistakes(bits))
        return
    check_tensor(got, shape=tuple(bits.shape), dtype=torch.int32, name=name)
    keep = ~nan
    assert_equal(got[keep], expected[keep], name=(f"{name} (non-NaN inputs)", f"{name}（非 NaN 输入）"),
                 mistakes={k: v[keep] for k, v in bf16_mistakes(bits).items()})
    g = got[nan]
    quiet = ((g >> 7) & 0xFF == 0xFF) & (g & 0x40 != 0) & (g >= 0) & (g <= 0xFFFF)
    if not bool(quiet.all()):
        bad = g[~quiet]
        inf = bool(((bad & 0x7FFF) == 0x7F80).any())
        raise Mismatch(tr("part00.fp8_nan_not_quiet", name=name, count=int((~quiet).sum()),
                          examples=[hex(v) for v in bad[:4].tolist()]),
                       ("NaN rounded like a number: the carry turned it into infinity",
                        "把 NaN 当作普通数舍入：进位把它变成了无穷大") if inf else None)


@pytest.mark.weight(3)
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=64))
def test_bf16_bits_equal_torch_cast_on_arbitrary_fp32_patterns(impl, values):
    bits = torch.tensor(values, dtype=torch.int32)
    assert_bf16_bits(impl(MODULE).bf16_bits(bits), bits)


@pytest.mark.weight(3)
def test_bf16_bits_equal_torch_cast_at_every_rounding_boundary(impl):
    """Every upper half (all 65536: normals, subnormals, zeros, inf, NaN of both signs) with the
    lower halves at and around the rounding boundary and the tie."""
    upper = torch.arange(65536, dtype=torch.int64)
    lower = torch.tensor([0, 1, 0x4000, 0x7FFF, 0x8000, 0x8001, 0xC000, 0xFFFF], dtype=torch.int64)
    bits = as_int32((upper[:, None] << 16 | lower[None, :]).flatten())
    assert_bf16_bits(impl(MODULE).bf16_bits(bits), bits, name=("bf16 bits over all classes", "各类值的 bf16 位"))


def test_bf16_bits_of_subnormals_round_like_normals(impl):
    bits = as_int32(torch.tensor([0x00000001, 0x00008000, 0x00018000, 0x00008001, 0x007FFFFF, 0x807FFFFF,
                                  0x80008000, 0x007F8000, 0x007F7FFF]))
    assert_bf16_bits(impl(MODULE).bf16_bits(bits), bits, name=("bf16 bits of subnormals", "次正规数的 bf16 位"))


def test_bf16_bits_of_every_nan_class_are_quiet_nans(impl):
    bits = as_int32(torch.tensor([0x7F800001, 0x7F807FFF, 0x7F808000, 0x7FBFFFFF, 0x7FC00000, 0x7FFFFFFF,
                                  0xFF800001, 0xFFFF8000, 0xFFFFFFFF, 0x7FFF8000]))
    assert_bf16_bits(impl(MODULE).bf16_bits(bits), bits, name=("bf16 bits of NaNs", "NaN 的 bf16 位"))


def test_bf16_bits_leave_the_input_untouched(impl):
    bits = as_int32(torch.tensor([0x3F808000, 0x7F7FFFFF, 0x7F800001]))
    before = bits.clone()
    impl(MODULE).bf16_bits(bits)
    expect(torch.equal(bits, before), "check.modified_input", name="bf16_bits")


# ---- format ranges -------------------------------------------------------------------------------

def decode_every_pattern(e_bits: int, m_bits: int, finite_only: bool) -> dict[str, float]:
    """Independent reference: decode all positive patterns of the format and read the range off them."""
    bias = 2 ** (e_bits - 1) - 1
    finite = []
    for exponent in range(2 ** e_bits):
        for mantissa in range(2 ** m_bits):
            top = exponent == 2 ** e_bits - 1
            if top and (not finite_only or mantissa == 2 ** m_bits - 1):
                continue                                   # inf / NaN
            if exponent == 0:
                finite.append(mantissa / 2 ** m_bits * 2.0 ** (1 - bias))
            else:
                finite.append((1 + mantissa / 2 ** m_bits) * 2.0 ** (exponent - bias))
    finite.sort()
    one = finite.index(1.0)
    normals = [v for v in finite if v >= 2.0 ** (1 - bias)]
    return {"max": finite[-1], "min_normal": normals[0], "min_subnormal": finite[1], "eps": finite[one + 1] - 1.0}


def range_mistakes(e_bits: int, m_bits: int, finite_only: bool, right: dict) -> dict:
    bias = 2 ** (e_bits - 1) - 1
    out = {("no subnormals: smallest subnormal taken as the smallest normal", "没有考虑次正规数：把最小正规数当成了最小次正规数"):
           {**right, "min_subnormal": right["min_normal"]},
           ("eps taken as half the gap (2**-(M+1), the unit roundoff)",
            "eps 取成了间隔的一半（2**-(M+1)，即单位舍入误差）"): {**right, "eps": 2.0 ** -(m_bits + 1)}}
    if finite_only:
        out[("finite-only format treated as IEEE (top exponent reserved): e4m3 max 240 instead of 448",
             "把仅有限值的格式当成 IEEE 格式（保留最高指数）：e4m3 最大值 240 而不是 448")] = {
            **right, "max": (2.0 - 2.0 ** -m_bits) * 2.0 ** bias}
        out[("finite-only max with the all-ones mantissa (that pattern is NaN): e4m3 max 480",
             "仅有限值格式的最大值用了全 1 尾数（这个编码是 NaN）：e4m3 最大值 480")] = {
            **right, "max": (2.0 - 2.0 ** -m_bits) * 2.0 ** (bias + 1)}
    return out


@pytest.mark.weight(2)
@pytest.mark.parametrize("layout,dtype,min_subnormal", [
    ((8, 23, False), torch.float32, 2.0 ** -149), ((5, 10, False), torch.float16, 2.0 ** -24),
    ((8, 7, False), torch.bfloat16, 2.0 ** -133), ((5, 2, False), torch.float8_e5m2, 2.0 ** -16),
    ((4, 3, True), torch.float8_e4m3fn, 2.0 ** -9)], ids=["fp32", "fp16", "bf16", "e5m2", "e4m3fn"])
def test_format_range_of_torch_formats(impl, layout, dtype, min_subnormal):
    info = torch.finfo(dtype)
    expected = {"max": info.max, "min_normal": info.tiny, "min_subnormal": min_subnormal, "eps": info.eps}
    assert_equal(impl(MODULE).format_range(*layout), expected, name=(f"range of {dtype}", f"{dtype} 的取值范围"),
                 mistakes=range_mistakes(*layout, expected))


@pytest.mark.weight(2)
@given(e_bits=st.integers(2, 6), m_bits=st.integers(1, 6), finite_only=st.booleans())
def test_format_range_equals_decoding_every_pattern(impl, e_bits, m_bits, finite_only):
    expected = decode_every_pattern(e_bits, m_bits, finite_only)
    assert_equal(impl(MODULE).format_range(e_bits, m_bits, finite_only), expected,
                 name=(f"range of e{e_bits}m{m_bits}{'fn' if finite_only else ''}",
                       f"e{e_bits}m{m_bits}{'fn' if finite_only else ''} 的取值范围"),
                 mistakes=range_mistakes(e_bits, m_bits, finite_only, expected))


@pytest.mark.parametrize("layout", [(1, 3), (0, 2), (4, 0)])
def test_format_range_rejects_degenerate_layouts(impl, layout):
    with pytest.raises(ValueError):
        impl(MODULE).format_range(*layout)


# ---- fp8 rounding --------------------------------------------------------------------------------

def torch_fp8(x: torch.Tensor, fmt: str) -> torch.Tensor:
    fmax = torch.finfo(FP8[fmt]).max
    return x.clamp(-fmax, fmax).to(FP8[fmt]).float()


def torch_fp8_unsaturated(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """A cast without saturation, as torch < 2.13 (e4m3: NaN) and every version (e5m2: inf) give it."""
    fmax = torch.finfo(FP8[fmt]).max
    overflow = torch.tensor(float("nan") if fmt == "e4m3" else float("inf"))
    return torch.where(x.abs() > fmax, torch.copysign(overflow, x), torch_fp8(x, fmt))


def fp8_mistakes(x: torch.Tensor, fmt: str) -> dict:
    dtype, fmax = FP8[fmt], torch.finfo(FP8[fmt]).max
    unsaturated = torch_fp8_unsaturated(x, fmt)
    grid = torch.arange(128, dtype=torch.uint8).view(dtype).float()       # the non-negative patterns
    grid = grid[torch.isfinite(grid)].unique()
    a = x.abs().clamp(max=fmax)
    below = (torch.bucketize(a, grid, right=True) - 1).clamp(0, len(grid) - 2)
    lo, hi = grid[below], grid[below + 1]
    away = torch.copysign(torch.where(a - lo >= hi - a, hi, lo), x)
    truncated = torch.copysign(torch.where(a >= hi, hi, lo), x)
    out = {}
    if fmt == "e4m3":
        out[("e4m3 treated as an IEEE format: saturated at 240 instead of 448",
             "把 e4m3 当成 IEEE 格式：饱和到 240 而不是 448")] = torch_fp8(x.clamp(-240, 240), fmt)
    out.update({("overflow not saturated (a plain cast gives NaN for e4m3, inf for e5m2)",
                 "溢出没有饱和（直接转换时 e4m3 得到 NaN，e5m2 得到 inf）"): unsaturated,
                ("ties rounded away from zero instead of to even",
                 "中点值远离零舍入，而不是舍入到偶数"): torch.where(x.isnan(), x, away),
                ("truncation instead of round-to-nearest-even",
                 "截断，而不是就近舍入到偶数"): torch.where(x.isnan(), x, truncated)})
    return out


def every_fp8_boundary(fmt: str) -> torch.Tensor:
    """Every finite value, every midpoint between neighbours (the ties), the floats just either side of
    each midpoint, beyond max, inf, tiny values, zeros, NaN."""
    dtype = FP8[fmt]
    grid = torch.arange(256, dtype=torch.uint8).view(dtype).float()
    grid = grid[torch.isfinite(grid)].unique()
    mids = (grid[1:] + grid[:-1]) / 2
    fmax = float(grid.max())
    extra = torch.tensor([fmax * 1.01, fmax * 1.2, fmax * 1000, 1e30, float("inf"), 1e-30, 0.0, -0.0])
    return torch.cat([grid, mids, torch.nextafter(mids, mids + 1), torch.nextafter(mids, mids - 1), extra, -extra])


@pytest.mark.weight(3)
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_round_equals_torch_cast_at_every_boundary(impl, fmt):
    x = every_fp8_boundary(fmt)
    assert_close(impl(MODULE).fp8_round(x, fmt), torch_fp8(x, fmt), rtol=0, atol=0,  # exact: both lie on the grid
                 name=(f"{fmt} rounding of every value, tie and neighbour",
                       f"{fmt} 对每个值、中点及其相邻值的舍入"), mistakes=fp8_mistakes(x, fmt))


@pytest.mark.weight(2)
@given(fmt=st.sampled_from(["e4m3", "e5m2"]),
       values=st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=64))
def test_fp8_round_equals_torch_cast_on_arbitrary_floats(impl, fmt, values):
    x = torch.tensor(values, dtype=torch.float32)
    assert_close(impl(MODULE).fp8_round(x, fmt), torch_fp8(x, fmt), rtol=0, atol=0,  # exact: both lie on the grid
                 name=f"{fmt} rounding", mistakes=fp8_mistakes(x, fmt))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_round_keeps_nan_a_nan(impl, fmt):
    got = impl(MODULE).fp8_round(torch.tensor([float("nan"), 1.0, -float("nan")]), fmt)
    expect(isinstance(got, torch.Tensor) and got.shape == (3,) and bool(torch.isnan(got[[0, 2]]).all()),
           "part00.fp8_nan_stays_nan", fmt=fmt, got=got)


def test_fp8_round_rejects_unknown_formats(impl):
    with pytest.raises(ValueError):
        impl(MODULE).fp8_round(torch.ones(2), "e3m4")


# ---- scaled round trip ---------------------------------------------------------------------------

@pytest.mark.weight(2)
@given(fmt=st.sampled_from(["e4m3", "e5m2"]), log_scale=st.integers(-12, 12), seed=st.integers(0, 2**31 - 1))
def test_fp8_scaled_round_with_current_scaling(impl, fmt, log_scale, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(300, generator=g) * 2.0 ** log_scale
    fmax = torch.finfo(FP8[fmt]).max
    deq, scale = impl(MODULE).fp8_scaled_round(x, fmt)
    expected_scale = float(x.abs().max()) / fmax
    expect(isinstance(scale, float) and scale == pytest.approx(expected_scale, rel=1e-6), "part00.fp8_scale",
           fmt=fmt, expected=expected_scale, got=repr(scale))
    expected = torch_fp8(x / expected_scale, fmt) * expected_scale
    assert_close(deq, expected, name=(f"{fmt} scaled round trip", f"{fmt} 带缩放的往返转换"),
                 mistakes={("scale inverted (x * scale instead of x / scale)",
                            "scale 用反了（x * scale 而不是 x / scale）"): torch_fp8(x * expected_scale, fmt)
                           / expected_scale,
                           ("no scaling (rounded as is)", "没有缩放（直接舍入）"): torch_fp8(x, fmt)})


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_scaled_round_with_a_stale_scale_saturates(impl, gen, fmt):
    x = torch.randn(200, generator=gen) * 10
    scale = float(x.abs().max()) / torch.finfo(FP8[fmt]).max / 4   # last step's amax was 4x smaller
    deq, used = impl(MODULE).fp8_scaled_round(x, fmt, scale=scale)
    expect(used == scale, "part00.fp8_given_scale", scale=repr(scale), got=repr(used))
    assert_close(deq, torch_fp8(x / scale, fmt) * scale, name=(f"{fmt} round trip with a stale scale",
                                                               f"{fmt} 使用过期缩放因子的往返转换"),
                 mistakes={("overflow not saturated (NaN for e4m3, inf for e5m2)",
                            "溢出没有饱和（e4m3 得到 NaN，e5m2 得到 inf）"):
                           torch_fp8_unsaturated(x / scale, fmt) * scale})


def test_fp8_scaled_round_of_zeros_uses_scale_one(impl):
    deq, scale = impl(MODULE).fp8_scaled_round(torch.zeros(5), "e4m3")
    expect(scale == 1.0, "part00.fp8_zero_scale", got=repr(scale))
    assert_close(deq, torch.zeros(5), name=("round trip of zeros", "全零的往返转换"))


@pytest.mark.parametrize("kwargs", [dict(fmt="int8"), dict(scale=0.0), dict(scale=-1.0)],
                         ids=["unknown-format", "zero-scale", "negative-scale"])
def test_fp8_scaled_round_rejects_bad_arguments(impl, kwargs):
    with pytest.raises(ValueError):
        impl(MODULE).fp8_scaled_round(torch.ones(3), **kwargs)
