"""Cross-check: part02_parallelism.topology (the reference solution) against torch's DeviceMesh.

``init_device_mesh("cpu", shape, mesh_dim_names=names)`` (torch 2.13) lays the ranks out
row-major, the **last** mesh dimension fastest. Our order string names the fastest dimension
first, so order "tp-cp-ep-dp-pp" is the mesh of shape (pp, dp, ep, cp, tp). For every rank and
every dimension, the ranks of the mesh's process group (``get_process_group_ranks``) must equal
our ``groups_of_rank``. The mesh runs for real, on gloo processes (4 ranks). Megatron-Core
(whose ``RankGenerator`` we follow) is not installed.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from infralab.distributed import run_trusted_calls
from infralab.testing import assert_equal

from solutions.part02_parallelism import topology  # noqa: E402

CASES = [({"tp": 2, "dp": 2}, "tp-cp-ep-dp-pp"), ({"tp": 2, "pp": 2}, "pp-dp-ep-cp-tp"),
         ({"cp": 2, "ep": 2}, "ep-tp-dp-cp-pp")]


def device_mesh_groups(sizes, order, rank, world_size):
    """On one gloo rank: the members of this rank's group in each dimension, from init_device_mesh."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    names = list(reversed(order.split("-")))  # slowest first, as the mesh lists them
    mesh = init_device_mesh("cpu", tuple(sizes.get(d, 1) for d in names), mesh_dim_names=tuple(names))
    return {d: sorted(dist.get_process_group_ranks(mesh.get_group(d))) for d in names}


@pytest.mark.timeout(240)
def test_groups_of_every_rank_equal_init_device_mesh():
    calls = [("device_mesh_groups", [(sizes, order, r, 4) for r in range(4)]) for sizes, order in CASES]
    for (sizes, order), results in zip(CASES, run_trusted_calls(Path(__file__), calls, 4)):
        for rank, result in enumerate(results):
            assert_equal(topology.groups_of_rank(rank, sizes, order), result.value,
                         name=f"{sizes} {order}: rank {rank}'s groups, ours vs DeviceMesh")
