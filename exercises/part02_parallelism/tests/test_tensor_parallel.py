"""Visible tests for part02_parallelism.tensor_parallel: run with `pytest exercises/part02_parallelism`.

Each function runs on every rank (simulated group; one test on gloo). The expected values are the
unsharded layers computed here with torch; ``result.traffic()`` counts each rank's collectives
(calls and bytes per kind), so gathering a whole weight gives the right numbers and still fails.
"""
import pytest
import torch
import torch.nn.functional as F

from infralab.distributed import Counts, assert_traffic, describe_traffic, run_calls, run_ranks
from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, cancellation_atol, randn

MODULE = "part02_parallelism.tensor_parallel"
GATHERED = ("a whole weight all-gathered to every rank: right numbers, but not tensor parallelism",
            "把整个权重 all-gather 到每个 rank：数值对，但这不是张量并行")
NO_GATHER = {GATHERED: lambda traffic: any(kind.startswith("all_gather") for kind in traffic)}


def shard(t, n, dim, rank):
    return torch.chunk(t, n, dim)[rank].contiguous()


def one_all_reduce(t):
    return {"all_reduce": Counts(1, t.numel() * t.element_size())}


def test_column_parallel_linear_gives_each_rank_its_output_columns(impl, gen):
    n, x = 2, randn(3, 4, generator=gen)
    w, b = randn(6, 4, generator=gen), randn(6, generator=gen)
    results = run_ranks(impl, MODULE, "column_parallel_linear",
                        [(x, shard(w, n, 0, r), shard(b, n, 0, r), r, n) for r in range(n)], allow_collectives=True)
    for rank, res in enumerate(results):
        assert_close(res.value, shard(F.linear(x, w, b), n, -1, rank), name=(f"rank {rank}'s output columns",
                                                                             f"rank {rank} 的输出列"))
    assert_traffic(results, {}, "column_parallel_linear (no communication)", NO_GATHER)


def test_column_parallel_backward_all_reduces_grad_x(impl, gen):
    n, x, grad_y = 2, randn(3, 4, generator=gen), randn(3, 6, generator=gen)
    w = randn(6, 4, generator=gen)
    results = run_ranks(impl, MODULE, "column_parallel_linear_backward",
                        [(shard(grad_y, n, -1, r), x, shard(w, n, 0, r), r, n) for r in range(n)],
                        allow_collectives=True)
    for rank, res in enumerate(results):
        partial = shard(grad_y, n, -1, rank) @ shard(w, n, 0, rank)
        assert_close(res.value[0], grad_y @ w, name=f"rank {rank}'s grad_x",
                     mistakes={("grad_x not all-reduced: only this rank's slice's contribution",
                                "grad_x 没有 AllReduce：只有本 rank 那一片的贡献"): partial})
    assert_traffic(results, one_all_reduce(x), "column_parallel_linear_backward")


def test_row_parallel_linear_adds_the_bias_once(impl, gen):
    n, x = 2, randn(3, 4, generator=gen)
    w, b = randn(5, 4, generator=gen), randn(5, generator=gen)
    results = run_ranks(impl, MODULE, "row_parallel_linear",
                        [(shard(x, n, -1, r), shard(w, n, 1, r), b, r, n) for r in range(n)], allow_collectives=True)
    expected = F.linear(x, w, b)
    for rank, res in enumerate(results):
        assert_close(res.value, expected, name=(f"rank {rank}'s output", f"rank {rank} 的输出"),
                     mistakes={("the bias added on every rank before the all-reduce (counted n times)",
                                "每个 rank 都在 AllReduce 前加了偏置（被加了 n 次）"): expected + (n - 1) * b})
    assert_traffic(results, one_all_reduce(expected), "row_parallel_linear", NO_GATHER)


