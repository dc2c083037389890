"""Hidden tests for part04_serving.paged_attention: random pools and scattered block tables,
compared with torch SDPA on the gathered K/V of each sequence."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from infralab.testing import assert_close, randn

MODULE = "part04_serving.paged_attention"


def make_batch(gen, lens, block_size, hq, hkv, d, dtype=torch.float32):
    """Pools with sequences scattered over random blocks; tables padded with -1."""
    need = [-(-n // block_size) for n in lens]
    num_blocks = sum(need) + 3
    perm = torch.randperm(num_blocks, generator=gen).tolist()
    tables = torch.full((len(lens), max(need) + 1), -1, dtype=torch.int32)
    for i, n in enumerate(need):
        tables[i, :n] = torch.tensor([perm.pop() for _ in range(n)], dtype=torch.int32)
    k_pool = randn(num_blocks, block_size, hkv, d, generator=gen, dtype=dtype)
    v_pool = randn(num_blocks, block_size, hkv, d, generator=gen, dtype=dtype)
    q = randn(len(lens), hq, d, generator=gen, dtype=dtype)
    return q, k_pool, v_pool, tables, torch.tensor(lens, dtype=torch.int32)


def gathered(pool, table, n, block_size):
    pos = torch.arange(n)
    return pool.reshape(-1, *pool.shape[2:])[table.long()[pos // block_size] * block_size + pos % block_size]


def reference(q, k_pool, v_pool, tables, lens, scale=None, *, group_of=lambda h, g, hkv: h // g, n_of=None):
    """Dense attention on each sequence's gathered K/V (torch SDPA); the keyword hooks build the
    outputs of known mistakes."""
    b, hq, d = q.shape
    block_size, hkv = k_pool.shape[1], k_pool.shape[2]
    out = torch.empty(b, hq, d, dtype=torch.float32)
    for i in range(b):
        n = int(lens[i]) if n_of is None else n_of(i)
        k, v = gathered(k_pool, tables[i], n, block_size).float(), gathered(v_pool, tables[i], n, block_size).float()
        heads = torch.tensor([group_of(h, hq // hkv, hkv) for h in range(hq)])
        out[i] = F.scaled_dot_product_attention(q[i].float()[:, None], k[:, heads].transpose(0, 1),
                                                v[:, heads].transpose(0, 1), scale=scale)[:, 0]
    return out.to(q.dtype)


def mistakes(q, k_pool, v_pool, tables, lens, scale=None):
    block_size = k_pool.shape[1]
    return {
        "context_lens ignored: the padded tail of the last block was attended to":
            lambda: reference(q, k_pool, v_pool, tables, lens, scale,
                              n_of=lambda i: -(-int(lens[i]) // block_size) * block_size),
        "GQA head mapping h % Hkv instead of h // (Hq / Hkv)":
            lambda: reference(q, k_pool, v_pool, tables, lens, scale, group_of=lambda h, g, hkv: h % hkv),
        "softmax scale missing (1 / sqrt(D) not applied)":
            lambda: reference(q, k_pool, v_pool, tables, lens, 1.0),
    }


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
