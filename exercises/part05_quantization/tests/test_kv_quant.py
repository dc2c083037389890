"""Visible tests for part05_quantization.kv_quant: run `pytest exercises/part05_quantization -m kv_quant`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import torch

from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, assert_equal, check_tensor, expect, randn

MODULE = "part05_quantization.kv_quant"


def test_int8_per_token_hand_example(impl, golden):
    # token 0: amax 127 -> scale 1; -63.5 is a tie: half to even gives -64 (truncation would give -63)
    # token 1: amax 2.54 -> scale 0.02; 1.27 / 0.02 = 63.5 -> 64
    t = torch.tensor([[[[127.0, -63.5, 1.6, 0.0], [2.54, -1.27, 0.02, 0.0]]]])   # (B=1, H=1, T=2, D=4)
    q, scale = impl(MODULE).quantize_kv(t, "int8", "token")
    swapped = golden.ref.AXIS_SWAPPED  # read before the check, so the recording holds it
    shape = tuple(check_tensor(scale, dtype=torch.float32, name="scale").shape)
    if shape != (1, 1, 2, 1):  # one scale per (batch, head, token)
        raise Mismatch(tr("part05.kv_quant.scale_shape", axis="token", expected=(1, 1, 2, 1), got=shape),
                       swapped if shape == (1, 1, 1, 4) else None)
    assert_close(scale, torch.tensor([[[[1.0], [0.02]]]]), name=("per-token scales (B, H, T, 1)",
                                                                 "逐 token 的 scales (B, H, T, 1)"))
    expected, _ = golden.ref.reference_quantize_kv(t, "int8", "token")
    assert_equal(q, expected, name="int8 codes", mistakes=golden.ref.quantize_mistakes(t, "int8", "token", "q"))


def test_per_channel_scales_have_one_scale_per_channel_over_the_tokens(impl, golden):
    k = randn(1, 2, 6, 4, generator=golden.gen) * torch.tensor([1.0, 20.0, 0.1, 1.0])  # an outlier channel
    q, scale = impl(MODULE).quantize_kv(k, "int8", "channel")
    expected_q, expected_scale = golden.ref.reference_quantize_kv(k, "int8", "channel")
    assert_close(scale, expected_scale, name=("per-channel scales (B, H, 1, D)", "逐通道的 scales (B, H, 1, D)"))
    assert_equal(q, expected_q, name="int8 codes", mistakes=golden.ref.quantize_mistakes(k, "int8", "channel", "q"))


def test_e4m3_scale_maps_amax_to_448(impl, golden):
    t = randn(1, 1, 3, 8, generator=golden.gen, scale=5.0)
    q, scale = impl(MODULE).quantize_kv(t, "e4m3", "token")
    check_tensor(q, shape=tuple(t.shape), dtype=torch.float8_e4m3fn, name="e4m3 codes")
    assert_close(scale, t.abs().amax(-1, keepdim=True) / 448, name="e4m3 scales",
                 mistakes=golden.ref.quantize_mistakes(t, "e4m3", "token", "scale"))


def test_int8_round_trip_error_is_at_most_half_a_step(impl, gen):
    t = randn(2, 2, 8, 16, generator=gen, scale=3.0)
    m = impl(MODULE)
    q, scale = m.quantize_kv(t, "int8", "token")
    err = (m.dequantize_kv(q, scale) - t).abs()
    bound = scale * (0.5 + 254 * 2.0 ** -24)  # half a step, plus fp32's rounding of t / scale and q * scale
    expect(bool((err <= bound).all()), "part05.kv_quant.above_bound", fmt="int8", count=int((err > bound).sum()),
           err=f"{float(err.max()):.3g}", bound=f"{float(bound.min()):.3g}")


def test_attention_runs_over_the_dequantised_cache(impl, golden):
    q, k, v = (randn(1, 2, 2, 8, generator=golden.gen) for _ in range(3))
    k = torch.cat([k, randn(1, 2, 4, 8, generator=golden.gen)], dim=2) * torch.tensor([1.0] * 7 + [15.0])
    v = torch.cat([v, randn(1, 2, 4, 8, generator=golden.gen)], dim=2)
    for fmt in ("int8", "e4m3"):
        k_hat, v_hat = golden.ref.quantized_attention(q, k, v, fmt, "channel", "token")
        assert_close(impl(MODULE).attention_with_quantized_kv(q, k, v, fmt),
                     golden.ref.reference_attention(q, k_hat, v_hat).float(), name=(f"attention over the {fmt} cache",
                                                                                    f"在 {fmt} cache 上的注意力"),
                     mistakes=golden.ref.attention_mistakes(q, k, v, fmt, "channel", "token"))
