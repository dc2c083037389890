"""Visible tests for part02_parallelism.context_parallel: run with `pytest exercises/part02_parallelism -k context`.

``golden`` replays recorded inputs and expectations (infralab.golden); ``run_ranks`` runs
``ring_attention`` on every rank of a simulated group and reports each rank's messages.
"""
import math

import pytest
import torch
import torch.nn.functional as F

from infralab.distributed import assert_ring_traffic, run_ranks
from infralab.i18n import localized, tr
from infralab.testing import Mismatch, assert_close, assert_equal, randn

MODULE = "part02_parallelism.context_parallel"


def test_merge_partials_of_two_halves_equals_attention_over_all_keys(impl, golden):
    q, k, v = randn(1, 3, 4, generator=golden.gen), randn(1, 6, 4, generator=golden.gen), randn(1, 6, 4, generator=golden.gen)
    parts = []
    for keys in (slice(0, 2), slice(2, 6)):
        scores = q @ k[:, keys].transpose(-1, -2) / math.sqrt(4)
        parts.append((scores.softmax(-1) @ v[:, keys], scores.logsumexp(-1)))
    (oa, la), (ob, lb) = parts
    out, lse = impl(MODULE).merge_partials(oa, la, ob, lb)
    assert_close(out, F.scaled_dot_product_attention(q, k, v), name=("merged output", "合并后的输出"),
                 mistakes=golden.ref.merge_mistakes(oa, la, ob, lb))
    assert_close(lse, (q @ k.transpose(-1, -2) / 2).logsumexp(-1), name=("merged lse", "合并后的 lse"))


def test_block_attention_gives_zero_and_minus_inf_for_rows_that_see_no_key(impl, golden):
    """Queries at positions 0, 1 and keys at 2, 3 under a causal mask: nothing is visible."""
    q, k, v = (randn(1, 1, 2, 4, generator=golden.gen) for _ in range(3))
    out, lse = impl(MODULE).block_attention(q, k, v, torch.tensor([0, 1]), torch.tensor([2, 3]), True)
    if bool(torch.isnan(out).any()):
        raise Mismatch(tr("part02.cp.nan", name=localized(("output of fully masked rows", "完全被掩码的行的输出")),
                          count=int(torch.isnan(out).sum())),
                       golden.ref.NAN_ON_EMPTY_ROWS)
    assert_close(out, torch.zeros(1, 1, 2, 4), name=("output of fully masked rows", "完全被掩码的行的输出"))
    assert_close(lse, torch.full((1, 1, 2), float("-inf")), name=("lse of fully masked rows", "完全被掩码的行的 lse"))


def test_block_attention_of_a_causal_block_equals_sdpa(impl, golden):
    q, k, v = (randn(1, 2, 5, 4, generator=golden.gen) for _ in range(3))
    positions = torch.arange(5)
    out, lse = impl(MODULE).block_attention(q, k, v, positions, positions, True)
    scores = (q @ k.transpose(-1, -2) / 2).masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), float("-inf"))
    assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), name=("causal block output", "因果块的输出"),
                 mistakes={("scores not scaled by 1/sqrt(D)", "注意力分数没有除以 sqrt(D)"):
                           F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0)})
    assert_close(lse, scores.logsumexp(-1), name=("causal block lse", "因果块的 lse"))


def test_rank_positions_of_8_tokens_on_2_ranks(impl, golden):
    assert_equal(impl(MODULE).rank_positions(8, 0, 2), torch.tensor([0, 1, 6, 7]), name="rank 0",
                 mistakes=golden.ref.layout_mistakes(8, 0, 2))
    assert_equal(impl(MODULE).rank_positions(8, 1, 2), torch.tensor([2, 3, 4, 5]), name="rank 1")
    with pytest.raises(ValueError):
        impl(MODULE).rank_positions(6, 0, 2)  # 6 is not divisible by 2W = 4


@pytest.mark.parametrize("causal", [True, False])
def test_ring_attention_on_3_ranks_equals_full_attention(impl, golden, causal):
    W, S = 3, 12
    q, k, v = (randn(1, 2, S, 4, generator=golden.gen) for _ in range(3))
    full = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    positions = [golden.ref.balanced_positions(S, r, W) for r in range(W)]
    args = [(q[..., p, :].clone(), k[..., p, :].clone(), v[..., p, :].clone(), r, W, causal) for r, p in enumerate(positions)]
    results = run_ranks(impl, MODULE, "ring_attention", args)
    for rank, res in enumerate(results):
        out, _ = res.value
        assert_close(out, full[..., positions[rank], :], name=(f"rank {rank}'s rows (causal={causal})",
                                                               f"rank {rank} 的行（causal={causal}）"),
                     mistakes=golden.ref.ring_mistakes(q, k, v, rank, W, causal))
    assert_ring_traffic(results, 2 * 2 * 4 * 4 * W, W, phases=1, name="ring_attention")
