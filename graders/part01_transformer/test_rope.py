"""Hidden tests for part01_transformer.rope.

References here are written per pair in float64 Python math (inverse frequencies) and with
complex numbers (rotation), independently of the solution's tensor code.
"""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, expect, randn

MODULE = "part01_transformer.rope"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


# ---- inverse frequencies: float64 references, one pair at a time ---------------------------------

def plain_theta(i, d, base):
    return base ** (-2.0 * i / d)


def reference_inv_freq(d, base, scaling=None, seq_len=None):
    """(inv_freq float32 (d/2,), attention_scaling) for every scaling type, in float64 math."""
    s = scaling or {"type": "default"}
    kind, n = s["type"], d // 2
    thetas = [plain_theta(i, d, base) for i in range(n)]
    scaling_out = 1.0
    if kind == "linear":
        thetas = [t / s["factor"] for t in thetas]
    elif kind == "ntk":
        new_base = base * s["factor"] ** (d / (d - 2))
        thetas = [plain_theta(i, d, new_base) for i in range(n)]
    elif kind == "dynamic":
        context = s["original_max_position_embeddings"]
        length = max(seq_len if seq_len is not None else context, context)
        new_base = base * (s["factor"] * length / context - s["factor"] + 1) ** (d / (d - 2))
        thetas = [plain_theta(i, d, new_base) for i in range(n)]
    elif kind == "yarn":
        thetas, scaling_out = yarn_reference(thetas, d, base, s)
    elif kind == "llama3":
        thetas = [llama3_theta(t, s) for t in thetas]
    return torch.tensor(thetas, dtype=torch.float64).float(), scaling_out


def yarn_bounds(d, base, s):
    """YaRN's ramp bounds (low, high) before the clamps (truncated unless truncate=False)."""
    context = s["original_max_position_embeddings"]

    def pair_index_for(rotations):  # the pair whose wavelength makes `rotations` turns in `context`
        return d * math.log(context / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_index_for(s.get("beta_fast", 32)), pair_index_for(s.get("beta_slow", 1))
    if s.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    return low, high


def yarn_reference(thetas, d, base, s):
    factor = s["factor"]
    low, high = yarn_bounds(d, base, s)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    out = []
    for i, t in enumerate(thetas):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)  # 0: keep theta, 1: theta / factor
        out.append(t * (1 - ramp) + t / factor * ramp)

    def m(scale, c):
        return 1.0 if scale <= 1 else 0.1 * c * math.log(scale) + 1.0

    if s.get("attention_factor") is not None:
        scaling = s["attention_factor"]
    elif s.get("mscale") and s.get("mscale_all_dim"):
        scaling = m(factor, s["mscale"]) / m(factor, s["mscale_all_dim"])
    else:
        scaling = m(factor, 1.0)
    return out, scaling


def llama3_theta(t, s):
    factor, a, b, context = s["factor"], s["low_freq_factor"], s["high_freq_factor"], s["original_max_position_embeddings"]
    wavelength = 2 * math.pi / t
    if wavelength > context / a:
        return t / factor  # low frequency: interpolated
    if wavelength < context / b:
        return t  # high frequency: unchanged
    smooth = (context / wavelength - a) / (b - a)
    return (1 - smooth) * t / factor + smooth * t