def test_tp_mlp_one_all_reduce_forward_and_one_backward(impl, gen):
    n, x, grad_y = 2, randn(3, 4, generator=gen), randn(3, 4, generator=gen)
    w1, b1, w2, b2 = randn(8, 4, generator=gen), randn(8, generator=gen), randn(4, 8, generator=gen), randn(4, generator=gen)
    shards = [(shard(w1, n, 0, r), shard(b1, n, 0, r), shard(w2, n, 1, r)) for r in range(n)]
    forward, backward = run_calls(impl, MODULE, [
        ("tp_mlp", [(x, *s, b2, r, n) for r, s in enumerate(shards)]),
        ("tp_mlp_backward", [(grad_y, x, *s, r, n) for r, s in enumerate(shards)]),
    ], n, allow_collectives=True)
    xr = x.clone().requires_grad_(True)
    y = F.linear(F.gelu(F.linear(xr, w1, b1)), w2, b2)
    (grad_x,) = torch.autograd.grad(y, xr, grad_y)
    for rank in range(n):
        assert_close(forward[rank].value, y.detach(), name=(f"rank {rank}'s MLP output", f"rank {rank} 的 MLP 输出"))
        assert_close(backward[rank].value[0], grad_x, name=f"rank {rank}'s MLP grad_x")
    assert_traffic(forward, one_all_reduce(x), "tp_mlp", NO_GATHER)
    assert_traffic(backward, one_all_reduce(x), "tp_mlp_backward", NO_GATHER)


def test_vocab_parallel_embedding_looks_up_only_its_own_rows(impl, gen):
    n, w = 2, randn(6, 3, generator=gen)
    ids = torch.tensor([[0, 5, 2, 3]])
    results = run_ranks(impl, MODULE, "vocab_parallel_embedding", [(ids, shard(w, n, 0, r), r, n) for r in range(n)],
                        allow_collectives=True)
    clamped = sum(shard(w, n, 0, r)[(ids - 3 * r).clamp(0, 2)] for r in range(n))
    for rank, res in enumerate(results):
        assert_close(res.value, w[ids], name=(f"rank {rank}'s embeddings", f"rank {rank} 的嵌入"),
                     mistakes={("ids outside this rank's range looked up anyway (clamped) instead of giving zeros",
                                "不属于本 rank 的 id 也被查表（截断）而不是贡献 0"): clamped})


@pytest.mark.parametrize("scale", [1.0, 300.0])
def test_vocab_parallel_cross_entropy_equals_f_cross_entropy(impl, gen, scale):
    n, logits = 2, randn(4, 8, generator=gen, scale=scale)
    targets = torch.tensor([0, 7, 3, 4])
    results = run_ranks(impl, MODULE, "vocab_parallel_cross_entropy",
                        [(shard(logits, n, -1, r), targets, r, n) for r in range(n)], allow_collectives=True)
    halves = torch.chunk(logits.double(), n, -1)
    own_max = halves[0].amax(-1)  # rank 0's local max, used by every half: what skipping the MAX all-reduce gives
    local_max = torch.log(sum(torch.exp(h - h.amax(-1, keepdim=True)).sum(-1) for h in halves)) + own_max \
        - logits.double().gather(-1, targets[:, None])[:, 0]
    for rank, res in enumerate(results):
        assert_close(res.value, F.cross_entropy(logits.double(), targets, reduction="none").float(),
                     name=(f"rank {rank}'s loss (logits x {scale:g})",
                           f"rank {rank} 的损失（logits x {scale:g}）"), atol=cancellation_atol(logits),
                     mistakes={("each rank subtracts its own max: the max must be all-reduced (ReduceOp.MAX) first",
                                "每个 rank 减去自己的最大值：最大值必须先用 ReduceOp.MAX 做 AllReduce"):
                               local_max.float()})
        moved = sum(c.bytes for c in res.traffic().values())
        if moved > 3 * 4 * 8:
            raise Mismatch(tr("part02_tp.loss_traffic", name="vocab_parallel_cross_entropy", rank=rank,
                              got=describe_traffic(res.traffic()), tokens=4),
                           ("the logits gathered across ranks: a rank held tokens x V values",
                            "把 logits 在各 rank 间收集了：某个 rank 持有了 tokens × V 个值"))


@pytest.mark.timeout(120)
def test_tp_mlp_on_gloo(impl):
    gen = torch.Generator().manual_seed(2)  # fixed inputs: the simulated-group tests draw fresh ones
    n, x = 2, randn(3, 4, generator=gen)
    w1, b1, w2, b2 = randn(8, 4, generator=gen), randn(8, generator=gen), randn(4, 8, generator=gen), randn(4, generator=gen)
    results = run_ranks(impl, MODULE, "tp_mlp",
                        [(x, shard(w1, n, 0, r), shard(b1, n, 0, r), shard(w2, n, 1, r), b2, r, n) for r in range(n)],
                        backend="gloo", allow_collectives=True)
    for rank, res in enumerate(results):
        assert_close(res.value, F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2), name=(f"gloo rank {rank}",
                                                                                     f"gloo 后端的 rank {rank}"))
