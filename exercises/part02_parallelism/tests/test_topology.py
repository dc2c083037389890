"""Visible tests for part02_parallelism.topology: run with `pytest exercises/part02_parallelism`.

``golden`` replays recorded expectations and known mistakes' outputs (infralab.golden).
"""
import pytest

from infralab.testing import assert_equal

MODULE = "part02_parallelism.topology"
ORDER = "tp-cp-ep-dp-pp"
TP2_DP2 = {"tp": 2, "dp": 2}
THREE_D = {"tp": 2, "dp": 2, "pp": 3}  # 12 ranks


def as_ints(coords):
    return {k: int(v) for k, v in coords.items()}


def test_rank_3_of_tp2_dp2_is_tp1_dp1(impl, golden):
    got = as_ints(impl(MODULE).rank_to_coords(3, TP2_DP2, ORDER))
    assert_equal(got, {"tp": 1, "cp": 0, "ep": 0, "dp": 1, "pp": 0}, name="rank_to_coords(3, tp=2 dp=2)",
                 mistakes=golden.ref.coords_mistakes(3, TP2_DP2, ORDER))


@pytest.mark.parametrize("rank", [5, 10])
def test_the_first_name_of_the_order_varies_fastest(impl, golden, rank):
    got = as_ints(impl(MODULE).rank_to_coords(rank, THREE_D, ORDER))
    assert_equal(got, golden.ref.reference_coords(rank, THREE_D, ORDER), name=f"rank_to_coords({rank}, {THREE_D})",
                 mistakes=golden.ref.coords_mistakes(rank, THREE_D, ORDER))


def test_coords_to_rank_inverts_rank_to_coords(impl):
    m = impl(MODULE)
    back = [int(m.coords_to_rank(m.rank_to_coords(r, THREE_D, ORDER), THREE_D, ORDER)) for r in range(12)]
    assert_equal(back, list(range(12)), name="coords_to_rank(rank_to_coords(r))")


def test_tp_groups_are_neighbours_and_dp_groups_are_strided(impl, golden):
    m = impl(MODULE)
    assert_equal([list(map(int, g)) for g in m.group_ranks("tp", TP2_DP2, ORDER)], [[0, 1], [2, 3]], name=("tp groups",
                                                                                                           "tp 组"))
    assert_equal([list(map(int, g)) for g in m.group_ranks("dp", TP2_DP2, ORDER)], [[0, 2], [1, 3]], name=("dp groups",
                                                                                                           "dp 组"),
                 mistakes=golden.ref.groups_mistakes("dp", TP2_DP2, ORDER))


def test_groups_of_rank_7_in_a_3d_layout(impl, golden):
    got = {k: list(map(int, v)) for k, v in impl(MODULE).groups_of_rank(7, THREE_D, ORDER).items()}
    assert_equal(got, golden.ref.reference_groups_of_rank(7, THREE_D, ORDER), name="groups_of_rank(7)",
                 mistakes=golden.ref.groups_of_rank_mistakes(7, THREE_D, ORDER))


def test_an_order_missing_a_dimension_is_refused(impl):
    with pytest.raises(ValueError):
        impl(MODULE).parse_order("tp-dp-pp")
