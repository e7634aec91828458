"""A figure over alternated rounds is its median with the interval it is known to: the range of
the rounds below five, the median's 90 % distribution-free interval from five on, and how often
such an interval holds the true median."""

from __future__ import annotations

import statistics
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trnspec_tools.ab.spread import INTERVAL, RANGE, coverage, median_interval, spread

ratios_st = st.lists(st.floats(0.01, 100.0), min_size=1, max_size=40)


def _coverage(n: int, j: int) -> float:
    return 1.0 - 2.0 * sum(comb(n, i) for i in range(j)) / 2**n


def test_spread_is_the_range_of_few_rounds_and_the_median_interval_of_many():
    few = spread([1.2, 1.0, 1.1])
    assert (few.median, few.low, few.high, few.method) == (1.1, 1.0, 1.2, RANGE)
    many = spread([1.0, 1.1, 1.2, 1.3, 1.4, 1.5])
    assert many.method == INTERVAL
    assert many.low <= many.median <= many.high


def test_from_eight_rounds_the_outermost_rounds_no_longer_bound_the_interval():
    s = spread([0.5, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 9.0])
    assert (s.low, s.high) == (1.1, 1.6)
    assert s.confidence == pytest.approx(1 - 2 * 9 / 256)


@pytest.mark.parametrize(("n", "confidence"), [(1, 0.0), (2, 0.5), (3, 0.75), (4, 0.875)])
def test_a_range_of_few_rounds_carries_its_true_coverage(n, confidence):
    assert spread([float(i) for i in range(1, n + 1)]).confidence == pytest.approx(confidence)


def test_one_round_has_no_spread():
    one = spread([0.9])
    assert (one.median, one.low, one.high, one.rounds) == (0.9, 0.9, 0.9, 1)


@given(ratios_st)
def test_the_interval_holds_the_median_and_lies_within_the_rounds(ratios):
    s = spread(ratios)
    assert min(ratios) <= s.low <= s.median <= s.high <= max(ratios)
    assert s.rounds == len(ratios) and s.values == tuple(ratios)
    assert 0.0 <= s.confidence <= 1.0
    assert (s.confidence >= 0.9) == (s.method == INTERVAL)


def test_no_rounds_and_non_finite_rounds_are_errors_not_figures():
    with pytest.raises(ValueError, match=r"^no rounds measured$"):
        spread([])
    with pytest.raises(ValueError, match="not finite"):
        spread([1.0, float("nan")])


def test_median_interval_is_the_order_statistics_with_the_asked_coverage():
    # n=8: (x_(2), x_(7)) covers 1 - 2*9/256 = 93 %; (x_(3), x_(6)) only 71 %.
    assert median_interval([8, 1, 7, 2, 6, 3, 5, 4], 0.9) == (2, 7)
    # n=10 at 0.9: (x_(3), x_(8)) covers 89 % < 90 %, so (x_(2), x_(9)) at 97.9 %.
    assert median_interval(list(range(1, 11)), 0.9) == (2, 9)
    assert median_interval(list(range(1, 11)), 0.85) == (3, 8)


def test_median_interval_needs_enough_values_for_the_coverage():
    assert median_interval([1.0, 2.0, 3.0, 4.0], 0.9) is None  # best is (x1, x4): 87.5 %
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0], 0.9) == (1.0, 5.0)  # 93.75 %
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0], 0.9375) == (1.0, 5.0)  # exactly at it
    assert median_interval([], 0.9) is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=40))
def test_the_median_interval_holds_the_median_with_the_tightest_sufficient_coverage(values):
    got = median_interval(values, 0.9)
    xs, n = sorted(values), len(values)
    if got is None:
        assert all(_coverage(n, j) < 0.9 for j in range(1, n // 2 + 1))
        return
    low, high = got
    assert low <= statistics.median(xs) <= high
    tightest = max(j for j in range(1, n // 2 + 1) if _coverage(n, j) >= 0.9)
    assert (low, high) == (xs[tightest - 1], xs[n - tightest])


@pytest.mark.parametrize(("n", "j"), [(2, 1), (5, 1), (8, 2), (10, 3), (40, 14)])
def test_coverage_is_one_minus_twice_the_binomial_tail(n, j):
    assert coverage(n, j) == pytest.approx(_coverage(n, j))


def test_a_spread_is_written_with_every_round_and_how_sure_it_is():
    s = spread([1.2, 1.0, 1.1])
    assert s.to_json() == {
        "median": 1.1,
        "low": 1.0,
        "high": 1.2,
        "rounds": 3,
        "method": RANGE,
        "confidence": 0.75,
        "values": [1.2, 1.0, 1.1],
    }
    assert s.text() == "1.10x [1.00-1.20]"


def test_holding_and_overlapping_include_the_ends():
    s = spread([0.9, 1.0])
    assert s.holds(1.0) and s.holds(0.9) and not s.holds(1.01) and not s.holds(0.89)
    assert s.overlaps(spread([1.0, 1.5])) and spread([1.0, 1.5]).overlaps(s)
    assert not s.overlaps(spread([1.01, 1.5])) and not spread([1.01, 1.5]).overlaps(s)


@pytest.mark.parametrize(("n", "j"), [(5, 1), (8, 2), (10, 2), (17, 5), (4, None), (1, None)])
def test_the_tightest_order_statistic_at_ninety_percent(n, j):
    from trnspec_tools.ab.spread import order_statistic

    assert order_statistic(n) == j
    assert order_statistic(10, 0.85) == 3
    assert order_statistic(10, 0.5) == 4  # (x_(4), x_(7)) covers 65.6 %
