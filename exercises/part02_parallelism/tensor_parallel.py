"""Tensor parallelism (Megatron-LM): column- and row-parallel linear layers, the MLP with one
all-reduce per direction, attention with the heads split across ranks, and a vocabulary-parallel
embedding and cross-entropy in which no rank ever holds the full logits.

Textbook 02 §2.2.2 (TP：Megatron 列并行 + 行并行的配对；g/f 算子的 AllReduce 位置).

Every function runs on every rank at once (SPMD, as in ``collectives``): it gets this rank's
slices of the weights, ``rank`` and ``world_size`` (n), and talks through ``torch.distributed``
collectives (``dist.all_reduce(t)`` sums ``t`` in place over all ranks; ``op=dist.ReduceOp.MAX``
takes the maximum). The tests run your functions on a simulated group (threads) and on gloo
(processes), at world sizes 1, 2 and 4, compare with the unsharded layer, and **count your
communication** (calls and bytes per collective kind): each function must move exactly what is
written under "Communication" below. Gathering a whole weight or the full logits gives the right
numbers and fails.

Layout (torch.nn.Linear's): a weight is ``(out_features, in_features)`` and ``y = x @ W.T + b``.
Shards are contiguous and equal: rank r holds ``torch.chunk(W, n, dim)[r]``; every split size
divides by n.

- **Column-parallel** linear: ``W`` split along ``out`` (dim 0). Each rank computes its slice of
  the output from the full input. Megatron's ``f``: identity forward, all-reduce backward (each
  rank holds only its slice's contribution to dL/dx).
- **Row-parallel** linear: ``W`` split along ``in`` (dim 1), the input arrives split along its
  last dim. Each rank computes a partial sum of the full output. Megatron's ``g``: all-reduce
  forward, identity backward. The bias is added **once**, after the all-reduce.
- **MLP** ``y = W2 gelu(W1 x + b1) + b2``: column-parallel W1 then row-parallel W2. The hidden
  activation never leaves its rank: one all-reduce forward (of y) and one backward (of dL/dx).
- **Attention**: Wq, Wk, Wv column-parallel by heads (rank r holds heads ``r*h/n .. (r+1)*h/n-1``,
  i.e. rows ``chunk(Wq, n, 0)[r]``), Wo row-parallel: one all-reduce.
- **Vocabulary-parallel** embedding and loss: rank r holds vocabulary rows
  ``[r * V/n, (r+1) * V/n)`` of the embedding, and the logits' columns of the same range. The
  softmax needs the max and the sum of exponentials over the whole vocabulary: all-reduce two
  per-token numbers (MAX, then SUM) instead of gathering ``tokens x V`` logits.

Backward functions are written by hand (no autograd across ranks): each returns the gradients
of this rank's inputs and weight slices; where the inputs are replicated (``x`` of a
column-parallel layer), the returned gradient is the full one, identical on every rank.

中文说明：
张量并行把每个权重切到各 rank 上。列并行（按输出维切 W）前向不通信、反向对 dL/dx 做 AllReduce（f 算子）；
行并行（按输入维切 W）前向对输出做 AllReduce、反向不通信（g 算子），偏置只在 AllReduce 之后加一次。
Megatron MLP = 列并行 + 行并行，中间激活不出 rank，前向、反向各一次 AllReduce。注意力按头切分 Wq/Wk/Wv、
Wo 行并行。词表并行：每个 rank 持有一段词表，交叉熵只需 AllReduce 每个 token 的最大值与指数和，
任何 rank 都不拼出完整 logits。测试会统计你的通信量（次数与字节数）：把整个权重 all-gather 过来虽然数值对，也判错。
"""
from __future__ import annotations

import torch
import torch.distributed as dist  # noqa: F401  (what your implementation talks through)


def column_parallel_linear(x: torch.Tensor, weight_shard: torch.Tensor, bias_shard: torch.Tensor | None,
                           rank: int, world_size: int) -> torch.Tensor:
    """This rank's output slice of a column-parallel linear layer.

    Args:
        x: (..., in), the full input, the same on every rank.
        weight_shard: (out / n, in) = ``torch.chunk(W, n, 0)[rank]``.
        bias_shard: (out / n,) = ``torch.chunk(b, n, 0)[rank]``, or None.
        rank, world_size: this rank and n.

    Returns:
        (..., out / n): ``x @ weight_shard.T + bias_shard``, columns ``[rank*out/n, (rank+1)*out/n)``
        of the full layer's output. Communication: none.

    中文：列并行前向：用完整输入算本 rank 的输出切片，不通信。
    """
    raise NotImplementedError("column_parallel_linear")


