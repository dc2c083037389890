"""Visible tests for part01_transformer.attention: run `pytest exercises/part01_transformer -m attention`."""
import math

import torch

from infralab.testing import assert_close, randn

MODULE = "part01_transformer.attention"


def test_unmasked_attention_is_softmax_of_scaled_scores_times_v(impl, gen):
    q, k, v = (randn(2, 3, 5, 8, generator=gen) for _ in range(3))
    expected = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(8), dim=-1) @ v
    assert_close(impl(MODULE).attention(q, k, v), expected)


def test_causal_square_attention_matches_torch(impl, gen):
    q, k, v = (randn(1, 2, 6, 16, generator=gen) for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert_close(impl(MODULE).attention(q, k, v, causal=True), expected)


def test_decoding_one_token_sees_every_cached_key(impl):
    """One query after 4 cached keys (bottom-right causal): all 5 keys are visible."""
    mask = impl(MODULE).attention_mask(1, 5, causal=True)
    assert mask.shape == (1, 1, 1, 5), f"expected shape (1, 1, 1, 5), got {tuple(mask.shape)}"
    assert bool(mask.all()), f"the last query must see every key, got {mask.flatten().tolist()}"


def test_sliding_window_of_three_covers_the_current_key_and_two_before(impl):
    mask = impl(MODULE).attention_mask(5, 5, causal=True, window=3)
    expected = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0],
                             [0, 1, 1, 1, 0], [0, 0, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(mask[0, 0], expected), f"window mask:\n{mask[0, 0].int()}"
