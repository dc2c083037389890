"""Visible tests for part05_quantization.quant_basics: run `pytest exercises/part05_quantization -m quant_basics`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import pytest
import torch

from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, assert_equal, check_tensor, expect, randn

MODULE = "part05_quantization.quant_basics"


def test_absmax_int8_per_channel_hand_example(impl, golden):
    w = torch.tensor([[127.0, -62.5, 1.0], [0.5, -2.0, 1.0]])
    q, scale = impl(MODULE).absmax_quantize(w, bits=8, granularity="channel")
    wrong_axis = golden.ref.SCALES_ON_INPUT_AXIS
    shape = tuple(check_tensor(scale, dtype=torch.float32, name="scale").shape)
    if shape != (2, 1):  # one scale per output row
        raise Mismatch(tr("part05.quant_basics.channel_scale_shape", got=shape),
                       wrong_axis if shape in ((1, 3), (3, 1), (3,)) else None)
    assert_close(scale, torch.tensor([[1.0], [2.0 / 127]]), name=("per-channel scales (out, 1)",
                                                                  "逐通道的 scales (out, 1)"),
                 mistakes=golden.ref.scale_mistakes(w, 8, "channel", 0))
    # row 0: -62.5 is a tie: round half to even gives -62 (half away from zero would give -63)
    assert_equal(q, torch.tensor([[127, -62, 1], [32, -127, 64]], dtype=torch.int8), name="int8 codes",
                 mistakes=golden.ref.absmax_mistakes(w, 8, "channel", 0))


def test_absmax_round_trip_error_is_at_most_half_a_step(impl, gen):
    w = randn(16, 64, generator=gen)
    m = impl(MODULE)
    q, scale = m.absmax_quantize(w, bits=8, granularity="group", group_size=16)
    expect(tuple(scale.shape) == (16, 4), "part05.quant_basics.group_scale_shape", got=tuple(scale.shape))
    err = (m.dequantize(q, scale) - w).abs().reshape(16, 4, 16)
    above = err > scale[..., None] / 2 + 1e-6
    expect(bool((err <= scale[..., None] / 2 + 1e-6).all()), "part05.quant_basics.above_half_step",
           count=int(above.sum()), total=err.numel(), err=float(err.max()), low=float(scale.min()) / 2,
           high=float(scale.max()) / 2)


def test_zeropoint_uint4_hand_example(impl):
    w = torch.tensor([[-1.0, 0.0, 0.625, 2.75]])  # scale = 3.75/15 = 0.25, zero = -round(-4) = 4
    q, scale, zero = impl(MODULE).zeropoint_quantize(w, bits=4, granularity="tensor")
    assert_close(scale, torch.tensor([[0.25]]), name="scale")
    assert_equal(zero, torch.tensor([[4]], dtype=torch.int32), name=("zero point", "零点"))
    # 0.625 / 0.25 = 2.5 is a tie: half to even gives 2, code 2 + 4 = 6
    assert_equal(q, torch.tensor([[0, 4, 6, 15]], dtype=torch.uint8), name="uint4 codes")


def test_zeropoint_of_an_all_positive_group_is_clamped_to_zero(impl, golden):
    """min > 0 makes -round(min / scale) negative: the zero point is stored unsigned, so it clamps to 0."""
    w = randn(2, 8, generator=golden.gen, scale=0.1).abs() + 0.5
    q, scale, zero = impl(MODULE).zeropoint_quantize(w, bits=4, granularity="channel")
    eq, escale, ezero = golden.ref.reference_zeropoint(w, 4, "channel")
    assert_equal(zero, ezero, name=("zero points",
                                    "零点"), mistakes=golden.ref.zeropoint_mistakes(w, 4, "channel", 0, "zero"))
    assert_equal(q, eq, name="uint4 codes", mistakes=golden.ref.zeropoint_mistakes(w, 4, "channel", 0, "q"))


def test_pack_int4_puts_the_first_code_in_the_low_nibble(impl):
    codes = torch.tensor([1, 2, 15, 0], dtype=torch.uint8)
    packed = impl(MODULE).pack_int4(codes)
    assert_equal(packed, torch.tensor([0x21, 0x0F], dtype=torch.uint8), name=("packed bytes", "打包后的字节"),
                 mistakes={("nibble order swapped: the first code went to the high nibble", "4 位码字的顺序反了：第一个码字放进了高 4 位"):
                           torch.tensor([0x12, 0xF0], dtype=torch.uint8)})
    assert_equal(impl(MODULE).unpack_int4(packed), codes, name=("unpacked codes", "解包后的编码"))


def test_fp8_dynamic_scale_maps_amax_to_the_format_maximum(impl, gen):
    x = randn(8, 32, generator=gen, scale=3.0)
    x8, scale = impl(MODULE).fp8_quantize(x, "e4m3")
    expect(x8.dtype == torch.float8_e4m3fn, "part05.quant_basics.fp8_dtype", got=x8.dtype)
    assert_close(scale, x.abs().max() / 448, name=("dynamic scale", "动态 scale"))
    # 3 mantissa bits: half a step is 2^-4 relative; near zero e4m3's subnormal step 2^-9 (times the scale) rules
    assert_close(x8.float() * scale, x, rtol=2 ** -4, atol=float(scale) * 2 ** -10, name="dequantised fp8")


def test_fp8_unknown_format_raises_value_error(impl):
    with pytest.raises(ValueError):
        impl(MODULE).fp8_quantize(torch.ones(3), "e3m4")


def test_fp8_static_scale_saturates_values_beyond_the_format_maximum(impl, golden):
    """A scale from an earlier, smaller amax: e5m2 values past 57344 clamp to +-57344 instead of becoming inf."""
    x = randn(4, 16, generator=golden.gen)
    x[0, :2] = torch.tensor([100.0, -1e4])
    scale = x[1:].abs().max() / 57344
    x8, _ = impl(MODULE).fp8_quantize(x, "e5m2", scale=scale)
    expected, _ = golden.ref.reference_fp8(x, "e5m2", scale)
    assert_close(x8, expected, name=("e5m2 values with saturation", "饱和处理后的 e5m2 值"),
                 mistakes={golden.ref.NO_SATURATION: golden.ref.reference_fp8(x, "e5m2", scale, saturate=False)[0]})
