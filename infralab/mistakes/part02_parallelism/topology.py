"""References and known mistakes for part02_parallelism.topology.

The reference is built another way than the solution's mixed-radix arithmetic: the ranks
``0 .. W-1`` laid out as a tensor whose *last* axis is the order's first name (what
``init_device_mesh`` does), read with ``unravel_index`` and ``movedim``.
"""
from __future__ import annotations

import math

import torch

DIMS = ("tp", "cp", "ep", "dp", "pp")

REVERSED_ORDER = ("the order read slowest-first: the first name of the order must vary fastest "
                  "(Megatron's convention)",
                  "把 order 当成第一个维度变化最慢：Megatron 约定写在最前面的维度变化最快")
CONTIGUOUS_GROUPS = ("every group made of consecutive ranks: only the fastest dimension's groups are contiguous; "
                     "the others are strided",
                     "所有通信组都取连续的 rank：只有变化最快的那一维的组是连续的，其余维度的组是跨步的")
NO_MODULO = ("coordinate = rank // stride without % size: the inner coordinates run past their size",
             "坐标 = rank // stride 却没有 % size：内层维度的坐标超出了它的大小")
STRIDE_OFF_BY_ONE = ("stride of a dimension includes its own size: the stride is the product of the sizes "
                     "*before* it in the order",
                     "维度的步长把自身大小也乘进去了：步长应是 order 中排在它之前的维度大小之积")


def full_sizes(sizes: dict) -> dict:
    return {d: int(sizes.get(d, 1)) for d in DIMS}


def grid(sizes: dict, order: str) -> tuple[torch.Tensor, list[str]]:
    """The ranks as a tensor with one axis per dimension, slowest first (the device-mesh layout)."""
    s, names = full_sizes(sizes), list(reversed(order.split("-")))
    return torch.arange(math.prod(s.values())).reshape([s[d] for d in names]), names


def reference_coords(rank: int, sizes: dict, order: str) -> dict:
    return all_coords(sizes, order)[rank]


def all_coords(sizes: dict, order: str) -> list[dict]:
    """The coordinates of every rank, in rank order."""
    g, names = grid(sizes, order)
    index = torch.unravel_index(g.reshape(-1), tuple(g.shape))
    return [{d: int(index[names.index(d)][r]) for d in DIMS} for r in range(g.numel())]


def reference_groups(dims: str, sizes: dict, order: str) -> list[list[int]]:
    g, names = grid(sizes, order)
    inside = dims.split("-")
    moved = g.movedim([names.index(d) for d in inside], list(range(g.dim() - len(inside), g.dim())))
    size = math.prod(moved.shape[g.dim() - len(inside):])
    return sorted(sorted(int(v) for v in row) for row in moved.reshape(-1, size))


def reference_groups_of_rank(rank: int, sizes: dict, order: str) -> dict:
    return {d: next(grp for grp in reference_groups(d, sizes, order) if rank in grp) for d in DIMS}


def reversed_order(order: str) -> str:
    return "-".join(reversed(order.split("-")))


def contiguous_groups(dims: str, sizes: dict) -> list[list[int]]:
    s = full_sizes(sizes)
    size, world = math.prod(s[d] for d in dims.split("-")), math.prod(s.values())
    return [list(range(k, k + size)) for k in range(0, world, size)]


def _strides(sizes: dict, order: str, inclusive: bool) -> dict:
    s, strides, stride = full_sizes(sizes), {}, 1
    for name in order.split("-"):
        stride_here = stride * s[name] if inclusive else stride
        strides[name] = stride_here
        stride *= s[name]
    return strides


def coords_mistakes(rank: int, sizes: dict, order: str) -> dict:
    s = full_sizes(sizes)
    plain, inclusive = _strides(sizes, order, False), _strides(sizes, order, True)
    return {
        REVERSED_ORDER: lambda: reference_coords(rank, sizes, reversed_order(order)),
        NO_MODULO: lambda: {d: rank // plain[d] for d in DIMS},
        STRIDE_OFF_BY_ONE: lambda: {d: rank // inclusive[d] % s[d] for d in DIMS},
    }


def groups_mistakes(dims: str, sizes: dict, order: str) -> dict:
    return {
        REVERSED_ORDER: lambda: reference_groups(dims, sizes, reversed_order(order)),
        CONTIGUOUS_GROUPS: lambda: contiguous_groups(dims, sizes),
    }


def groups_of_rank_mistakes(rank: int, sizes: dict, order: str) -> dict:
    return {
        REVERSED_ORDER: lambda: reference_groups_of_rank(rank, sizes, reversed_order(order)),
        CONTIGUOUS_GROUPS: lambda: {d: next(grp for grp in contiguous_groups(d, sizes) if rank in grp) for d in DIMS},
    }
