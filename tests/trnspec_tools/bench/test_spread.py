"""A ratio over alternated rounds is reported as its median with the interval it is known to:
the range of a few rounds, the 90 % confidence interval of the median from five rounds on."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trnspec_tools.bench.spread import spread

ratios_st = st.lists(st.floats(0.01, 100.0), min_size=1, max_size=40)


def test_spread_is_the_range_of_few_rounds_and_the_median_interval_of_many():
    few = spread([1.2, 1.0, 1.1])
    assert (few.median, few.low, few.high, few.method) == (1.1, 1.0, 1.2, "min-max of the rounds")
    many = spread([1.0, 1.1, 1.2, 1.3, 1.4, 1.5])
    assert many.method == "90% CI of the median"
    assert many.low <= many.median <= many.high


def test_one_round_has_no_spread():
    one = spread([0.9])
    assert (one.median, one.low, one.high, one.rounds) == (0.9, 0.9, 0.9, 1)


@given(ratios_st)
def test_the_interval_holds_the_median_and_lies_within_the_rounds(ratios):
    s = spread(ratios)
    assert min(ratios) <= s.low <= s.median <= s.high <= max(ratios)
    assert s.rounds == len(ratios)


def test_no_rounds_is_an_error_not_a_figure():
    with pytest.raises(ValueError, match="no rounds"):
        spread([])
