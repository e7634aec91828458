"""The order in which bench measures its arms: level by level, alternating.

At every concurrency level the arms are measured back to back, `rounds` times, and their order
is reversed at every step (target, baseline; baseline, target; ...), the count running on across
levels. A host that drifts over the run (a warming cache, a neighbour's burst, a cooling CPU)
then weighs on both arms alike instead of on whichever arm runs second, or last; with two or more
rounds each level is an ABBA sequence whose rounds pair one run of each arm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: the most rounds bench's or tune's --rounds may ask for
MAX_ROUNDS = 1000


@dataclass(frozen=True)
class Step:
    """One measurement: an arm at a level, in its round (0, 1, ...) of that level."""

    level: int
    round: int
    arm: str


def measurement_steps(arms: Sequence[str], levels: Sequence[int], rounds: int = 1) -> list[Step]:
    """Every arm `rounds` times at every level, in measuring order: the levels in the given
    order, and at each (level, round) the arms in the given order or reversed, alternately."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, not {rounds}")
    steps: list[Step] = []
    for i, (c, r) in enumerate((c, r) for c in levels for r in range(rounds)):
        at_step = list(arms) if i % 2 == 0 else list(reversed(arms))
        steps.extend(Step(c, r, arm) for arm in at_step)
    return steps


def measurement_order(
    arms: Sequence[str], levels: Sequence[int], rounds: int = 1
) -> list[tuple[int, str]]:
    """(level, arm) pairs in measuring order (measurement_steps without the round)."""
    return [(s.level, s.arm) for s in measurement_steps(arms, levels, rounds)]
