"""Cross-check: part02_parallelism.tensor_parallel (the reference solution) against torch's own
tensor parallelism, ``torch.distributed.tensor.parallel`` (torch 2.13), on gloo processes.

An MLP ``Linear(d, f) -> GELU -> Linear(f, d)`` is parallelised with ``parallelize_module(mlp,
mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})`` (Megatron's pairing). On every rank:
DTensor's local weight shards are ``torch.chunk(W, n, 0)[rank]`` (Colwise) and
``torch.chunk(W, n, 1)[rank]`` (Rowwise), our layout; its output and the gradients of the input
and of the local shards equal our ``tp_mlp`` / ``tp_mlp_backward`` run in the same process on
the same gloo group; and a lone ColwiseParallel / RowwiseParallel linear equals our
column-/row-parallel layer. Megatron-LM itself is not installed.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from infralab.distributed import run_trusted_calls
from infralab.testing import assert_close

from solutions.part02_parallelism import tensor_parallel as tp  # noqa: E402

D, F_HIDDEN, TOKENS = 8, 16, 5


def dtensor_and_ours(seed, rank, world_size):
    """On one gloo rank: (DTensor's results, ours) for the MLP and a lone column and row layer."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(seed)  # the same full weights and inputs on every rank
    mlp = torch.nn.Sequential(torch.nn.Linear(D, F_HIDDEN), torch.nn.GELU(), torch.nn.Linear(F_HIDDEN, D))
    x, grad_y = torch.randn(TOKENS, D), torch.randn(TOKENS, D)
    (w1, b1), (w2, b2) = [(m.weight.detach().clone(), m.bias.detach().clone()) for m in (mlp[0], mlp[2])]
    mesh = init_device_mesh("cpu", (world_size,))
    parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    xr = x.clone().requires_grad_(True)
    y = mlp(xr)
    y.backward(grad_y)
    theirs = {"shards": [mlp[0].weight.to_local(), mlp[0].bias.to_local(), mlp[2].weight.to_local()],
              "y": y.detach(), "grads": [xr.grad, mlp[0].weight.grad.to_local(), mlp[0].bias.grad.to_local(),
                                         mlp[2].weight.grad.to_local(), mlp[2].bias.grad.full_tensor()]}
    shards = [torch.chunk(w1, world_size, 0)[rank], torch.chunk(b1, world_size, 0)[rank],
              torch.chunk(w2, world_size, 1)[rank]]
    ours = {"shards": shards, "y": tp.tp_mlp(x, *shards, b2, rank, world_size),
            "grads": list(tp.tp_mlp_backward(grad_y, x, *shards, rank, world_size))}
    colwise = parallelize_module(torch.nn.Linear(D, F_HIDDEN), mesh, ColwiseParallel())
    rowwise = parallelize_module(torch.nn.Linear(F_HIDDEN, D), mesh, RowwiseParallel())
    h = torch.randn(TOKENS, F_HIDDEN)
    h_shard = torch.chunk(h, world_size, -1)[rank]  # RowwiseParallel's input: the local slice of the last dim
    theirs["column"], theirs["row"] = colwise(x).detach(), rowwise(h_shard).detach()
    ours["column"] = tp.column_parallel_linear(x, colwise.weight.to_local(), colwise.bias.to_local(), rank, world_size)
    ours["row"] = tp.row_parallel_linear(h_shard, rowwise.weight.to_local(),
                                         rowwise.bias.full_tensor(), rank, world_size)
    return {"theirs": theirs, "ours": {k: v if isinstance(v, list) else v.detach() for k, v in ours.items()}}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("n", [2])
def test_megatron_mlp_equals_colwise_then_rowwise_parallel(n):
    (results,) = run_trusted_calls(Path(__file__), [("dtensor_and_ours", [(7, r, n) for r in range(n)])], n)
    for rank, result in enumerate(results):
        theirs, ours = result.value["theirs"], result.value["ours"]
        for i, (a, b) in enumerate(zip(theirs["shards"], ours["shards"])):
            assert_close(b, a, name=f"rank {rank}: weight shard {i}, torch.chunk vs DTensor's to_local()")
        assert_close(ours["y"], theirs["y"], name=f"rank {rank}: MLP output, ours vs DTensor")
        for name, a, b in zip(["x", "w1", "b1", "w2", "b2"], theirs["grads"], ours["grads"]):
            assert_close(b.detach(), a, name=f"rank {rank}: grad {name}, ours vs DTensor")
        # ColwiseParallel's default output is sharded on the last dim: our output slice
        assert_close(ours["column"], theirs["column"], name=f"rank {rank}: column-parallel output slice")
        assert_close(ours["row"], theirs["row"], name=f"rank {rank}: row-parallel output")
