"""bench measures its arms level by level, back to back, their order reversed at every step (every
other level, or every round with --rounds), so a drifting host weighs on both arms alike."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trnspec_tools.bench.arm_order import measurement_order, measurement_steps

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


def test_two_rounds_at_one_level_are_an_abba_sequence():
    assert measurement_order(ARMS, [1], rounds=2) == [
        (1, "target"),
        (1, "baseline"),
        (1, "baseline"),
        (1, "target"),
    ]


@given(levels_st, st.integers(1, 6))
def test_every_arm_runs_each_round_of_every_level_once_and_rounds_pair_back_to_back(levels, n):
    steps = measurement_steps(ARMS, levels, n)
    assert sorted((s.level, s.round, s.arm) for s in steps) == sorted(
        itertools.product(levels, range(n), ARMS)
    )
    # the two runs of a round stand next to each other, and the first arm alternates
    pairs = [steps[i : i + len(ARMS)] for i in range(0, len(steps), len(ARMS))]
    for pair in pairs:
        assert len({(s.level, s.round) for s in pair}) == 1
    firsts = [pair[0].arm for pair in pairs]
    assert all(a != b for a, b in itertools.pairwise(firsts))
    # levels keep their order; rounds count up within a level
    assert [s.level for s in steps] == [c for c in levels for _ in range(n) for _ in ARMS]
    assert [s.round for s in steps if s.arm == "target"] == [r for _ in levels for r in range(n)]


@given(levels_st)
def test_one_round_is_the_order_without_rounds(levels):
    assert measurement_order(ARMS, levels, rounds=1) == measurement_order(ARMS, levels)
    assert {s.round for s in measurement_steps(ARMS, levels)} == {0}


def test_no_rounds_is_refused():
    with pytest.raises(ValueError, match="rounds"):
        measurement_steps(ARMS, [1], 0)
