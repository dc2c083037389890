"""Visible tests for part00_foundations.numerics: run `pytest exercises/part00_foundations -m numerics`."""
import pytest
import torch

from infralab.testing import assert_close, assert_equal, expect

MODULE = "part00_foundations.numerics"


def patterns(*values: int) -> torch.Tensor:
    """fp32 bit patterns written as unsigned hex, as an int32 tensor."""
    return torch.tensor([v - 2**32 if v >= 2**31 else v for v in values], dtype=torch.int64).to(torch.int32)


def torch_bf16_bits(bits: torch.Tensor) -> torch.Tensor:
    return bits.view(torch.float32).to(torch.bfloat16).view(torch.int16).to(torch.int32) & 0xFFFF


def test_bf16_bits_of_exactly_representable_values_are_the_upper_half(impl):
    bits = torch.tensor([1.0, -2.0, 0.5, 0.0, -0.0, 3.0]).view(torch.int32)
    assert_equal(impl(MODULE).bf16_bits(bits), torch.tensor([0x3F80, 0xC000, 0x3F00, 0, 0x8000, 0x4040],
                                                             dtype=torch.int32), name="bf16 bits")


def test_bf16_bits_round_ties_to_even(impl):
    # 0x3F80_8000 lies exactly between 0x3F80 and 0x3F81: the even one (0x3F80) wins;
    # 0x3F81_8000 lies between 0x3F81 and 0x3F82: again the even one (0x3F82)
    got = impl(MODULE).bf16_bits(patterns(0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF))
    assert_equal(got, torch.tensor([0x3F80, 0x3F82, 0x3F81, 0x3F80], dtype=torch.int32), name=("bf16 bits at ties",
                                                                                               "恰在中点（tie）处的 bf16 位"),
                 mistakes={("ties rounded up (away from zero) instead of to even", "中点值向上舍入（远离零），而不是舍入到偶数"):
                           torch.tensor([0x3F81, 0x3F82, 0x3F81, 0x3F80], dtype=torch.int32),
                           ("truncation (round toward zero) instead of round-to-nearest-even",
                            "截断（向零舍入），而不是就近舍入到偶数"):
                           torch.tensor([0x3F80, 0x3F81, 0x3F80, 0x3F80], dtype=torch.int32)})


def test_bf16_bits_round_the_largest_finite_floats_to_infinity(impl):
    got = impl(MODULE).bf16_bits(patterns(0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000))
    assert_equal(got, torch.tensor([0x7F80, 0xFF80, 0x7F80], dtype=torch.int32), name=("bf16 bits of huge values",
                                                                                       "极大值的 bf16 位"))


def test_bf16_bits_keep_nan_a_nan(impl):
    got = impl(MODULE).bf16_bits(patterns(0x7F800001, 0x7FC00000, 0xFFFFFFFF))
    exponent, mantissa = (got >> 7) & 0xFF, got & 0x7F
    expect(bool((exponent == 0xFF).all() and (mantissa & 0x40 != 0).all()), "part00.bf16_nan_quiet",
           got=[hex(v) for v in got.tolist()])


def test_bf16_bits_match_torch_cast_on_random_values(impl, gen):
    x = torch.randn(4096, generator=gen) * torch.exp2(torch.randint(-130, 128, (4096,), generator=gen).float())
    bits = x.view(torch.int32)
    assert_equal(impl(MODULE).bf16_bits(bits), torch_bf16_bits(bits), name=("bf16 bits of random fp32 values",
                                                                            "随机 fp32 值的 bf16 位"))


@pytest.mark.parametrize("layout,dtype", [((8, 23, False), torch.float32), ((5, 10, False), torch.float16),
                                          ((8, 7, False), torch.bfloat16), ((5, 2, False), torch.float8_e5m2),
                                          ((4, 3, True), torch.float8_e4m3fn)],
                         ids=["fp32", "fp16", "bf16", "e5m2", "e4m3fn"])
def test_format_range_matches_torch_finfo(impl, layout, dtype):
    got = impl(MODULE).format_range(*layout)
    info = torch.finfo(dtype)
    assert_equal({k: got[k] for k in ("max", "min_normal", "eps")},
                 {"max": info.max, "min_normal": info.tiny, "eps": info.eps}, name=(f"range of {dtype}",
                                                                                    f"{dtype} 的取值范围"),
                 mistakes={("e4m3fn treated as IEEE (top exponent reserved): max 240 instead of 448",
                            "把 e4m3fn 当成 IEEE 格式（保留最高指数）：最大值 240 而不是 448"):
                           {"max": 240.0, "min_normal": info.tiny, "eps": info.eps}})
    assert_equal(got["min_subnormal"], info.tiny * info.eps, name=(f"smallest subnormal of {dtype}",
                                                                   f"{dtype} 的最小次正规数"))


@pytest.mark.parametrize("fmt,dtype", [("e4m3", torch.float8_e4m3fn), ("e5m2", torch.float8_e5m2)])
def test_fp8_round_matches_torch_cast_of_in_range_values(impl, gen, fmt, dtype):
    x = torch.randn(2048, generator=gen) * torch.exp2(torch.randint(-18, 16, (2048,), generator=gen).float())
    fmax = torch.finfo(dtype).max
    x = x.clamp(-fmax, fmax)
    assert_close(impl(MODULE).fp8_round(x, fmt), x.to(dtype).float(), rtol=0, atol=0,  # exact: same grid
                 name=f"{fmt} rounding")


def test_fp8_round_saturates_instead_of_overflowing(impl):
    x = torch.tensor([1000.0, -500.0, float("inf"), 1e6, -float("inf")])
    nan, inf = float("nan"), float("inf")
    assert_close(impl(MODULE).fp8_round(x, "e5m2"), torch.tensor([1024.0, -512.0, 57344.0, 57344.0, -57344.0]),
                 rtol=0, atol=0, name="e5m2 saturation",
                 mistakes={("overflow not saturated: a plain cast gives inf for e5m2", "溢出没有饱和：直接转换时 e5m2 得到 inf"):
                           torch.tensor([1024.0, -512.0, inf, inf, -inf])})
    assert_close(impl(MODULE).fp8_round(x, "e4m3"), torch.tensor([448.0, -448.0, 448.0, 448.0, -448.0]),
                 rtol=0, atol=0, name="e4m3 saturation",
                 mistakes={("overflow not saturated: a plain cast gives NaN for e4m3 (before torch 2.13)",
                            "溢出没有饱和：直接转换时 e4m3 得到 NaN（torch 2.13 之前）"):
                           torch.tensor([nan, nan, nan, nan, nan]),
                           ("e4m3fn treated as IEEE: saturated at 240 instead of 448",
                            "把 e4m3fn 当成 IEEE 格式：饱和到 240 而不是 448"):
                           torch.tensor([240.0, -240.0, 240.0, 240.0, -240.0])})


def test_fp8_scaled_round_maps_the_largest_magnitude_onto_the_format_max(impl, gen):
    x = torch.randn(256, generator=gen) * 1e-3
    deq, scale = impl(MODULE).fp8_scaled_round(x, "e4m3")
    expected_scale = float(x.abs().max()) / 448.0
    expect(scale == pytest.approx(expected_scale, rel=1e-6), "part00.fp8_scale", fmt="e4m3", expected=expected_scale,
           got=repr(scale))
    expected = (x / scale).to(torch.float8_e4m3fn).float() * scale
    assert_close(deq, expected, name=("fp8 round trip", "fp8 往返转换"))
