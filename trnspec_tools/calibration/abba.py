"""The order of the arms in alternated rounds: plain first in even rounds, speculative first in odd
ones (A B, B A, A B, ...), so a drift of the host (thermal, a neighbour, a warming cache) over a
level weighs on both arms alike and cancels in each pair of rounds."""

from __future__ import annotations

from typing import Literal

Arm = Literal["plain", "speculative"]
ARMS: tuple[Arm, Arm] = ("plain", "speculative")


def round_order(round_index: int) -> tuple[Arm, Arm]:
    """Which arm runs first and second in round `round_index` (0-based)."""
    if round_index < 0:
        raise ValueError(f"round_index={round_index} must be >= 0")
    return ARMS if round_index % 2 == 0 else (ARMS[1], ARMS[0])


def schedule(levels: tuple[int, ...], rounds: int) -> list[tuple[int, int, Arm]]:
    """Every run of a calibration in the order it happens: (concurrency, round, arm)."""
    return [(c, r, arm) for c in levels for r in range(rounds) for arm in round_order(r)]
