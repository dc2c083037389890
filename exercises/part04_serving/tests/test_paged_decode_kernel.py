"""Visible tests for part04_serving.paged_decode_kernel: `pytest exercises/part04_serving -m paged_decode_kernel`.

On a CPU the kernels run under the Triton interpreter (shapes are tiny). ``golden`` replays recorded
inputs and expectations (infralab.golden): ``golden.gen`` draws the recorded inputs, ``golden.ref.*``
returns the recorded expected values and known mistakes' outputs.
"""
import torch
import torch.nn.functional as F

from infralab.testing import assert_all_written, assert_close, randn

MODULE = "part04_serving.paged_decode_kernel"


def test_one_sequence_in_three_scattered_blocks_equals_sdpa_on_the_gathered_cache(impl, golden):
    """40 tokens in blocks of 16 (the last one half full) at pool blocks 5, 0, 3; 4 query heads share
    2 kv heads; two splits (table entries 0-1 and 2-3)."""
    q = randn(1, 4, 16, generator=golden.gen)
    k_pool, v_pool = randn(6, 16, 2, 16, generator=golden.gen), randn(6, 16, 2, 16, generator=golden.gen)
    tables = torch.tensor([[5, 0, 3, -1]], dtype=torch.int32)
    lens = torch.tensor([40], dtype=torch.int32)
    got = impl(MODULE).paged_decode_attention(q, k_pool, v_pool, tables, lens, num_splits=2)
    k = torch.cat([k_pool[5], k_pool[0], k_pool[3, :8]]).transpose(0, 1)  # (Hkv, 40, D) in token order
    v = torch.cat([v_pool[5], v_pool[0], v_pool[3, :8]]).transpose(0, 1)
    expected = F.scaled_dot_product_attention(q[0][:, None], k.repeat_interleave(2, 0), v.repeat_interleave(2, 0))[:, 0]
    wrong = golden.ref.mistakes(q, k_pool, v_pool, tables, lens, splits=2)
    assert_close(got[0], expected, mistakes={label: out[0] for label, out in wrong.items()})


def test_each_sequence_reads_only_its_own_context_lens_tokens(impl, golden):
    """Lengths 5, 37 and 20 in blocks of 8 and three splits of 16 tokens: the first sequence's last two
    splits and the third's last split are empty. The padding entries of the table are stale block ids
    (blocks of other sequences); the unused rows of each last block hold 50."""
    lens = torch.tensor([5, 37, 20], dtype=torch.int32)
    tables = torch.tensor([[7, 2, 9, 0, 4, 11],     # 1 block: 7
                           [3, 10, 1, 6, 8, 5],     # 5 blocks: 3, 10, 1, 6, 8
                           [11, 0, 4, 7, 3, 2]],    # 3 blocks: 11, 0, 4
                          dtype=torch.int32)
    q = randn(3, 4, 16, generator=golden.gen)
    k_pool, v_pool = randn(12, 8, 2, 16, generator=golden.gen), randn(12, 8, 2, 16, generator=golden.gen)
    for last, used in ((7, 5), (8, 5), (4, 4)):  # each sequence's last block and its used rows
        k_pool[last, used:], v_pool[last, used:] = 50.0, 50.0
    got = impl(MODULE).paged_decode_attention(q, k_pool, v_pool, tables, lens, num_splits=3)
    assert_all_written(got, diagnosis=golden.ref.EMPTY_SPLIT_NAN)
    assert_close(got, golden.ref.reference(q, k_pool, v_pool, tables, lens),
                 mistakes=golden.ref.mistakes(q, k_pool, v_pool, tables, lens, splits=3))
