"""Visible tests for part01_transformer.attention: run `pytest exercises/part01_transformer -m attention`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import math

import torch

from infralab.testing import assert_all_written, assert_close, assert_equal, randn

MODULE = "part01_transformer.attention"


def heads(gen, hq, hkv, sq, skv, d=8, dtype=torch.float32, scale=1.0):
    """One batch: q (1, Hq, Sq, D); k and v (1, Hkv, Skv, D), q and k scaled by ``scale``."""
    q = randn(1, hq, sq, d, generator=gen, dtype=dtype, scale=scale)
    k = randn(1, hkv, skv, d, generator=gen, dtype=dtype, scale=scale)
    return q, k, randn(1, hkv, skv, d, generator=gen, dtype=dtype)


def check(golden, got, q, k, v, causal=True, scale=None, name=("attention output", "注意力输出")):
    assert_close(got, golden.ref.expected_attention(q, k, v, causal, None, None, scale), name=name,
                 mistakes=golden.ref.attention_mistakes(q, k, v, causal, None, None, scale))


def test_unmasked_attention_is_softmax_of_scaled_scores_times_v(impl, golden):
    q, k, v = (randn(1, 2, 4, 8, generator=golden.gen) for _ in range(3))
    expected = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(8), dim=-1) @ v
    assert_close(impl(MODULE).attention(q, k, v), expected, mistakes=golden.ref.attention_mistakes(q, k, v))


def test_causal_square_attention_matches_torch(impl, golden):
    q, k, v = (randn(1, 2, 5, 8, generator=golden.gen) for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert_close(impl(MODULE).attention(q, k, v, causal=True), expected,
                 mistakes=golden.ref.attention_mistakes(q, k, v, True))


def test_decoding_one_token_sees_every_cached_key(impl):
    """One query after 4 cached keys (bottom-right causal): all 5 keys are visible."""
    mask = impl(MODULE).attention_mask(1, 5, causal=True)
    assert_equal(mask, torch.ones(1, 1, 1, 5, dtype=torch.bool), name=("decode mask", "decode 的掩码"),
                 mistakes={("causal mask aligned top-left instead of bottom-right", "因果掩码按左上角对齐，而不是右下角"):
                           torch.tensor([[[[True, False, False, False, False]]]])})


def test_sliding_window_of_three_covers_the_current_key_and_two_before(impl):
    mask = impl(MODULE).attention_mask(5, 5, causal=True, window=3)
    expected = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0],
                             [0, 1, 1, 1, 0], [0, 0, 1, 1, 1]], dtype=torch.bool)
    four_keys = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0],
                              [1, 1, 1, 1, 0], [0, 1, 1, 1, 1]], dtype=torch.bool)
    assert_equal(mask, expected[None, None], name=("window mask", "滑动窗口掩码"),
                 mistakes={("sliding window off by one (W + 1 keys instead of W including the current one)",
                            "滑动窗口差一（W + 1 个 key，而不是包含当前位置在内的 W 个）"):
                           four_keys[None, None]})


def test_eight_query_heads_share_two_kv_heads_in_consecutive_groups(impl, golden):
    """GQA: query heads 0-3 use KV head 0, heads 4-7 use KV head 1 (h // 4, not h % 2)."""
    q, k, v = heads(golden.gen, 8, 2, 3, 3)
    check(golden, impl(MODULE).attention(q, k, v, causal=True), q, k, v)


def test_rows_without_a_visible_key_are_zero_not_nan(impl, golden):
    """Six queries and four keys, causal bottom-right: queries 0 and 1 see no key, so their output is 0."""
    q, k, v = heads(golden.gen, 2, 2, 6, 4)
    got = impl(MODULE).attention(q, k, v, causal=True)
    assert_all_written(got, name=("output with empty rows", "含空行时的输出"), diagnosis=golden.ref.EMPTY_ROWS_NAN)
    check(golden, got, q, k, v, name=("output with empty rows", "含空行时的输出"))


def test_fp16_attention_with_large_scores_is_computed_in_fp32(impl, golden):
    """Scores of ~1e5 overflow fp16 (max 65504): compute scores and softmax in float32."""
    q, k, v = heads(golden.gen, 2, 2, 2, 4, 64, dtype=torch.float16, scale=100.0)
    got = impl(MODULE).attention(q, k, v, causal=True, scale=1.0)
    assert_all_written(got, name="fp16 output", diagnosis=golden.ref.HALF_SCORES_OVERFLOW)
    check(golden, got, q, k, v, scale=1.0)
