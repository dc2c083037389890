"""assert_close: only the same infinity matches an infinity, names in the run's language, the margin log."""
import math

import pytest
import torch

from infralab.engine_checks import assert_same_tokens
from infralab.stats import assert_draws_follow
from infralab.soundness import closest_calls
from infralab.testing import MARGIN_LOG, Mismatch, assert_all_written, assert_close, assert_equal, check_tensor, poisoned

INF = math.inf


@pytest.mark.parametrize("got", [0.0, 1e30, -INF, math.nan], ids=["zero", "large", "other-inf", "nan"])
def test_only_the_same_infinity_matches_an_expected_infinity(got):
    with pytest.raises(Mismatch):
        assert_close(torch.tensor([1.0, got]), torch.tensor([1.0, INF]))


def test_equal_infinities_and_close_finite_values_pass():
    assert_close(torch.tensor([-INF, INF, 1.0 + 1e-7]), torch.tensor([-INF, INF, 1.0]))


NAME = ("row sums", "行和")


@pytest.mark.parametrize("lang, shown", [("en", "row sums"), ("zh", "行和")])
@pytest.mark.parametrize("check", [
    lambda: assert_close(torch.ones(3), torch.zeros(3), name=NAME),
    lambda: assert_close(torch.ones(2), torch.zeros(3), name=NAME),
    lambda: assert_equal(torch.ones(3, dtype=torch.int64), torch.zeros(3, dtype=torch.int64), name=NAME),
    lambda: assert_equal([1], [2], name=NAME),
    lambda: check_tensor([1.0], name=NAME),
    lambda: assert_all_written(poisoned((2,), torch.float32), name=NAME),
    lambda: assert_draws_follow(torch.tensor([5]), torch.ones(2) / 2, name=NAME),
    lambda: assert_same_tokens([[1, 2]], [([1, 3], [1.0, 1.0])], what=NAME),
], ids=["differ", "shape", "equal-tensor", "equal-list", "not-a-tensor", "unwritten", "draws", "tokens"])
def test_a_name_pair_is_shown_in_the_run_language(check, lang, shown, monkeypatch):
    monkeypatch.setenv("INFRALAB_LANG", lang)
    with pytest.raises(Mismatch) as failure:
        check()
    text = str(failure.value)
    assert shown in text and "('row sums'" not in text, text


def test_a_plain_name_is_shown_as_written(monkeypatch):
    monkeypatch.setenv("INFRALAB_LANG", "zh")
    with pytest.raises(Mismatch, match="y = x Wᵀ"):
        assert_close(torch.ones(3), torch.zeros(3), name="y = x Wᵀ")


def test_the_margin_log_records_how_much_tolerance_each_check_used(monkeypatch, tmp_path):
    """INFRALAB_MARGIN_LOG (benchmarks/soundness_sweep.py --margins): one line per tolerance check;
    exact checks have no margin and are not logged. closest_calls keeps the solution's, worst first."""
    log = tmp_path / "margins.jsonl"
    monkeypatch.setenv(MARGIN_LOG, str(log))
    for case, atol in (("a.py::t[solutions-seed7]", None), ("a.py::t[solutions-seed8]", None),
                       ("a.py::u[2-solutions]", 1e-3), ("a.py::u[2-mutant:p.e:wrong]", 1e-3), ("a.py::v[seed3]", None)):
        monkeypatch.setenv("PYTEST_CURRENT_TEST", f"{case} (call)")
        assert_close(torch.tensor([1.0 + 5e-6]), torch.tensor([1.0]), atol=atol, rtol=None if atol is None else 0.0)
    assert_equal(torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64))
    rows = closest_calls(log)
    assert [(r["test"], r["checks"], r["tolerance"]) for r in rows] == [
        ("a.py::t", 2, "table"), ("a.py::u[2]", 1, "the test's own")]
    assert rows[0]["used"] == rows[0]["median"] == rows[0]["p99"] == pytest.approx(5e-6 / 2e-5, rel=0.05)
    assert rows[1]["used"] == pytest.approx(5e-3, rel=0.05)
    # a run of one target (benchmarks/margin_tail.py): every case counts, the sweep's seed id dropped
    assert {r["test"] for r in closest_calls(log, solution_only=False)} == {"a.py::t", "a.py::u[2]", "a.py::v",
                                                                             "a.py::u[2-mutant:p.e:wrong]"}
