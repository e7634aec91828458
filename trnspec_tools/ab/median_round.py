"""The run that stands for an arm at a level: the round of median output throughput.

One real run, not an average of rounds, so every figure of it (TPOT, ITL, acceptance) comes from
the same measurement; with an even count the lower of the middle two, so the pick never favours
the faster side of the arm.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar


class _Throughput(Protocol):
    @property
    def output_tokens_per_s(self) -> float: ...


Run = TypeVar("Run", bound=_Throughput)


def median_round(runs: Sequence[Run]) -> Run:
    """The run of (lower) median output throughput."""
    if not runs:
        raise ValueError("no rounds measured")
    ordered = sorted(runs, key=lambda r: r.output_tokens_per_s)
    return ordered[(len(ordered) - 1) // 2]
