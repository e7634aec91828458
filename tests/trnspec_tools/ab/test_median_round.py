"""The run that stands for an arm at a level is one real run: the round of median throughput,
the lower of the middle two for an even count."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trnspec_tools.ab.median_round import median_round


@dataclass(frozen=True)
class _Run:
    output_tokens_per_s: float
    round: int = 0


def test_the_median_round_is_the_middle_throughput_and_the_lower_of_an_even_count():
    assert median_round([_Run(v) for v in (300, 100, 200)]).output_tokens_per_s == 200
    assert median_round([_Run(v) for v in (400, 100, 300, 200)]).output_tokens_per_s == 200
    assert median_round([_Run(7)]).output_tokens_per_s == 7


def test_no_rounds_is_an_error_not_a_run():
    with pytest.raises(ValueError, match=r"^no rounds measured$"):
        median_round([])


@given(st.lists(st.floats(0.1, 1e4), min_size=1, max_size=20))
def test_the_pick_is_one_of_the_runs_with_as_many_below_as_above_or_one_more_above(values):
    runs = [_Run(v, i) for i, v in enumerate(values)]
    pick = median_round(runs)
    assert pick in runs
    below = sum(v < pick.output_tokens_per_s for v in values)
    above = sum(v > pick.output_tokens_per_s for v in values)
    assert below <= (len(values) - 1) // 2 and above <= len(values) // 2
