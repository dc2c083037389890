"""Cross-check: part04_serving.paged_decode_kernel (the reference Triton kernel, under the interpreter on
a CPU) against the rest of Part 04 and torch:

- on a cache built by ``paged_kv``'s reference (appends, a fork, a copy-on-write append): the kernel
  equals ``paged_attention``'s reference and torch SDPA on ``PagedKVCache.gather`` of each sequence,
  so the layout and block-table convention are the ones the engine uses;
- the float64 emulation of the split convention behind the diagnoses is plain attention when it
  rescales (the mistakes module cannot drift from the definition);
- (tests/test_check_triton_cpu.py: a plain script, no pytest plugin, runs the kernel on a CPU.)
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from infralab.mistakes.part04_serving.paged_decode_kernel import make_batch, reference, split_attention
from infralab.testing import assert_close, randn
from solutions.part04_serving import paged_attention, paged_decode_kernel
from solutions.part04_serving.paged_kv import PagedKVCache


def test_the_kernel_reads_a_paged_kv_cache_as_paged_attention_and_sdpa_do():
    gen = torch.Generator().manual_seed(0)
    hq, hkv, d, bs = 4, 2, 16, 4
    cache = PagedKVCache(num_blocks=24, block_size=bs, num_kv_heads=hkv, head_dim=d)
    for seq, n in ((0, 9), (1, 14), (2, 3)):
        cache.add_sequence(seq)
        cache.append(seq, randn(n, hkv, d, generator=gen), randn(n, hkv, d, generator=gen))
    cache.fork(1, 3)  # shares the parent's blocks; its next append copies the partly filled last block
    cache.append(3, randn(3, hkv, d, generator=gen), randn(3, hkv, d, generator=gen))
    seqs = [0, 1, 2, 3]
    lens = torch.tensor([cache.seq_len(s) for s in seqs], dtype=torch.int32)
    width = max(len(cache.block_table(s)) for s in seqs) + 1
    tables = torch.full((len(seqs), width), -1, dtype=torch.int32)
    for i, s in enumerate(seqs):
        tables[i, :len(cache.block_table(s))] = torch.tensor(cache.block_table(s), dtype=torch.int32)
    k_pool, v_pool = cache.kv_pools()
    q = randn(len(seqs), hq, d, generator=gen)

    got = paged_decode_kernel.paged_decode_attention(q, k_pool, v_pool, tables, lens, num_splits=2)
    assert_close(got, paged_attention.paged_decode_attention(q, k_pool, v_pool, tables, lens))
    for i, s in enumerate(seqs):
        k, v = cache.gather(s)  # (L, Hkv, D)
        k, v = (t.transpose(0, 1).repeat_interleave(hq // hkv, 0) for t in (k, v))
        assert_close(got[i], F.scaled_dot_product_attention(q[i][:, None], k, v)[:, 0], name=f"sequence {s}")


def test_the_split_emulation_behind_the_diagnoses_is_plain_attention_when_it_rescales():
    batch = make_batch(torch.Generator().manual_seed(1), [9, 21, 2], 4, 4, 2, 16)
    for splits in (1, 2, 5):
        assert_close(split_attention(*batch, splits=splits), reference(*batch))
