"""Hidden tests for part02_parallelism.topology: every order, random sizes, against a device-mesh-style reference."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infralab.mistakes.part02_parallelism.topology import (
    DIMS, all_coords, coords_mistakes, groups_mistakes, groups_of_rank_mistakes, reference_groups,
    reference_groups_of_rank,
)
from infralab.i18n import tr
from infralab.testing import Mismatch, assert_equal

MODULE = "part02_parallelism.topology"

orders = st.permutations(DIMS).map("-".join)
sizes_st = st.fixed_dictionaries({}, optional={d: st.integers(1, 3) for d in DIMS}).filter(
    lambda s: math.prod(s.values()) <= 36)
dims_st = st.lists(st.sampled_from(DIMS), min_size=1, max_size=3, unique=True).map("-".join)


def ints(value, name):
    """The answer as plain ints (dicts of ints, lists of lists of ints)."""
    def whole(v):
        if int(v) != v:  # 1.5 is not a coordinate, whatever int() makes of it
            raise ValueError(v)
        return int(v)

    try:
        if isinstance(value, dict):
            return {str(k): (list(map(whole, v)) if isinstance(v, (list, tuple)) else whole(v)) for k, v in value.items()}
        return [list(map(whole, g)) for g in value]
    except (TypeError, ValueError) as exc:
        raise Mismatch(tr("part02_tp.not_ints", name=name, got=repr(value)[:200])) from exc


def world(sizes):
    return math.prod(sizes.values())


@pytest.mark.weight(2)
@given(sizes=sizes_st, order=orders)
def test_rank_to_coords_of_every_rank_for_any_order(impl, sizes, order):
    m = impl(MODULE)
    for rank, want in enumerate(all_coords(sizes, order)):
        assert_equal(ints(m.rank_to_coords(rank, sizes, order), "rank_to_coords"), want, name=f"rank_to_coords({rank}, {sizes}, {order!r})",
                     mistakes=coords_mistakes(rank, sizes, order))


@given(sizes=sizes_st, order=orders)
def test_coords_to_rank_is_the_inverse(impl, sizes, order):
    m = impl(MODULE)
    for rank, coords in enumerate(all_coords(sizes, order)):
        got = m.coords_to_rank(coords, sizes, order)
        assert_equal(int(got), rank, name=(f"coords_to_rank(coords of rank {rank}, {sizes}, {order!r})",
                                           f"coords_to_rank(rank {rank} 的坐标, {sizes}, {order!r})"))
        sparse = {d: c for d, c in coords.items() if c}  # a name left out is 0
        assert_equal(int(m.coords_to_rank(sparse, sizes, order)), rank,
                     name=(f"coords_to_rank({sparse}, {sizes}, {order!r}) (the names left out are 0)",
                           f"coords_to_rank({sparse}, {sizes}, {order!r})（省略的维度坐标为 0）"))


@pytest.mark.weight(2)
@given(sizes=sizes_st, order=orders, dims=dims_st)
def test_group_ranks_partition_the_world(impl, sizes, order, dims):
    got = ints(impl(MODULE).group_ranks(dims, sizes, order), "group_ranks")
    assert_equal(got, reference_groups(dims, sizes, order), name=f"group_ranks({dims!r}, {sizes}, {order!r})",
                 mistakes=groups_mistakes(dims, sizes, order))


@given(sizes=sizes_st, order=orders, data=st.data())
def test_groups_of_rank_names_its_group_in_each_dimension(impl, sizes, order, data):
    rank = data.draw(st.integers(0, world(sizes) - 1))
    got = ints(impl(MODULE).groups_of_rank(rank, sizes, order), "groups_of_rank")
    assert_equal(got, reference_groups_of_rank(rank, sizes, order), name=f"groups_of_rank({rank}, {sizes}, {order!r})",
                 mistakes=groups_of_rank_mistakes(rank, sizes, order))


def test_megatron_example_tp2_pp2_dp2(impl):
    """8 ranks, order tp-cp-ep-dp-pp: tp pairs (0,1), dp pairs (0,2), pp pairs (0,4)."""
    sizes, order = {"tp": 2, "pp": 2, "dp": 2}, "tp-cp-ep-dp-pp"
    m = impl(MODULE)
    for dims, want in {"tp": [[0, 1], [2, 3], [4, 5], [6, 7]], "dp": [[0, 2], [1, 3], [4, 6], [5, 7]],
                       "pp": [[0, 4], [1, 5], [2, 6], [3, 7]], "tp-dp": [[0, 1, 2, 3], [4, 5, 6, 7]]}.items():
        assert_equal(ints(m.group_ranks(dims, sizes, order), "group_ranks"), want, name=f"{dims} groups",
                     mistakes=groups_mistakes(dims, sizes, order))


@pytest.mark.parametrize("call", [
    lambda m: m.parse_order("tp-cp-ep-dp-dp"), lambda m: m.parse_order("tp,cp,ep,dp,pp"),
    lambda m: m.rank_to_coords(4, {"tp": 2, "dp": 2}, "tp-cp-ep-dp-pp"),
    lambda m: m.rank_to_coords(0, {"tp": 0}, "tp-cp-ep-dp-pp"),
    lambda m: m.rank_to_coords(-1, {"tp": 2}, "tp-cp-ep-dp-pp"),
    lambda m: m.coords_to_rank({"tp": -1}, {"tp": 2}, "tp-cp-ep-dp-pp"),
    lambda m: m.coords_to_rank({}, {"tp": 0}, "tp-cp-ep-dp-pp"),
    lambda m: m.group_ranks("tp", {"tp": 2, "dp": 0}, "tp-cp-ep-dp-pp"),
    lambda m: m.coords_to_rank({}, {"pp": -1}, "tp-cp-ep-dp-pp"),
    lambda m: m.rank_to_coords(0, {"xp": 2}, "tp-cp-ep-dp-pp"),
    lambda m: m.coords_to_rank({"tp": 2}, {"tp": 2}, "tp-cp-ep-dp-pp"),
    lambda m: m.group_ranks("tp-tp", {"tp": 2}, "tp-cp-ep-dp-pp"),
    lambda m: m.group_ranks("sp", {"tp": 2}, "tp-cp-ep-dp-pp"),
])
def test_bad_orders_sizes_ranks_and_dims_raise_value_error(impl, call):
    with pytest.raises(ValueError):
        call(impl(MODULE))
