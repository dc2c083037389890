"""Hidden tests for part01_transformer.attention.

The reference mask is built element by element from the definition; the reference attention
runs in float64 with an explicit KV-head index per query head.
"""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.i18n import tr
from infralab.mistakes.part01_transformer.attention import (EMPTY_ROWS_NAN, HALF_SCORES_OVERFLOW, check_attention,
                                                            qkv, reference_attention, reference_mask)
from infralab.testing import Mismatch, assert_close, assert_equal

MODULE = "part01_transformer.attention"


# ---- references -----------------------------------------------------------------------------------

# ---- the mask -------------------------------------------------------------------------------------

def check_mask(mod, sq, skv, causal, window, padding):
    got = mod.attention_mask(sq, skv, causal=causal, window=window, key_padding_mask=padding)
    expected = reference_mask(sq, skv, causal, window, padding)
    mistakes = {("causal mask aligned top-left instead of bottom-right", "因果掩码按左上角对齐，而不是右下角"):
                reference_mask(sq, skv, causal, window, padding, top_left=True)}
    if window is not None:
        mistakes[("window off by one (W + 1 keys)",
                  "窗口差一（W + 1 个 key）")] = reference_mask(sq, skv, causal, window, padding, window_keys=window + 1)
        mistakes[("window off by one (W - 1 keys)",
                  "窗口差一（W - 1 个 key）")] = reference_mask(sq, skv, causal, window, padding, window_keys=window - 1)
    if padding is not None:
        mistakes[("padding mask inverted (True treated as padding)",
                  "padding 掩码取反了（把 True 当成了 padding）")] = reference_mask(sq, skv, causal, window, ~padding)
    assert_equal(got, expected, name=f"mask (Sq={sq}, Skv={skv}, causal={causal}, window={window})", mistakes=mistakes)


