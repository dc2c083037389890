"""Rank topology of 5-D parallelism: a mixed-radix number whose lowest digit is the first name of the order."""
from __future__ import annotations

import itertools
import math

DIMS = ("tp", "cp", "ep", "dp", "pp")


def parse_order(order: str) -> list[str]:
    names = order.split("-") if isinstance(order, str) else []
    if sorted(names) != sorted(DIMS):
        raise ValueError(f"order {order!r} must name each of {'-'.join(DIMS)} exactly once, joined by '-'")
    return names


def _sizes(sizes: dict[str, int]) -> dict[str, int]:
    unknown = set(sizes) - set(DIMS)
    if unknown or any(int(s) < 1 for s in sizes.values()):
        raise ValueError(f"sizes {sizes!r}: keys must be among {DIMS} and sizes >= 1")
    return {d: int(sizes.get(d, 1)) for d in DIMS}


def _strides(sizes: dict[str, int], order: str) -> dict[str, int]:
    """stride of each dimension: the product of the sizes of the names before it in the order."""
    strides, stride = {}, 1
    for name in parse_order(order):
        strides[name] = stride
        stride *= sizes[name]
    return strides


def rank_to_coords(rank: int, sizes: dict[str, int], order: str) -> dict[str, int]:
    s = _sizes(sizes)
    if not 0 <= rank < math.prod(s.values()):
        raise ValueError(f"rank {rank} is outside the world of {math.prod(s.values())} ranks")
    strides = _strides(s, order)
    return {d: rank // strides[d] % s[d] for d in DIMS}


def coords_to_rank(coords: dict[str, int], sizes: dict[str, int], order: str) -> int:
    s = _sizes(sizes)
    if set(coords) - set(DIMS) or any(not 0 <= coords[d] < s[d] for d in coords):
        raise ValueError(f"coordinates {coords!r} outside the sizes {s}")
    strides = _strides(s, order)
    return sum(coords.get(d, 0) * strides[d] for d in DIMS)


def _dims(dims: str) -> list[str]:
    names = dims.split("-")
    if len(set(names)) != len(names) or set(names) - set(DIMS):
        raise ValueError(f"dims {dims!r}: names among {DIMS}, each at most once, joined by '-'")
    return names


def group_ranks(dims: str, sizes: dict[str, int], order: str) -> list[list[int]]:
    s, inside = _sizes(sizes), _dims(dims)
    outside = [d for d in DIMS if d not in inside]
    groups = []
    for fixed in itertools.product(*(range(s[d]) for d in outside)):
        base = dict(zip(outside, fixed))
        members = [coords_to_rank({**base, **dict(zip(inside, free))}, s, order)
                   for free in itertools.product(*(range(s[d]) for d in inside))]
        groups.append(sorted(members))
    return sorted(groups)


def groups_of_rank(rank: int, sizes: dict[str, int], order: str) -> dict[str, list[int]]:
    return {d: next(g for g in group_ranks(d, sizes, order) if rank in g) for d in DIMS}