def column_parallel_linear_backward(grad_y_shard: torch.Tensor, x: torch.Tensor, weight_shard: torch.Tensor,
                                   rank: int, world_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of a column-parallel linear layer.

    Args:
        grad_y_shard: (..., out / n), dL/d(this rank's output slice).
        x: (..., in), the layer's (replicated) input.
        weight_shard: (out / n, in).

    Returns:
        ``(grad_x, grad_weight_shard, grad_bias_shard)``: (..., in) the **full** dL/dx (the same on
        every rank), (out / n, in), (out / n,) (sums over all leading dims).
        Communication: exactly one ``all_reduce`` of grad_x's size.

    中文：列并行反向：dL/dx 需要对各 rank 的部分和做一次 AllReduce；权重与偏置梯度只在本地算。
    """
    raise NotImplementedError("column_parallel_linear_backward")


def row_parallel_linear(x_shard: torch.Tensor, weight_shard: torch.Tensor, bias: torch.Tensor | None,
                        rank: int, world_size: int) -> torch.Tensor:
    """The full output of a row-parallel linear layer, on every rank.

    Args:
        x_shard: (..., in / n), this rank's slice of the input's last dim (``chunk(x, n, -1)[rank]``).
        weight_shard: (out, in / n) = ``torch.chunk(W, n, 1)[rank]``.
        bias: (out,), the full bias (the same on every rank), or None.

    Returns:
        (..., out): ``x @ W.T + b``. Communication: exactly one ``all_reduce`` of the output's size.
        Add the bias once (after the all-reduce), not on every rank.

    中文：行并行前向：各 rank 算部分和，AllReduce 一次，然后只加一次偏置。
    """
    raise NotImplementedError("row_parallel_linear")


def row_parallel_linear_backward(grad_y: torch.Tensor, x_shard: torch.Tensor, weight_shard: torch.Tensor,
                                 rank: int, world_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of a row-parallel linear layer.

    Args:
        grad_y: (..., out), dL/dy (the same on every rank).
        x_shard: (..., in / n); weight_shard: (out, in / n).

    Returns:
        ``(grad_x_shard, grad_weight_shard, grad_bias)``: (..., in / n), (out, in / n), (out,) (the
        full bias gradient, the same on every rank). Communication: none.

    中文：行并行反向不需要通信。
    """
    raise NotImplementedError("row_parallel_linear_backward")


def tp_mlp(x: torch.Tensor, w1_shard: torch.Tensor, b1_shard: torch.Tensor, w2_shard: torch.Tensor,
           b2: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Megatron's MLP ``y = gelu(x @ W1.T + b1) @ W2.T + b2`` (exact GELU, ``F.gelu``'s default).

    Args:
        x: (..., d), replicated. w1_shard: (f / n, d) = ``chunk(W1, n, 0)[rank]``; b1_shard: (f / n,);
        w2_shard: (d, f / n) = ``chunk(W2, n, 1)[rank]``; b2: (d,), replicated.

    Returns:
        (..., d), the same on every rank. Communication: exactly one ``all_reduce`` of (..., d).

    中文：Megatron MLP：W1 列并行、W2 行并行，中间激活留在本 rank，只做一次 AllReduce。
    """
    raise NotImplementedError("tp_mlp")


def tp_mlp_backward(grad_y: torch.Tensor, x: torch.Tensor, w1_shard: torch.Tensor, b1_shard: torch.Tensor,
                    w2_shard: torch.Tensor, rank: int, world_size: int) -> tuple[torch.Tensor, ...]:
    """Gradients of :func:`tp_mlp` (recompute the hidden activation from ``x``).

    Returns:
        ``(grad_x, grad_w1_shard, grad_b1_shard, grad_w2_shard, grad_b2)``: (..., d) full and the same
        on every rank, (f / n, d), (f / n,), (d, f / n), (d,). Communication: exactly one
        ``all_reduce`` of (..., d).

    中文：MLP 反向：只在最后对 dL/dx 做一次 AllReduce。
    """
    raise NotImplementedError("tp_mlp_backward")


def tp_attention(x: torch.Tensor, wq_shard: torch.Tensor, wk_shard: torch.Tensor, wv_shard: torch.Tensor,
                 wo_shard: torch.Tensor, n_heads: int, rank: int, world_size: int) -> torch.Tensor:
    """Causal multi-head self-attention (no biases) with the heads split across ranks.

    Args:
        x: (batch, seq, d), replicated.
        wq_shard, wk_shard, wv_shard: (n_heads / n * head_dim, d) = ``chunk(Wq, n, 0)[rank]`` etc.;
            rows ``[j * head_dim, (j+1) * head_dim)`` of the full Wq belong to head j.
        wo_shard: (d, n_heads / n * head_dim) = ``chunk(Wo, n, 1)[rank]``.
        n_heads: the total number of heads (divisible by n); head_dim = Wq rows / n_heads.

    Returns:
        (batch, seq, d): ``softmax(q k^T / sqrt(head_dim) + causal mask) v`` per head, heads
        concatenated, times ``Wo.T``; the same on every rank. Communication: exactly one
        ``all_reduce`` of (batch, seq, d).

    中文：按头切分的注意力：每个 rank 算自己那几个头，经 Wo（行并行）后 AllReduce 一次。
    """
    raise NotImplementedError("tp_attention")


def vocab_parallel_embedding(ids: torch.Tensor, weight_shard: torch.Tensor, rank: int,
                             world_size: int) -> torch.Tensor:
    """Embedding lookup with the vocabulary split across ranks.

    Args:
        ids: int64, any shape, values in ``[0, V)``, the same on every rank.
        weight_shard: (V / n, d): rows ``[rank * V/n, (rank+1) * V/n)`` of the full table.

    Returns:
        (*ids.shape, d): ``W[ids]``, the same on every rank. Each rank contributes the rows it holds
        and zeros elsewhere. Communication: exactly one ``all_reduce`` of the output's size.

    中文：词表并行嵌入：本 rank 只查自己词表范围内的 id（其余位置置零），再 AllReduce 一次。
    """
    raise NotImplementedError("vocab_parallel_embedding")


def vocab_parallel_cross_entropy(logits_shard: torch.Tensor, targets: torch.Tensor, rank: int,
                                 world_size: int) -> torch.Tensor:
    """Per-token cross-entropy from vocabulary-parallel logits, without gathering them.

    Args:
        logits_shard: (tokens, V / n) float: columns ``[rank * V/n, (rank+1) * V/n)`` of the logits.
        targets: (tokens,) int64 in ``[0, V)``, the same on every rank.

    Returns:
        (tokens,) of logits' dtype: ``logsumexp(logits) - logits[target]`` over the full
        vocabulary, the same on every rank; stable for large logits (subtract the global max).
        Communication: all-reduces of per-token numbers only (e.g. the max with
        ``ReduceOp.MAX``, the sum of exponentials, the target logit): at most 3 x tokens elements
        in all, never the logits.

    中文：词表并行交叉熵：AllReduce 全局最大值（MAX）、指数和与目标 logit（SUM），每次只传每个 token 一个数。
    """
    raise NotImplementedError("vocab_parallel_cross_entropy")


def vocab_parallel_cross_entropy_backward(logits_shard: torch.Tensor, targets: torch.Tensor,
                                          grad_loss: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """dL/d(logits_shard) for L = sum(grad_loss * cross_entropy).

    Args:
        logits_shard, targets: as in :func:`vocab_parallel_cross_entropy`; grad_loss: (tokens,).

    Returns:
        (tokens, V / n): ``(softmax(logits) - one_hot(target))[:, this rank's columns] *
        grad_loss[:, None]``. Communication: per-token all-reduces only (at most 3 x tokens elements).

    中文：交叉熵反向：softmax 减去 one-hot（只在目标 id 属于本 rank 时减），乘以上游梯度。
    """
    raise NotImplementedError("vocab_parallel_cross_entropy_backward")