@given(sq=st.integers(1, 8), extra=st.integers(0, 8), causal=st.booleans(), window=st.sampled_from([None, 1, 2, 5]),
       padded=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_mask_matches_the_definition(impl, sq, extra, causal, window, padded, seed):
    skv = sq + extra
    window = window if causal else None
    padding = torch.rand(2, skv, generator=torch.Generator().manual_seed(seed)) > 0.3 if padded else None
    check_mask(impl(MODULE), sq, skv, causal, window, padding)


@pytest.mark.weight(2)
@pytest.mark.parametrize("sq,skv", [(1, 9), (3, 10)], ids=["decode", "chunked-prefill"])
def test_causal_mask_is_aligned_bottom_right(impl, sq, skv):
    check_mask(impl(MODULE), sq, skv, True, None, None)


def test_more_queries_than_keys_leaves_the_first_rows_empty(impl):
    check_mask(impl(MODULE), 6, 4, True, None, None)


@pytest.mark.weight(2)
@pytest.mark.parametrize("window", [1, 3, 4])
def test_sliding_window_covers_w_keys_including_the_current_one(impl, window):
    check_mask(impl(MODULE), 7, 7, True, window, None)
    check_mask(impl(MODULE), 2, 9, True, window, None)


def test_a_window_without_causal_raises_value_error(impl):
    with pytest.raises(ValueError):
        impl(MODULE).attention_mask(4, 4, causal=False, window=2)


def test_a_window_under_one_key_raises_value_error(impl):
    for window in (0, -1):  # the specification: W >= 1
        with pytest.raises(ValueError):
            impl(MODULE).attention_mask(4, 4, causal=True, window=window)


# ---- attention ------------------------------------------------------------------------------------

@given(b=st.integers(1, 2), hkv=st.integers(1, 3), group=st.sampled_from([1, 2, 4]), sq=st.integers(1, 7),
       extra=st.integers(0, 6), d=st.sampled_from([4, 16, 32]), causal=st.booleans(),
       window=st.sampled_from([None, 1, 3]), padded=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_attention_matches_the_reference(impl, b, hkv, group, sq, extra, d, causal, window, padded, seed):
    g = torch.Generator().manual_seed(seed)
    skv = sq + extra
    q, k, v = qkv(g, b, hkv * group, hkv, sq, skv, d)
    padding = torch.rand(b, skv, generator=g) > 0.25 if padded else None
    check_attention(impl(MODULE), q, k, v, causal, window if causal else None, padding)


@pytest.mark.weight(2)
@pytest.mark.parametrize("hq,hkv", [(8, 2), (6, 3), (4, 1)], ids=["gqa-4", "gqa-2", "mqa"])
def test_grouped_query_heads_share_consecutive_kv_heads(impl, gen, hq, hkv):
    q, k, v = qkv(gen, 2, hq, hkv, 5, 5, 16)
    check_attention(impl(MODULE), q, k, v, causal=True)


@pytest.mark.weight(2)
def test_decode_step_attends_to_the_whole_cache(impl, gen):
    q, k, v = qkv(gen, 2, 4, 2, 1, 12, 32)
    check_attention(impl(MODULE), q, k, v, causal=True, name=("decode output", "decode 的输出"))


@pytest.mark.weight(2)
def test_chunked_prefill_is_causal_from_the_bottom_right(impl, gen):
    q, k, v = qkv(gen, 1, 4, 4, 4, 11, 16)
    check_attention(impl(MODULE), q, k, v, causal=True, name=("chunk output", "分块的输出"))


def test_sliding_window_attention(impl, gen):
    q, k, v = qkv(gen, 1, 4, 2, 9, 9, 16)
    check_attention(impl(MODULE), q, k, v, causal=True, window=3)


def test_default_scale_is_one_over_sqrt_d(impl, gen):
    q, k, v = qkv(gen, 1, 2, 2, 6, 6, 64)
    check_attention(impl(MODULE), q, k, v)


def test_an_explicit_scale_replaces_the_default(impl, gen):
    q, k, v = qkv(gen, 1, 2, 1, 5, 7, 16)
    check_attention(impl(MODULE), q, k, v, scale=0.05)


def test_softmax_runs_over_the_keys(impl, gen):
    """Sq != Skv and no mask: normalising over the wrong axis gives a different answer."""
    q, k, v = qkv(gen, 1, 2, 2, 3, 8, 8)
    check_attention(impl(MODULE), q, k, v)


@pytest.mark.weight(2)
def test_rows_without_a_visible_key_are_zero(impl, gen):
    """Sequence 1 is all padding; with causal and Sq > Skv the first query rows see nothing."""
    q, k, v = qkv(gen, 2, 2, 1, 6, 4, 8)
    padding = torch.tensor([[True, True, False, True], [False] * 4])
    got = impl(MODULE).attention(q, k, v, causal=True, key_padding_mask=padding)
    expected = reference_attention(q, k, v, reference_mask(6, 4, True, None, padding))
    if isinstance(got, torch.Tensor) and got.shape == expected.shape and bool(got.isnan().any()):
        raise Mismatch(tr("part01.empty_rows_nan", count=int(got.isnan().sum())),
                       EMPTY_ROWS_NAN)
    assert_close(got, expected, name=("output with empty rows", "含空行时的输出"))


def test_value_head_dim_may_differ(impl, gen):
    q, k, v = qkv(gen, 1, 4, 2, 3, 5, 16, dv=8)
    check_attention(impl(MODULE), q, k, v, causal=True)


def test_masked_attention_takes_any_broadcastable_mask(impl, gen):
    q, k, v = qkv(gen, 2, 4, 2, 5, 6, 8)
    mask = torch.rand(2, 4, 5, 6, generator=gen) > 0.4  # a different mask per head
    expected = reference_attention(q, k, v, mask)  # from the inputs as they were before the call
    got = impl(MODULE).masked_attention(q, k, v, mask)
    assert_close(got, expected, name="masked_attention output")


@pytest.mark.weight(2)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs_with_large_scores_stay_finite(impl, gen, dtype):
    """Scores of ~1e5 overflow fp16 (max 65504): they must be computed and softmaxed in fp32."""
    q, k, v = qkv(gen, 1, 2, 2, 4, 6, 64, dtype=dtype, scale=100.0)
    got = impl(MODULE).attention(q, k, v, causal=True, scale=1.0)
    if isinstance(got, torch.Tensor) and bool(got.isnan().any()):
        raise Mismatch(tr("check.nan_elements", name=f"{dtype} output", count=int(got.isnan().sum())),
                       HALF_SCORES_OVERFLOW)
    check_attention(impl(MODULE), q, k, v, causal=True, scale=1.0)


def test_query_heads_must_be_a_multiple_of_kv_heads(impl, gen):
    q, k, v = qkv(gen, 1, 3, 2, 2, 2, 4)
    with pytest.raises(ValueError):
        impl(MODULE).attention(q, k, v)
