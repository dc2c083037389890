"""Hidden tests for part02_parallelism.tensor_parallel: equal to the unsharded layers (outputs and
gradients) on the simulated group at world sizes 1, 2, 4 and on gloo at 2 and 4, with the exact
communication of each function (calls and bytes per collective kind)."""
import pytest
import torch

from infralab.distributed import assert_traffic, run_calls, run_ranks
from infralab.mistakes.part02_parallelism.tensor_parallel import (
    NONE, all_reduce_of, check_loss_traffic, chunk, column_backward_mistakes, cross_entropy_mistakes,
    embedding_mistakes, reference_attention, reference_cross_entropy, reference_linear, reference_mlp,
    row_mistakes, traffic_mistakes,
)
from infralab.testing import assert_close, cancellation_atol, randn

MODULE = "part02_parallelism.tensor_parallel"
SIZES = [1, 2, 4]


def layer(g, out_f, in_f, dtype=torch.float32):
    return randn(out_f, in_f, generator=g, dtype=dtype), randn(out_f, generator=g, dtype=dtype)


def check_all(results, expected, name, mistakes=None, index=None, atol=None):
    """Every rank's value (or its ``index``-th part) equals ``expected(rank)``."""
    for rank, res in enumerate(results):
        got = res.value if index is None else res.value[index]
        assert_close(got, expected(rank), name=f"{name}, rank {rank}", mistakes=mistakes, atol=atol)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_column_parallel_forward_is_the_output_slice_without_communication(impl, gen, n, dtype):
    x = randn(2, 3, 8, generator=gen, dtype=dtype)
    w, b = layer(gen, 4 * n, 8, dtype)
    results = run_ranks(impl, MODULE, "column_parallel_linear",
                        [(x, chunk(w, n, 0, r), chunk(b, n, 0, r), r, n) for r in range(n)], allow_collectives=True)
    full = reference_linear(x, w, b)
    check_all(results, lambda r: chunk(full, n, -1, r), "column-parallel output slice")
    assert_traffic(results, NONE, "column_parallel_linear", traffic_mistakes())


@pytest.mark.weight(2)
@pytest.mark.parametrize("n", SIZES)
def test_column_parallel_backward_all_reduces_grad_x_once(impl, gen, n):
    x, grad_y = randn(5, 8, generator=gen), randn(5, 2 * n, generator=gen)
    w, b = layer(gen, 2 * n, 8)
    grad_x, grad_w, grad_b = reference_linear(x, w, b, grad_y)
    results = run_ranks(impl, MODULE, "column_parallel_linear_backward",
                        [(chunk(grad_y, n, -1, r), x, chunk(w, n, 0, r), r, n) for r in range(n)],
                        allow_collectives=True)
    for rank, res in enumerate(results):
        mistakes = column_backward_mistakes(chunk(grad_y, n, -1, rank), chunk(w, n, 0, rank)) if n > 1 else None
        assert_close(res.value[0], grad_x, name=f"grad_x, rank {rank}", mistakes=mistakes, reduction=2 * n)
    check_all(results, lambda r: chunk(grad_w, n, 0, r), "grad_weight_shard", index=1)
    check_all(results, lambda r: chunk(grad_b, n, 0, r), "grad_bias_shard", index=2)
    assert_traffic(results, all_reduce_of(x), "column_parallel_linear_backward", traffic_mistakes())


@pytest.mark.weight(2)
@pytest.mark.parametrize("n", SIZES)
def test_row_parallel_forward_sums_partials_once_and_adds_the_bias_once(impl, gen, n):
    x = randn(3, 2, 4 * n, generator=gen)
    w, b = layer(gen, 6, 4 * n)
    results = run_ranks(impl, MODULE, "row_parallel_linear",
                        [(chunk(x, n, -1, r), chunk(w, n, 1, r), b, r, n) for r in range(n)], allow_collectives=True)
    y = reference_linear(x, w, b)
    check_all(results, lambda r: y, "row-parallel output", mistakes=row_mistakes(x, w, b, n) if n > 1 else None)
    assert_traffic(results, all_reduce_of(y), "row_parallel_linear", traffic_mistakes())


@pytest.mark.parametrize("n", SIZES)
def test_row_parallel_backward_needs_no_communication(impl, gen, n):
    x, grad_y = randn(4, 2 * n, generator=gen), randn(4, 3, generator=gen)
    w, b = layer(gen, 3, 2 * n)
    grad_x, grad_w, grad_b = reference_linear(x, w, b, grad_y)
    results = run_ranks(impl, MODULE, "row_parallel_linear_backward",
                        [(grad_y, chunk(x, n, -1, r), chunk(w, n, 1, r), r, n) for r in range(n)],
                        allow_collectives=True)
    check_all(results, lambda r: chunk(grad_x, n, -1, r), "grad_x_shard", index=0)
    check_all(results, lambda r: chunk(grad_w, n, 1, r), "grad_weight_shard", index=1)
    check_all(results, lambda r: grad_b, "grad_bias", index=2)
    assert_traffic(results, NONE, "row_parallel_linear_backward", traffic_mistakes())


