"""Cross-check: part02_parallelism.zero's partition rule (the reference solution) against FSDP2.

FSDP2 (``torch.distributed.fsdp.fully_shard``, torch 2.13) shards each parameter on dim 0 with
``torch.chunk``: rank r holds chunk r, of ceil(d0 / n) rows, and nothing past the number of
chunks. Our rule flattens the parameters into one buffer and gives rank r the range
``[r * S, (r + 1) * S)`` with ``S = ceil(total / n)``. For a single 1-D parameter (the flat buffer
itself) the two must agree element for element: the valid part of our shard is FSDP2's local
shard, and ``owner_map`` names exactly those elements. FSDP2 runs for real, on gloo processes.
DeepSpeed (ZeRO-1/2 flat buffers, padded to 2 x world_size for NCCL alignment) is not installed.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from infralab.distributed import run_trusted_calls
from infralab.testing import assert_close, assert_equal

from solutions.part02_parallelism import zero  # noqa: E402


def fsdp2_local_shards(tensors, rank, world_size):
    """On one gloo rank: FSDP2's local shard of each tensor, each wrapped as a parameter."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    module = torch.nn.Module()
    for i, t in enumerate(tensors):
        module.register_parameter(f"p{i}", torch.nn.Parameter(t.clone()))
    fully_shard(module, mesh=init_device_mesh("cpu", (world_size,)))
    return [getattr(module, f"p{i}").to_local().detach().clone() for i in range(len(tensors))]


CASES = {2: [[5, 2], [4, 4]], 3: [[4, 3, 3], [2], [1, 1, 1, 1]]}  # world size -> parameter numels


@pytest.mark.timeout(240)
@pytest.mark.parametrize("n", sorted(CASES))
def test_zero_partition_of_the_flat_buffer_equals_fsdp2_sharding(n):
    cases = [(numels, [torch.randn(k) for k in numels]) for numels in CASES[n]]
    flats = [zero.flatten_and_pad(params, n)[:sum(numels)] for numels, params in cases]  # valid region: one 1-D parameter
    calls = [("fsdp2_local_shards", [([flat], r, n) for r in range(n)]) for flat in flats]
    for (numels, _), flat, shards in zip(cases, flats, run_trusted_calls(Path(__file__), calls, n)):
        total, size = sum(numels), zero.shard_size(sum(numels), n)
        pieces = zero.owner_map(numels, n)
        offsets = [sum(numels[:i]) for i in range(len(numels))]
        for rank, result in enumerate(shards):
            fsdp_shard = result.value[0]
            ours = flat[rank * size:min((rank + 1) * size, total)]
            assert_close(fsdp_shard, ours, name=f"{numels} on {n} ranks, rank {rank}: FSDP2 shard vs ours")
            owned = [offsets[i] + e for r, i, s, end in pieces if r == rank for e in range(s, end)]
            assert_equal(owned, list(range(rank * size, rank * size + fsdp_shard.numel())),
                         name=f"{numels} on {n} ranks, rank {rank}: flat indices owner_map gives it")
