"""Every tool measures its arms in one order: step by step, the arms in the order given at even
steps and reversed at odd ones (ABBA), the count running on across levels, so a drifting host
weighs on both arms alike within a level's rounds and across levels of one round each."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trnspec_tools.ab.order import MAX_ROUNDS, measurement_steps, round_order

ARMS = ("target", "baseline")
levels_st = st.lists(st.integers(1, 512), min_size=1, max_size=8, unique=True)


def test_two_rounds_at_one_level_are_an_abba_sequence():
    steps = measurement_steps(ARMS, [1], 2)
    assert [(s.round, s.arm) for s in steps] == [
        (0, "target"),
        (0, "baseline"),
        (1, "baseline"),
        (1, "target"),
    ]


def test_the_count_runs_on_across_levels():
    """Three rounds at level 1 end with the first arm first; level 8 starts with the second."""
    steps = measurement_steps(ARMS, [1, 8], 3)
    firsts = [(s.level, s.round, s.arm) for s in steps[:: len(ARMS)]]
    assert firsts == [
        (1, 0, "target"),
        (1, 1, "baseline"),
        (1, 2, "target"),
        (8, 0, "baseline"),
        (8, 1, "target"),
        (8, 2, "baseline"),
    ]


def test_one_round_per_level_alternates_the_first_arm_from_level_to_level():
    steps = measurement_steps(ARMS, [1, 8, 32], 1)
    assert [s.arm for s in steps] == [
        "target", "baseline", "baseline", "target", "target", "baseline",
    ]  # fmt: skip


@given(levels_st, st.integers(1, 3).map(lambda n: 2 * n))
def test_with_an_even_number_of_rounds_every_level_starts_with_the_first_arm(levels, n):
    steps = measurement_steps(ARMS, levels, n)
    assert all(s.arm == ARMS[0] for s in steps[:: len(ARMS) * n])


def test_one_arm_is_measured_once_per_level_in_level_order():
    steps = measurement_steps(["target"], [4, 1, 2], 1)
    assert [(s.level, s.arm) for s in steps] == [(4, "target"), (1, "target"), (2, "target")]


@given(levels_st, st.integers(1, 6))
def test_every_arm_runs_each_round_of_every_level_once_and_rounds_pair_back_to_back(levels, n):
    steps = measurement_steps(ARMS, levels, n)
    assert sorted((s.level, s.round, s.arm) for s in steps) == sorted(
        itertools.product(levels, range(n), ARMS)
    )
    pairs = [steps[i : i + len(ARMS)] for i in range(0, len(steps), len(ARMS))]
    for pair in pairs:
        assert len({(s.level, s.round) for s in pair}) == 1
    firsts = [pair[0].arm for pair in pairs]
    assert all(a != b for a, b in itertools.pairwise(firsts))
    assert [s.level for s in steps] == [c for c in levels for _ in range(n) for _ in ARMS]


@given(st.integers(0, 100))
def test_each_pair_of_rounds_puts_each_arm_first_once(r):
    assert round_order(ARMS, 2 * (r // 2)) == ARMS
    assert round_order(ARMS, 2 * (r // 2) + 1) == ARMS[::-1]


@pytest.mark.parametrize("rounds", [0, -1, MAX_ROUNDS + 1])
def test_rounds_outside_one_to_the_maximum_are_refused(rounds):
    with pytest.raises(ValueError, match="rounds"):
        measurement_steps(ARMS, [1], rounds)


def test_the_most_rounds_any_tool_may_ask_for_are_accepted():
    assert len(measurement_steps(ARMS, [1], MAX_ROUNDS)) == 2 * MAX_ROUNDS


def test_a_negative_step_has_no_order():
    with pytest.raises(ValueError, match="step"):
        round_order(ARMS, -1)