def mlp_atol(x, w1, b1, w2, b2, grad_y=None):
    """The atol of the MLP's output (or, given grad_y, of each of its five gradients): float32 roundoff
    at the size of their terms, the reference run on absolute values. An output or a gradient may
    cancel far below its terms: 20,000 seeds of test_tp_mlp_moves_one_all_reduce_per_direction's
    inputs had a correct grad_w1 at 0.90 of the table's atol (0.15 under this one)."""
    size = reference_mlp(*(t.abs() for t in (x, w1, b1, w2, b2)), None if grad_y is None else grad_y.abs())
    return cancellation_atol(size) if grad_y is None else [cancellation_atol(part) for part in size]


def mlp_case(g, n, d=8, f_per_rank=4, tokens=(2, 3)):
    x, grad_y = randn(*tokens, d, generator=g), randn(*tokens, d, generator=g)
    (w1, b1), (w2, b2) = layer(g, f_per_rank * n, d), layer(g, d, f_per_rank * n)
    shards = [(chunk(w1, n, 0, r), chunk(b1, n, 0, r), chunk(w2, n, 1, r)) for r in range(n)]
    return x, grad_y, (w1, b1, w2, b2), shards


@pytest.mark.weight(3)
@pytest.mark.parametrize("n", SIZES)
def test_tp_mlp_moves_one_all_reduce_per_direction(impl, gen, n):
    x, grad_y, (w1, b1, w2, b2), shards = mlp_case(gen, n)
    forward, backward = run_calls(impl, MODULE, [
        ("tp_mlp", [(x, w1s, b1s, w2s, b2, r, n) for r, (w1s, b1s, w2s) in enumerate(shards)]),
        ("tp_mlp_backward", [(grad_y, x, w1s, b1s, w2s, r, n) for r, (w1s, b1s, w2s) in enumerate(shards)]),
    ], n, allow_collectives=True)
    y = reference_mlp(x, w1, b1, w2, b2)
    check_all(forward, lambda r: y, "MLP output", atol=mlp_atol(x, w1, b1, w2, b2))
    gx, gw1, gb1, gw2, gb2 = reference_mlp(x, w1, b1, w2, b2, grad_y)
    ax, aw1, ab1, aw2, ab2 = mlp_atol(x, w1, b1, w2, b2, grad_y)
    check_all(backward, lambda r: gx, "MLP grad_x", index=0, atol=ax)
    check_all(backward, lambda r: chunk(gw1, n, 0, r), "MLP grad_w1_shard", index=1, atol=aw1)
    check_all(backward, lambda r: chunk(gb1, n, 0, r), "MLP grad_b1_shard", index=2, atol=ab1)
    check_all(backward, lambda r: chunk(gw2, n, 1, r), "MLP grad_w2_shard", index=3, atol=aw2)
    check_all(backward, lambda r: gb2, "MLP grad_b2", index=4, atol=ab2)
    assert_traffic(forward, all_reduce_of(y), "tp_mlp (forward)", traffic_mistakes())
    assert_traffic(backward, all_reduce_of(x), "tp_mlp_backward", traffic_mistakes())


@pytest.mark.weight(2)
@pytest.mark.parametrize("n,n_heads", [(1, 2), (2, 2), (2, 4), (4, 4)])
def test_tp_attention_splits_heads_and_all_reduces_once(impl, gen, n, n_heads):
    head_dim, seq = 4, 5
    d = n_heads * head_dim
    x = randn(2, seq, d, generator=gen)
    wq, wk, wv, wo = (randn(d, d, generator=gen, scale=d ** -0.5) for _ in range(4))
    results = run_ranks(impl, MODULE, "tp_attention",
                        [(x, chunk(wq, n, 0, r), chunk(wk, n, 0, r), chunk(wv, n, 0, r), chunk(wo, n, 1, r), n_heads,
                          r, n) for r in range(n)], allow_collectives=True)
    y = reference_attention(x, wq, wk, wv, wo, n_heads)
    check_all(results, lambda r: y, f"attention with {n_heads} heads on {n} ranks")
    assert_traffic(results, all_reduce_of(y), "tp_attention", traffic_mistakes())


