"""Hidden tests for part04_serving.paged_decode_kernel (Triton split-KV decode over the paged pool):
random pools and scattered block tables, compared with torch SDPA on each sequence's gathered K/V."""
import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from infralab.mistakes.part04_serving.paged_decode_kernel import (
    EMPTY_SPLIT_NAN, garbage_tails, make_batch, mistakes, reference, stale_padding)
from infralab.testing import assert_all_written, assert_close, randn

MODULE = "part04_serving.paged_decode_kernel"


def check(impl, batch, splits=None, scale=None):
    expected = reference(*batch, scale=scale)  # from the inputs as they were before the call
    got = impl(MODULE).paged_decode_attention(*batch, scale=scale, num_splits=splits)
    assert_all_written(got, diagnosis=EMPTY_SPLIT_NAN)
    assert_close(got, expected, mistakes=mistakes(*batch, scale=scale, splits=splits))


def scattered(gen, lens, block_size, hq, hkv, d, dtype=torch.float32, stale=True):
    """make_batch's pools and -1-padded tables; ``stale``: padding entries become real block ids, and
    the unused rows of each last block hold large values."""
    q, k_pool, v_pool, tables, lens_t = make_batch(gen, lens, block_size, hq, hkv, d, dtype=dtype)
    if stale:
        tables = stale_padding(tables, gen)
        k_pool, v_pool = garbage_tails(k_pool, v_pool, tables, lens_t)
    return q, k_pool, v_pool, tables, lens_t


@settings(max_examples=4, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no shrinking
@given(lens=st.lists(st.integers(1, 45), min_size=1, max_size=3), block_size=st.sampled_from([4, 5, 16]),
       heads=st.sampled_from([(4, 4), (4, 2), (8, 1)]), splits=st.sampled_from([None, 1, 3, 5]),
       stale=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_matches_sdpa_on_random_batches_block_sizes_and_splits(impl, lens, block_size, heads, splits, stale, seed):
    gen = torch.Generator().manual_seed(seed)
    check(impl, scattered(gen, lens, block_size, *heads, 16, stale=stale), splits)


@pytest.mark.weight(3)
def test_long_sequences_over_many_blocks_and_tiles(impl, gen):
    """130 tokens in blocks of 16 (9 blocks, the last with 2 tokens) next to sequences of 67 and 3;
    four splits: each split spans several tiles, and the short sequences' later splits are empty."""
    check(impl, scattered(gen, [130, 67, 3], 16, 4, 2, 32), splits=4)


@pytest.mark.weight(2)
def test_only_each_sequences_own_tokens_are_read_behind_stale_table_entries(impl, gen):
    """Padding entries that name real blocks (another sequence's) and large values in each last
    block's unused rows: only context_lens[i] tokens through the table may count."""
    check(impl, scattered(gen, [9, 30, 17], 8, 4, 2, 16, stale=True), splits=2)


@pytest.mark.weight(2)
def test_splits_with_different_maxima_are_rescaled_before_they_are_combined(impl, gen):
    """One sequence whose second split holds much larger scores than its first."""
    q, k_pool, v_pool, tables, lens = scattered(gen, [48], 8, 2, 1, 16, stale=False)
    q = q * 4.0
    block = int(tables[0, 4])  # tokens 32..39: in the second of two splits (entries 0-3, 4-6)
    k_pool[block] = q[0, 0] / 2.0  # scores up to ~|q|^2 / 8
    check(impl, (q, k_pool, v_pool, tables, lens), splits=2)


@pytest.mark.weight(2)
@pytest.mark.parametrize("hq, hkv", [(6, 3), (8, 1)])  # MHA: the random batches' (4, 4)
def test_grouped_query_heads_read_their_own_kv_head(impl, gen, hq, hkv):
    check(impl, scattered(gen, [11, 20], 4, hq, hkv, 16), splits=2)


def test_half_precision_and_an_explicit_scale(impl, gen):
    batch = scattered(gen, [6, 33, 1], 4, 4, 2, 32, dtype=torch.float16)
    check(impl, batch, splits=3, scale=0.3)


def test_one_split_at_head_dim_128(impl, gen):
    """num_splits=1 (allowed: the whole context in one program) at head dim 128, as served models use."""
    check(impl, scattered(gen, [20, 7], 4, 4, 2, 128), splits=1)


def test_int64_tables_and_a_non_contiguous_query(impl, gen):
    q, k_pool, v_pool, tables, lens = scattered(gen, [13, 7], 4, 4, 2, 16)
    q = randn(4, 2, 16, generator=gen).transpose(0, 1)  # (2, 4, 16) with stride(0) = 16
    check(impl, (q, k_pool, v_pool, tables.long(), lens.long()), splits=2)


def test_a_query_strided_in_its_head_dim_and_a_column_major_table(impl, gen):
    """q as every other element of a wider tensor (stride 2 in D, NaN between) and the block table
    stored column-major (stride 1 down a column): a kernel that indexes D or a table row as contiguous
    reads the wrong elements unless the inputs are made contiguous first."""
    q, k_pool, v_pool, tables, lens = scattered(gen, [9, 14, 5], 4, 4, 2, 16)
    wide = torch.stack((q, torch.full_like(q, float("nan"))), dim=-1)[..., 0]  # stride(-1) == 2
    column_major = tables.T.contiguous().T  # the same entries, strides (1, B)
    check(impl, (wide, k_pool, v_pool, column_major, lens), splits=2)


def test_the_inputs_are_left_unchanged(impl, gen):
    batch = scattered(gen, [10, 3], 4, 4, 2, 16)
    before = [t.clone() for t in batch]
    impl(MODULE).paged_decode_attention(*batch, num_splits=2)
    for name, old, new in zip(("q", "k_pool", "v_pool", "block_tables", "context_lens"), before, batch):
        assert_close(new, old, name=name, rtol=0.0, atol=0.0)  # bit for bit as before the call


@pytest.mark.parametrize("case", ["hq_not_multiple", "head_dim", "table_rows", "lens_dtype", "splits"])
def test_rejects_inputs_that_do_not_fit(impl, gen, case):
    q, k_pool, v_pool, tables, lens = make_batch(gen, [5, 3], 4, 4, 2, 16)
    if case == "hq_not_multiple":
        q = randn(2, 3, 16, generator=gen)
    elif case == "head_dim":
        q, k_pool, v_pool = q[..., :12], k_pool[..., :12], v_pool[..., :12]
    elif case == "table_rows":
        tables = tables[:1]
    elif case == "lens_dtype":
        lens = lens.float()
    with pytest.raises(ValueError):
        impl(MODULE).paged_decode_attention(q, k_pool, v_pool, tables, lens, num_splits=0 if case == "splits" else None)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_long_context_ragged_batch_on_gpu(impl, gen, dtype):
    lens = [4000, 1, 2500, 3999, 128, 3000, 77, 4000]
    batch = make_batch(gen, lens, 16, 32, 8, 128, dtype=dtype)
    cuda = tuple(t.cuda() for t in batch)
    got = impl(MODULE).paged_decode_attention(*cuda)
    assert_all_written(got, name="out")
    assert_close(got.cpu(), reference(*batch), name="out")