def inv_freq_mistakes(d, base, scaling, seq_len=None):
    s = scaling or {"type": "default"}
    out = {
        ("exponent i/D instead of 2i/D (theta_i = base^(-i/D))", "指数用了 i/D 而不是 2i/D（theta_i = base^(-i/D)）"):
            lambda: torch.tensor([base ** (-i / d) for i in range(d // 2)]).float(),
        ("the scaling was ignored (plain base^(-2i/D))",
         "忽略了缩放（直接用 base^(-2i/D)）"): lambda: reference_inv_freq(d, base)[0],
    }
    if "factor" in s:
        out[("linear scaling multiplied the frequencies (positions multiplied by factor, not divided)",
             "linear 缩放把频率乘上了 factor（位置被乘以 factor，而不是除以）")] = \
            lambda: reference_inv_freq(d, base)[0] * s["factor"]
    if s["type"] == "llama3":
        swapped = dict(s, low_freq_factor=s["high_freq_factor"], high_freq_factor=s["low_freq_factor"])
        out[("low_freq_factor and high_freq_factor swapped",
             "low_freq_factor 与 high_freq_factor 用反了")] = lambda: reference_inv_freq(d, base, swapped)[0]
    if s["type"] == "yarn":
        out[("YaRN ramp reversed (fast pairs interpolated, slow pairs kept)", "YaRN 的斜坡反了（快速配对被插值，慢速配对被保留）")] = \
            lambda: reference_inv_freq(d, base, dict(s, beta_fast=s.get("beta_slow", 1), beta_slow=s.get("beta_fast", 32)))[0]
        low, high = yarn_bounds(d, base, s)
        out[(f"YaRN's lower bound not clamped at 0 (low = {low}, use max(low, 0))",
             f"YaRN 的下界没有截到 0（low = {low}，应取 max(low, 0)）")] = \
            lambda: yarn_with_bounds(d, base, s, low, max(min(high, d - 1), low + 0.001))
        out[(f"YaRN's upper bound not clamped at D - 1 (high = {high}, use min(high, D - 1))",
             f"YaRN 的上界没有截到 D - 1（high = {high}，应取 min(high, D - 1)）")] = \
            lambda: yarn_with_bounds(d, base, s, max(low, 0), high)
    return out


def yarn_with_bounds(d, base, s, low, high):
    """YaRN's inverse frequencies with the ramp between the given bounds (for the mistakes)."""
    theta = [plain_theta(i, d, base) for i in range(d // 2)]
    ramp = [min(max((i - low) / (high - low), 0.0), 1.0) for i in range(d // 2)]
    return torch.tensor([t * (1 - r) + t / s["factor"] * r for t, r in zip(theta, ramp)], dtype=torch.float64).float()


def check_inv_freq(rope, d, base, scaling, seq_len=None):
    got, got_scaling = rope.rope_inv_freq(d, base=base, scaling=scaling, seq_len=seq_len)
    expected, expected_scaling = reference_inv_freq(d, base, scaling, seq_len)
    assert_close(got, expected, name=(f"inv_freq for {scaling}",
                                      f"{scaling} 的 inv_freq"), mistakes=inv_freq_mistakes(d, base, scaling, seq_len))
    expect(isinstance(got_scaling, (float, int)), "part01.attention_scaling_type", got=type(got_scaling).__name__)
    expect(math.isclose(got_scaling, expected_scaling, rel_tol=1e-6), "part01.attention_scaling_value",
           scaling=scaling, expected=expected_scaling, got=repr(got_scaling))


HEAD_DIMS = st.sampled_from([4, 16, 64, 128])
BASES = st.sampled_from([10000.0, 500000.0, 1e6])


@given(d=HEAD_DIMS, base=BASES)
def test_default_inverse_frequencies(impl, d, base):
    check_inv_freq(impl(MODULE), d, base, None)
    check_inv_freq(impl(MODULE), d, base, {"type": "default"})


@given(d=HEAD_DIMS, base=BASES, factor=st.sampled_from([2.0, 4.0, 8.0]))
def test_linear_scaling_divides_every_frequency_by_the_factor(impl, d, base, factor):
    check_inv_freq(impl(MODULE), d, base, {"type": "linear", "factor": factor})


@given(d=HEAD_DIMS, base=BASES, factor=st.sampled_from([2.0, 4.0, 16.0]))
def test_ntk_aware_scaling_raises_the_base(impl, d, base, factor):
    check_inv_freq(impl(MODULE), d, base, {"type": "ntk", "factor": factor})


@pytest.mark.parametrize("seq_len", [None, 100, 4096, 10000, 40000])
def test_dynamic_ntk_depends_on_the_sequence_length(impl, seq_len):
    check_inv_freq(impl(MODULE), 64, 10000.0, {"type": "dynamic", "factor": 4.0,
                                               "original_max_position_embeddings": 4096}, seq_len)


YARN_CONFIGS = [
    {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096},
    {"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
     "mscale": 1.0, "mscale_all_dim": 1.0},  # DeepSeek-V3 style: the mscales cancel
    {"type": "yarn", "factor": 8.0, "original_max_position_embeddings": 2048, "mscale": 0.707, "mscale_all_dim": 1.0},
    {"type": "yarn", "factor": 16.0, "original_max_position_embeddings": 8192, "beta_fast": 16, "beta_slow": 2,
     "attention_factor": 1.5},
    {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768, "truncate": False},
    {"type": "yarn", "factor": 0.5, "original_max_position_embeddings": 4096},  # s <= 1: no attention scaling
]


@pytest.mark.weight(2)
@pytest.mark.parametrize("scaling", YARN_CONFIGS, ids=lambda s: f"factor{s['factor']:g}-L{s['original_max_position_embeddings']}")
@pytest.mark.parametrize("d,base", [(64, 10000.0), (128, 1e6)])
def test_yarn_frequencies_and_attention_scaling(impl, scaling, d, base):
    check_inv_freq(impl(MODULE), d, base, scaling)


YARN_EDGES = [  # (d, base, scaling, what it reaches, the unclamped bounds reach it)
    (64, 10000.0, {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128},
     "low < 0: clamped to 0", lambda low, high, d: low < 0),
    (16, 10.0, {"type": "yarn", "factor": 8.0, "original_max_position_embeddings": 768},
     "high > D - 1 (a small base): clamped to D - 1", lambda low, high, d: high > d - 1 and max(low, 0) < d // 2 - 1),
    (64, 10000.0, {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 384, "beta_fast": 128,
                   "beta_slow": 64},
     "low == high == 0 after the clamps: the ramp's 0 / 0 guard", lambda low, high, d: max(low, 0) == min(high, d - 1) == 0),
]


@pytest.mark.weight(2)
@pytest.mark.parametrize("d,base,scaling,state,reached", YARN_EDGES, ids=["low-below-0", "high-above-D-1", "low-equals-high"])
def test_yarn_bounds_are_clamped_and_guarded(impl, d, base, scaling, state, reached):
    assert reached(*yarn_bounds(d, base, scaling), d), f"the test's YaRN config no longer reaches {state}"  # setup check
    got, _ = impl(MODULE).rope_inv_freq(d, base=base, scaling=scaling)
    if isinstance(got, torch.Tensor) and bool(torch.isnan(got).any()) and "guard" in state:
        raise Mismatch(tr("part01.inv_freq_nan_pairs", scaling=scaling,
                          pairs=torch.isnan(got).nonzero().flatten().tolist()),
                       ("YaRN's ramp divides by high - low without the guard: when low == high, add 0.001 to high",
                        "YaRN 的斜坡除以 high - low 时没有保护：low == high 时应给 high 加 0.001"))
    check_inv_freq(impl(MODULE), d, base, scaling)


def test_rope_inv_freq_defaults_to_base_10000_without_scaling(impl):
    d = 64
    got, scaling = impl(MODULE).rope_inv_freq(d)
    assert_close(got, reference_inv_freq(d, 10000.0)[0], name=("inv_freq with the default base", "默认 base 下的 inv_freq"),
                 mistakes={(f"the default base is {b:g}, not 10000",
                            f"默认 base 是 {b:g}，而不是 10000"): reference_inv_freq(d, b)[0]
                           for b in (500000.0, 1e6, 1e5, 1000.0)})
    expect(scaling == 1.0, "part01.attention_scaling_one", got=repr(scaling))


def test_rope_cos_sin_defaults_to_no_offset_and_no_scaling(impl):
    inv_freq = reference_inv_freq(16, 10000.0)[0]
    got = impl(MODULE).rope_cos_sin(inv_freq, 12)
    expect(isinstance(got, tuple) and len(got) == 2, "part01.cos_sin_tuple", got=type(got).__name__)
    cos, sin = reference_cos_sin(inv_freq, 12, 0, 1.0)
    default = got[0][0, 0].item() if isinstance(got[0], torch.Tensor) and got[0].dim() == 2 else float("nan")
    for k, (name, want) in enumerate((("cos", cos), ("sin", sin))):
        assert_close(got[k], want, name=(f"{name} with the default offset and attention_scaling",
                                         f"默认 offset 与 attention_scaling 下的 {name}"),
                     mistakes={(f"the default attention_scaling is {default:.6g}, not 1.0",
                                f"默认 attention_scaling 是 {default:.6g}，而不是 1.0"): want * default})


LLAMA3_CONFIGS = [
    {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 8192},  # Llama 3.1
    {"type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 8192},  # Llama 3.2
    {"type": "llama3", "factor": 4.0, "low_freq_factor": 2.0, "high_freq_factor": 8.0,
     "original_max_position_embeddings": 1024},
]


@pytest.mark.weight(2)
@pytest.mark.parametrize("scaling", LLAMA3_CONFIGS, ids=lambda s: f"factor{s['factor']:g}")
@pytest.mark.parametrize("d,base", [(64, 500000.0), (128, 500000.0), (32, 10000.0)])
def test_llama3_frequencies(impl, scaling, d, base):
    check_inv_freq(impl(MODULE), d, base, scaling)


def test_bad_arguments_raise_value_error(impl):
    rope = impl(MODULE)
    for head_dim in (7, 0, -2):  # odd, or not a dimension at all
        with pytest.raises(ValueError):
            rope.rope_inv_freq(head_dim)
    with pytest.raises(ValueError):
        rope.rope_inv_freq(8, scaling={"type": "no-such-scaling", "factor": 2.0})
    cos, sin = torch.ones(3, 2), torch.zeros(3, 2)
    with pytest.raises(ValueError):
        rope.apply_rope(torch.ones(1, 1, 3, 4), cos, sin, pairing="neox")


# ---- cos/sin cache --------------------------------------------------------------------------------

def reference_cos_sin(inv_freq, seq_len, offset, scaling):
    if isinstance(offset, torch.Tensor):
        positions = offset[:, None] + torch.arange(seq_len)
    else:
        positions = torch.arange(offset, offset + seq_len)
    angle = positions[..., None].float() * inv_freq  # the float32 product the spec asks for
    return angle.cos() * scaling, angle.sin() * scaling


def cos_sin_mistakes(inv_freq, seq_len, offset, scaling):
    from_zero = reference_cos_sin(inv_freq, seq_len, 0, scaling)
    exact = reference_cos_sin(inv_freq, seq_len, offset, scaling)
    unscaled = reference_cos_sin(inv_freq, seq_len, offset, 1.0)
    return {
        ("the position offset was ignored (positions start at 0)", "忽略了位置偏移（位置从 0 开始）"): (from_zero[0], from_zero[1]),
        ("attention_scaling was not applied to cos/sin", "cos/sin 没有乘 attention_scaling"): unscaled,
        ("cos and sin swapped", "cos 与 sin 对调了"): (exact[1], exact[0]),
    }


def check_cos_sin(rope, inv_freq, seq_len, offset, scaling):
    got = rope.rope_cos_sin(inv_freq, seq_len, offset=offset, attention_scaling=scaling)
    expect(isinstance(got, tuple) and len(got) == 2, "part01.cos_sin_tuple", got=type(got).__name__)
    expected = reference_cos_sin(inv_freq, seq_len, offset, scaling)
    mistakes = cos_sin_mistakes(inv_freq, seq_len, offset, scaling)
    for k, name in enumerate(("cos", "sin")):
        assert_close(got[k], expected[k], name=name, mistakes={m: out[k] for m, out in mistakes.items()})


@given(d=st.sampled_from([2, 8, 64]), seq_len=st.integers(1, 40), offset=st.integers(0, 3000),
       scaling=st.sampled_from([1.0, 1.2079]))
def test_cos_sin_for_positions_from_an_offset(impl, d, seq_len, offset, scaling):
    rope = impl(MODULE)
    inv_freq = reference_inv_freq(d, 10000.0)[0]
    check_cos_sin(rope, inv_freq, seq_len, offset, scaling)


@pytest.mark.weight(2)
def test_decode_step_uses_the_cached_length_as_position(impl):
    """The token after 1000 cached ones sits at position 1000, not 0."""
    inv_freq = reference_inv_freq(128, 500000.0)[0]
    check_cos_sin(impl(MODULE), inv_freq, 1, 1000, 1.0)


def test_per_sequence_offsets_give_one_row_of_positions_each(impl, gen):
    offsets = torch.randint(0, 500, (4,), generator=gen)
    inv_freq = reference_inv_freq(32, 10000.0)[0]
    check_cos_sin(impl(MODULE), inv_freq, 3, offsets, 1.0)


# ---- applying the rotation ------------------------------------------------------------------------

def rotate_interleaved(x, cos, sin):
    """Complex reference: pair (x[2i], x[2i+1]) is the complex number x[2i] + i x[2i+1]."""
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())
    if cos.dim() == 3:
        cos, sin = cos[:, None], sin[:, None]
    turn = torch.complex(cos.double(), sin.double())
    return torch.view_as_real(z * turn).flatten(-2)


def to_interleaved(x):
    """Rotate-half layout (first halves, then second halves) -> interleaved layout."""
    half = x.shape[-1] // 2
    return torch.stack([x[..., :half], x[..., half:]], dim=-1).flatten(-2)


def from_interleaved(x):
    return torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1)


def reference_apply(x, cos, sin, pairing):
    if pairing == "interleaved":
        return rotate_interleaved(x, cos, sin).to(x.dtype)
    return from_interleaved(rotate_interleaved(to_interleaved(x), cos, sin)).to(x.dtype)


def apply_mistakes(x, cos, sin, pairing):
    other = "rotate_half" if pairing == "interleaved" else "interleaved"
    return {
        (f"{other} pairs used instead of {pairing}",
         f"用了 {other} 配对，而不是 {pairing}"): lambda: reference_apply(x, cos, sin, other),
        ("sin sign flipped (rotated clockwise)", "sin 的符号反了（顺时针旋转）"): lambda: reference_apply(x, cos, -sin, pairing),
        ("the result kept in float32 instead of the input dtype",
         "结果保留为 float32，而不是输入的 dtype"): lambda: reference_apply(x.float(), cos, sin, pairing),
    }


def check_apply(rope, x, cos, sin, pairing):
    got = rope.apply_rope(x, cos, sin, pairing=pairing)
    assert_close(got, reference_apply(x, cos, sin, pairing), name=f"apply_rope ({pairing})",
                 mistakes=apply_mistakes(x, cos, sin, pairing))


@given(b=st.integers(1, 2), h=st.integers(1, 3), s=st.integers(1, 9), d=st.sampled_from([2, 8, 32]),
       offset=st.integers(0, 200), dtype=st.sampled_from(DTYPES), pairing=st.sampled_from(["rotate_half", "interleaved"]),
       seed=st.integers(0, 2**31 - 1))
def test_apply_rope_matches_the_complex_reference(impl, b, h, s, d, offset, dtype, pairing, seed):
    g = torch.Generator().manual_seed(seed)
    x = randn(b, h, s, d, dtype=dtype, generator=g)
    cos, sin = reference_cos_sin(reference_inv_freq(d, 10000.0)[0], s, offset, 1.0)
    check_apply(impl(MODULE), x, cos, sin, pairing)


@pytest.mark.weight(2)
@pytest.mark.parametrize("pairing", ["rotate_half", "interleaved"])
def test_pairing_conventions_are_not_interchangeable(impl, gen, pairing):
    """HF checkpoints need rotate-half, Meta checkpoints interleaved: the two must differ."""
    x = randn(2, 4, 6, 16, generator=gen)
    cos, sin = reference_cos_sin(reference_inv_freq(16, 10000.0)[0], 6, 3, 1.0)
    check_apply(impl(MODULE), x, cos, sin, pairing)


def test_per_sequence_cos_sin_rotate_each_sequence_at_its_own_positions(impl, gen):
    x = randn(3, 2, 1, 8, generator=gen)
    cos, sin = reference_cos_sin(reference_inv_freq(8, 10000.0)[0], 1, torch.tensor([0, 17, 250]), 1.0)
    check_apply(impl(MODULE), x, cos, sin, "rotate_half")


def test_apply_rope_keeps_the_input_untouched(impl, gen):
    x = randn(1, 2, 5, 8, dtype=torch.bfloat16, generator=gen)
    before = x.clone()
    cos, sin = reference_cos_sin(reference_inv_freq(8, 10000.0)[0], 5, 0, 1.0)
    impl(MODULE).apply_rope(x, cos, sin)
    expect(torch.equal(x, before), "check.modified_input", name="apply_rope")


@pytest.mark.weight(2)
def test_yarn_end_to_end_scales_the_rotated_vectors(impl, gen):
    """YaRN: rotate with scaled cos/sin; the vector's norm grows by attention_scaling."""
    rope = impl(MODULE)
    scaling = {"type": "yarn", "factor": 8.0, "original_max_position_embeddings": 1024}
    inv_freq, attention_scaling = rope.rope_inv_freq(32, base=10000.0, scaling=scaling)
    cos, sin = rope.rope_cos_sin(inv_freq, 4, offset=40, attention_scaling=attention_scaling)
    x = randn(1, 2, 4, 32, generator=gen)
    ref_inv, ref_scaling = reference_inv_freq(32, 10000.0, scaling)
    ref_cos, ref_sin = reference_cos_sin(ref_inv, 4, 40, ref_scaling)
    got = rope.apply_rope(x, cos, sin)
    unscaled = reference_cos_sin(ref_inv, 4, 40, 1.0)
    assert_close(got, reference_apply(x, ref_cos, ref_sin, "rotate_half"), name="YaRN-rotated q",
                 rtol=1e-4, atol=1e-4,  # inv_freq may be 1 ulp off the float64 reference; x40 in the angle
                 mistakes={("YaRN's attention_scaling was not applied", "没有应用 YaRN 的 attention_scaling"):
                           lambda: reference_apply(x, *unscaled, "rotate_half")})
