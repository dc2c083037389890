"""assert_close where the expected value is infinite: only the same infinity passes."""
import math

import pytest
import torch

from infralab.testing import Mismatch, assert_close

INF = math.inf


@pytest.mark.parametrize("got", [0.0, 1e30, -INF, math.nan], ids=["zero", "large", "other-inf", "nan"])
def test_only_the_same_infinity_matches_an_expected_infinity(got):
    with pytest.raises(Mismatch):
        assert_close(torch.tensor([1.0, got]), torch.tensor([1.0, INF]))


def test_equal_infinities_and_close_finite_values_pass():
    assert_close(torch.tensor([-INF, INF, 1.0 + 1e-7]), torch.tensor([-INF, INF, 1.0]))