@pytest.mark.weight(2)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("rows", [6, 1])  # 1: a shard of one row (V = n)
def test_vocab_parallel_embedding_equals_the_full_lookup(impl, gen, n, rows):
    vocab, d = rows * n, 5
    w = randn(vocab, d, generator=gen)
    ids = torch.randint(0, vocab, (3, 7), generator=gen)
    results = run_ranks(impl, MODULE, "vocab_parallel_embedding", [(ids, chunk(w, n, 0, r), r, n) for r in range(n)],
                        allow_collectives=True)
    check_all(results, lambda r: w[ids], "embedding", mistakes=embedding_mistakes(ids, w, n) if n > 1 else None)
    assert_traffic(results, all_reduce_of(w[ids]), "vocab_parallel_embedding", traffic_mistakes())


@pytest.mark.weight(3)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("scale, columns", [(1.0, 16), (300.0, 16), (1.0, 1)])
def test_vocab_parallel_cross_entropy_never_gathers_the_logits(impl, gen, n, scale, columns):
    """Large logits (scale 300) overflow exp() unless the global max is subtracted first; one column
    per rank (V = n) is a shard too."""
    tokens, vocab = 6, columns * n
    logits = randn(tokens, vocab, generator=gen, scale=scale)
    targets = torch.randint(0, vocab, (tokens,), generator=gen)
    grad_loss = randn(tokens, generator=gen)
    per_rank = [(chunk(logits, n, -1, r), targets) for r in range(n)]
    forward, backward = run_calls(impl, MODULE, [
        ("vocab_parallel_cross_entropy", [(*a, r, n) for r, a in enumerate(per_rank)]),
        ("vocab_parallel_cross_entropy_backward", [(*a, grad_loss, r, n) for r, a in enumerate(per_rank)]),
    ], n, allow_collectives=True)
    loss = reference_cross_entropy(logits, targets)
    mistakes = cross_entropy_mistakes(logits, targets, n) if n > 1 else None
    check_all(forward, lambda r: loss, f"cross-entropy (logits x {scale:g})", mistakes=mistakes,
              atol=cancellation_atol(logits))
    grad = reference_cross_entropy(logits, targets, grad_loss)
    check_all(backward, lambda r: chunk(grad, n, -1, r), f"dL/dlogits shard (logits x {scale:g})")
    check_loss_traffic(forward, tokens, "vocab_parallel_cross_entropy")
    check_loss_traffic(backward, tokens, "vocab_parallel_cross_entropy_backward")


@pytest.mark.timeout(180)
@pytest.mark.weight(3)
@pytest.mark.parametrize("n", [2, 4])
def test_mlp_and_loss_on_real_gloo_processes(impl, n):
    """Fixed inputs (the simulated-group tests draw fresh ones): a seed sweep does not rerun the processes."""
    gen = torch.Generator().manual_seed(20 + n)
    x, grad_y, (w1, b1, w2, b2), shards = mlp_case(gen, n, tokens=(3,))
    tokens, vocab = 4, 8 * n
    logits = randn(tokens, vocab, generator=gen, scale=5.0)
    targets = torch.randint(0, vocab, (tokens,), generator=gen)
    forward, backward, loss = run_calls(impl, MODULE, [
        ("tp_mlp", [(x, w1s, b1s, w2s, b2, r, n) for r, (w1s, b1s, w2s) in enumerate(shards)]),
        ("tp_mlp_backward", [(grad_y, x, w1s, b1s, w2s, r, n) for r, (w1s, b1s, w2s) in enumerate(shards)]),
        ("vocab_parallel_cross_entropy", [(chunk(logits, n, -1, r), targets, r, n) for r in range(n)]),
    ], n, backend="gloo", allow_collectives=True, timeout_s=60)
    check_all(forward, lambda r: reference_mlp(x, w1, b1, w2, b2), "gloo: MLP output", atol=mlp_atol(x, w1, b1, w2, b2))
    check_all(backward, lambda r: reference_mlp(x, w1, b1, w2, b2, grad_y)[0], "gloo: MLP grad_x", index=0,
              atol=mlp_atol(x, w1, b1, w2, b2, grad_y)[0])
    check_all(loss, lambda r: reference_cross_entropy(logits, targets), "gloo: cross-entropy",
              mistakes=cross_entropy_mistakes(logits, targets, n))
    assert_traffic(forward, all_reduce_of(x), "gloo: tp_mlp (forward)", traffic_mistakes())
    assert_traffic(backward, all_reduce_of(x), "gloo: tp_mlp_backward", traffic_mistakes())
    check_loss_traffic(loss, tokens, "gloo: vocab_parallel_cross_entropy")
