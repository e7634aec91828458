"""The order in which bench measures its arms: level by level, alternating.

At every concurrency level the arms are measured back to back, and their order is reversed at
every other level (target, baseline; baseline, target; ...). A host that drifts over the run
(a warming cache, a neighbour's burst, a cooling CPU) then weighs on both arms alike instead
of on whichever arm runs second, or last.
"""

from __future__ import annotations

from collections.abc import Sequence


def measurement_order(arms: Sequence[str], levels: Sequence[int]) -> list[tuple[int, str]]:
    """(level, arm) pairs in measuring order: every arm once at every level, the arms in the
    given order at the first level and reversed at the next, and so on."""
    order: list[tuple[int, str]] = []
    for i, c in enumerate(levels):
        at_level = list(arms) if i % 2 == 0 else list(reversed(arms))
        order.extend((c, arm) for arm in at_level)
    return order
