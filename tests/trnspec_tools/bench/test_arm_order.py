"""bench measures its arms level by level, back to back, their order reversed at every other
level, so a drifting host weighs on both arms alike."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from trnspec_tools.bench.arm_order import measurement_order

ARMS = ("target", "baseline")
levels_st = st.lists(st.integers(1, 512), min_size=1, max_size=8, unique=True)


def test_two_levels_read_target_baseline_then_baseline_target():
    assert measurement_order(ARMS, [1, 8]) == [
        (1, "target"),
        (1, "baseline"),
        (8, "baseline"),
        (8, "target"),
    ]


def test_one_arm_is_measured_once_per_level_in_level_order():
    assert measurement_order(["target"], [4, 1, 2]) == [(4, "target"), (1, "target"), (2, "target")]


@given(levels_st)
def test_every_arm_is_measured_once_at_every_level_and_the_levels_keep_their_order(levels):
    order = measurement_order(ARMS, levels)
    assert sorted(order) == sorted(itertools.product(levels, ARMS))
    assert [c for c, _ in order] == [c for c in levels for _ in ARMS]


@given(levels_st)
def test_each_pair_of_consecutive_levels_puts_each_arm_first_once(levels):
    order = measurement_order(ARMS, levels)
    firsts = [order[i][1] for i in range(0, len(order), len(ARMS))]
    for a, b in itertools.pairwise(firsts):
        assert a != b
    assert firsts[0] == ARMS[0]
