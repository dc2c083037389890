"""Hidden tests for part04_serving.paged_attention: random pools and scattered block tables,
compared with torch SDPA on the gathered K/V of each sequence."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.mistakes.part04_serving.paged_attention import make_batch, mistakes, reference
from infralab.testing import assert_close

MODULE = "part04_serving.paged_attention"


@given(lens=st.lists(st.integers(1, 13), min_size=1, max_size=4), block_size=st.sampled_from([2, 4, 5]),
       heads=st.sampled_from([(4, 4), (4, 2), (6, 1)]), seed=st.integers(0, 2**31 - 1))
def test_matches_dense_attention_on_random_batches(impl, lens, block_size, heads, seed):
    gen = torch.Generator().manual_seed(seed)
    batch = make_batch(gen, lens, block_size, *heads, 8)
    expected = reference(*batch)  # from the inputs as they were before the call
    got = impl(MODULE).paged_decode_attention(*batch)
    assert_close(got, expected, mistakes=mistakes(*batch))


@pytest.mark.weight(2)
def test_only_context_lens_tokens_are_read(impl, gen):
    """Lengths that end mid-block, with large garbage in the unused slots."""
    q, k_pool, v_pool, tables, lens = make_batch(gen, [5, 3], 4, 4, 2, 8)
    for i, n in enumerate([5, 3]):
        last = tables[i, (n - 1) // 4]
        k_pool[last, n % 4:] = 50.0
        v_pool[last, n % 4:] = 50.0
    expected = reference(q, k_pool, v_pool, tables, lens)  # from the inputs as they were before the call
    got = impl(MODULE).paged_decode_attention(q, k_pool, v_pool, tables, lens)
    assert_close(got, expected, mistakes=mistakes(q, k_pool, v_pool, tables, lens))


@pytest.mark.weight(2)
def test_grouped_query_heads_read_their_own_kv_head(impl, gen):
    batch = make_batch(gen, [7, 9], 4, 8, 2, 16)
    expected = reference(*batch)  # from the inputs as they were before the call
    got = impl(MODULE).paged_decode_attention(*batch)
    assert_close(got, expected, mistakes=mistakes(*batch))


def test_explicit_scale_and_half_precision(impl, gen):
    batch = make_batch(gen, [6, 11, 1], 4, 4, 4, 32, dtype=torch.float16)
    expected = reference(*batch, scale=0.3)  # from the inputs as they were before the call
    got = impl(MODULE).paged_decode_attention(*batch, scale=0.3)
    assert_close(got, expected, mistakes=mistakes(*batch, scale=0.3))
