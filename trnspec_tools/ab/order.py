"""The order of the arms: ABBA, one rule for every tool.

The arms run in the order given at even steps and reversed at odd ones (A B, B A, A B, ...),
where step = level index x rounds + round: the count runs on across levels, so a drift of the
host (a warming cache, a neighbour's burst, a cooling CPU) weighs on both arms alike and cancels
in each pair of steps, within a level with two or more rounds and across levels with one round
(bench's default). With an even number of rounds every level starts with the first arm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

#: the most rounds any tool's --rounds may ask for
MAX_ROUNDS = 1000

A = TypeVar("A")


def step_index(level_index: int, rounds: int, round_index: int) -> int:
    """The step of round `round_index` at the `level_index`-th level measured (0-based)."""
    return level_index * rounds + round_index


def round_order(arms: Sequence[A], step: int) -> tuple[A, ...]:
    """The arms in the order they run at `step` (step_index; 0-based)."""
    if step < 0:
        raise ValueError(f"step={step} must be >= 0")
    return tuple(arms) if step % 2 == 0 else tuple(reversed(arms))


@dataclass(frozen=True)
class Step(Generic[A]):
    """One measurement: an arm at a level, in its round (0, 1, ...) of that level."""

    level: int
    round: int
    arm: A


def measurement_steps(arms: Sequence[A], levels: Sequence[int], rounds: int) -> list[Step[A]]:
    """Every arm `rounds` times at every level, in measuring order: the levels in the order
    given, and in each round the arms in round_order."""
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ValueError(f"rounds must be 1..{MAX_ROUNDS}, not {rounds}")
    return [
        Step(c, r, arm)
        for i, c in enumerate(levels)
        for r in range(rounds)
        for arm in round_order(arms, step_index(i, rounds, r))
    ]
