"""Visible tests for part01_transformer.attention: run `pytest exercises/part01_transformer -m attention`."""
import math

import torch

from infralab.mistakes.part01_transformer.attention import (EMPTY_ROWS_NAN, HALF_SCORES_OVERFLOW, attention_mistakes,
                                                            check_attention, qkv)
from infralab.testing import assert_all_written, assert_close, assert_equal, randn

MODULE = "part01_transformer.attention"


def test_unmasked_attention_is_softmax_of_scaled_scores_times_v(impl, gen):
    q, k, v = (randn(2, 3, 5, 8, generator=gen) for _ in range(3))
    expected = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(8), dim=-1) @ v
    assert_close(impl(MODULE).attention(q, k, v), expected, mistakes=attention_mistakes(q, k, v))


def test_causal_square_attention_matches_torch(impl, gen):
    q, k, v = (randn(1, 2, 6, 16, generator=gen) for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert_close(impl(MODULE).attention(q, k, v, causal=True), expected, mistakes=attention_mistakes(q, k, v, True))


def test_decoding_one_token_sees_every_cached_key(impl):
    """One query after 4 cached keys (bottom-right causal): all 5 keys are visible."""
    mask = impl(MODULE).attention_mask(1, 5, causal=True)
    assert_equal(mask, torch.ones(1, 1, 1, 5, dtype=torch.bool), name="decode mask",
                 mistakes={"causal mask aligned top-left instead of bottom-right":
                           torch.tensor([[[[True, False, False, False, False]]]])})


def test_sliding_window_of_three_covers_the_current_key_and_two_before(impl):
    mask = impl(MODULE).attention_mask(5, 5, causal=True, window=3)
    expected = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0],
                             [0, 1, 1, 1, 0], [0, 0, 1, 1, 1]], dtype=torch.bool)
    four_keys = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0],
                              [1, 1, 1, 1, 0], [0, 1, 1, 1, 1]], dtype=torch.bool)
    assert_equal(mask, expected[None, None], name="window mask",
                 mistakes={"sliding window off by one (W + 1 keys instead of W including the current one)":
                           four_keys[None, None]})


def test_eight_query_heads_share_two_kv_heads_in_consecutive_groups(impl, gen):
    """GQA: query heads 0-3 use KV head 0, heads 4-7 use KV head 1 (h // 4, not h % 2)."""
    q, k, v = qkv(gen, 1, 8, 2, 4, 4, 8)
    check_attention(impl(MODULE), q, k, v, causal=True)


def test_rows_without_a_visible_key_are_zero_not_nan(impl, gen):
    """Six queries and four keys, causal bottom-right: queries 0 and 1 see no key, so their output is 0."""
    q, k, v = qkv(gen, 1, 2, 2, 6, 4, 8)
    got = impl(MODULE).attention(q, k, v, causal=True)
    assert_all_written(got, name="output with empty rows", diagnosis=EMPTY_ROWS_NAN)
    check_attention(impl(MODULE), q, k, v, causal=True, name="output with empty rows")


def test_fp16_attention_with_large_scores_is_computed_in_fp32(impl, gen):
    """Scores of ~1e5 overflow fp16 (max 65504): compute scores and softmax in float32."""
    q, k, v = qkv(gen, 1, 2, 2, 3, 4, 64, dtype=torch.float16, scale=100.0)
    got = impl(MODULE).attention(q, k, v, causal=True, scale=1.0)
    assert_all_written(got, name="fp16 output", diagnosis=HALF_SCORES_OVERFLOW)
    check_attention(impl(MODULE), q, k, v, causal=True, scale=1.0)
