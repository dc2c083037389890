"""References, expected communication and known mistakes for part02_parallelism.tensor_parallel.

References are the unsharded layers in float64 with torch autograd; the shards are cut with
``torch.chunk`` as the specification says.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from infralab.distributed import Counts, nbytes

BIAS_ON_EVERY_RANK = ("the bias added on every rank before the all-reduce: it is counted n times",
                      "每个 rank 在 AllReduce 之前都加了偏置：偏置被加了 n 次")
PARTIAL_GRAD_X = ("dL/dx not all-reduced: each rank returns only its slice's contribution",
                  "dL/dx 没有做 AllReduce：每个 rank 只返回了自己那一片的贡献")
GATHERED_WEIGHT = ("a whole weight (or the full activation) all-gathered to every rank: right numbers, but that is "
                   "not tensor parallelism (memory and traffic of the unsharded layer)",
                   "把整个权重（或完整激活）all-gather 到每个 rank：数值对，但这不是张量并行（显存与通信量同未切分时一样）")
IDS_NOT_MASKED = ("ids outside this rank's vocabulary range looked up anyway (clamped or wrapped) instead of "
                  "contributing zeros",
                  "不属于本 rank 词表范围的 id 也查了表（被截断或回绕），而不是贡献 0")
LOCAL_MAX = ("each rank subtracts its own max before the sum of exponentials: the max must be all-reduced "
             "(ReduceOp.MAX) first",
             "每个 rank 减去的是自己的最大值：必须先用 ReduceOp.MAX 把最大值 AllReduce")
FULL_LOGITS = ("the logits gathered across ranks: a rank held tokens x V values",
               "把 logits 在各 rank 间收集了：某个 rank 持有了 tokens × V 个值")


def chunk(t: torch.Tensor, n: int, dim: int, rank: int) -> torch.Tensor:
    return torch.chunk(t, n, dim)[rank].contiguous()


def all_reduce_of(t: torch.Tensor, calls: int = 1) -> dict[str, Counts]:
    """The traffic of ``calls`` all-reduces of a tensor like ``t``."""
    return {"all_reduce": Counts(calls, calls * nbytes(t))}


NONE: dict[str, Counts] = {}


def gathers(traffic: dict[str, Counts]) -> bool:
    """A pattern for assert_traffic: any all-gather in the traffic."""
    return any(kind.startswith("all_gather") for kind in traffic)


def traffic_mistakes() -> dict:
    return {GATHERED_WEIGHT: gathers}


def f64(*ts):
    return [t.double().detach().requires_grad_(True) if t is not None else None for t in ts]


# --- references (float64, autograd), cast back to the inputs' dtype

def reference_linear(x, w, b, grad_y=None):
    """(y, grad_x, grad_w, grad_b) of the unsharded ``F.linear``."""
    x64, w64, b64 = f64(x, w, b)
    y = F.linear(x64, w64, b64)
    if grad_y is None:
        return y.to(x.dtype)
    grads = torch.autograd.grad(y, [x64, w64] + ([b64] if b is not None else []), grad_y.double())
    return [g.to(x.dtype) for g in grads]


def reference_mlp(x, w1, b1, w2, b2, grad_y=None):
    x64, w164, b164, w264, b264 = f64(x, w1, b1, w2, b2)
    y = F.linear(F.gelu(F.linear(x64, w164, b164)), w264, b264)
    if grad_y is None:
        return y.to(x.dtype)
    return [g.to(x.dtype) for g in torch.autograd.grad(y, [x64, w164, b164, w264, b264], grad_y.double())]


def reference_attention(x, wq, wk, wv, wo, n_heads):
    x64, q, k, v, o = (t.double() for t in (x, wq, wk, wv, wo))
    b, s, d = x.shape
    hd = wq.shape[0] // n_heads

    def heads(w):
        return F.linear(x64, w).reshape(b, s, n_heads, hd).transpose(1, 2)

    scores = heads(q) @ heads(k).transpose(-1, -2) / math.sqrt(hd)
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    out = (scores.softmax(-1) @ heads(v)).transpose(1, 2).reshape(b, s, n_heads * hd)
    return F.linear(out, o).to(x.dtype)


def reference_cross_entropy(logits, targets, grad_loss=None):
    l64 = logits.double().requires_grad_(True)
    loss = F.cross_entropy(l64, targets, reduction="none")
    if grad_loss is None:
        return loss.to(logits.dtype)
    (g,) = torch.autograd.grad(loss, l64, grad_loss.double())
    return g.to(logits.dtype)


# --- known mistakes' outputs

def row_mistakes(x, w, b, n):
    return {BIAS_ON_EVERY_RANK: lambda: (reference_linear(x, w, b).double() + (n - 1) * b.double()).to(x.dtype)}


def column_backward_mistakes(grad_y_shard, w_shard):
    return {PARTIAL_GRAD_X: lambda: (grad_y_shard.double() @ w_shard.double()).to(grad_y_shard.dtype)}


def embedding_mistakes(ids, w, n):
    """Out-of-range ids clamped into this rank's range, and the ranks' lookups summed."""
    rows = w.shape[0] // n

    def clamped():
        return sum(chunk(w, n, 0, r)[(ids - r * rows).clamp(0, rows - 1)] for r in range(n))

    def wrapped():
        return sum(chunk(w, n, 0, r)[(ids - r * rows) % rows] for r in range(n))

    return {IDS_NOT_MASKED: clamped, IDS_NOT_MASKED[0] + " ": wrapped}


def local_max_loss(logits, targets, n):
    """The loss when each rank shifts by its own max and the shifted sums are added."""
    shards = torch.chunk(logits.double(), n, -1)
    maxes = [s.amax(-1, keepdim=True) for s in shards]
    sum_exp = sum(torch.exp(s - m).sum(-1) for s, m in zip(shards, maxes))
    target = logits.double().gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (torch.log(sum_exp) + maxes[0].squeeze(-1) - target).to(logits.dtype)


def cross_entropy_mistakes(logits, targets, n):
    return {LOCAL_MAX: lambda: local_max_loss(logits, targets, n)}


def loss_traffic_ok(traffic: dict[str, Counts], tokens: int) -> bool:
    """Per-token all-reduces only: at most 3 x tokens elements of 8 bytes in all, no gathers."""
    return not gathers(traffic) and sum(c.bytes for c in traffic.values()) <= 3 * tokens * 8


def check_loss_traffic(results, tokens: int, name: str) -> None:
    from infralab.distributed import describe_traffic
    from infralab.i18n import tr
    from infralab.testing import Mismatch

    for rank, result in enumerate(results):
        t = result.traffic()
        if not loss_traffic_ok(t, tokens):
            raise Mismatch(tr("part02_tp.loss_traffic", name=name, rank=rank, got=describe_traffic(t), tokens=tokens),
                           FULL_LOGITS)
