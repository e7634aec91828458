"""A figure over alternated rounds: its median and the interval it is known to.

The interval is the median's distribution-free confidence interval (order statistics): the
rounds (x_(j), x_(n+1-j)) with the largest j whose binomial coverage 1 - 2 P(Bin(n, 1/2) < j) is
at least 90 %. From 5 to 7 rounds that is the lowest and highest round; from 8 rounds on it
leaves the outermost rounds out. Below 5 rounds no interval reaches 90 %, and the spread is the
range of the rounds, whose coverage (1 - 2^(1-n): 50 % at 2 rounds, 75 % at 3, 87.5 % at 4) is
carried in `confidence`, so a verdict from few rounds says how sure it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb
from statistics import median

#: the coverage every interval aims for
CONFIDENCE = 0.9
RANGE = "min-max of the rounds"
INTERVAL = "90% CI of the median"


def median_interval(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """Distribution-free confidence interval for the median: the order statistics (x_(j),
    x_(n+1-j)) with the largest j whose binomial coverage 1 - 2 P(Bin(n, 1/2) < j) is at least
    `confidence`. None when there are too few values for that coverage (n < 5 at 0.9)."""
    xs = sorted(values)
    j = order_statistic(len(xs), confidence)
    return None if j is None else (xs[j - 1], xs[len(xs) - j])


def order_statistic(n: int, confidence: float = CONFIDENCE) -> int | None:
    """The largest j whose (x_(j), x_(n+1-j)) covers the median of n values at `confidence`."""
    found = [j for j in range(1, n // 2 + 1) if coverage(n, j) >= confidence]
    return max(found) if found else None


def coverage(n: int, j: int) -> float:
    """How often (x_(j), x_(n+1-j)) of n values holds their median: 1 - 2 P(Bin(n, 1/2) < j)."""
    return 1.0 - 2.0 * sum(comb(n, i) for i in range(j)) / 2**n


@dataclass(frozen=True)
class Spread:
    """A figure over rounds: its median, the interval it is known to, and every round's value
    in round order."""

    median: float
    low: float
    high: float
    values: tuple[float, ...]
    #: INTERVAL (five rounds or more) or RANGE
    method: str
    #: how often an interval built this way holds the true median (0 for one round)
    confidence: float

    @property
    def rounds(self) -> int:
        return len(self.values)

    def overlaps(self, other: Spread) -> bool:
        return self.low <= other.high and other.low <= self.high

    def holds(self, x: float) -> bool:
        return self.low <= x <= self.high

    def text(self) -> str:
        return f"{self.median:.2f}x [{self.low:.2f}-{self.high:.2f}]"

    def to_json(self) -> dict[str, object]:
        return {
            "median": self.median,
            "low": self.low,
            "high": self.high,
            "rounds": self.rounds,
            "method": self.method,
            "confidence": self.confidence,
            "values": list(self.values),
        }


def spread(values: Sequence[float]) -> Spread:
    """The spread of a figure over rounds (see the module); every value must be finite."""
    if not values:
        raise ValueError("no rounds measured")
    vals = tuple(float(v) for v in values)
    if not all(math.isfinite(v) for v in vals):
        raise ValueError(f"a round's value is not finite: {vals}")
    n, xs = len(vals), sorted(vals)
    j = order_statistic(n)
    if j is not None:
        return Spread(median(vals), xs[j - 1], xs[n - j], vals, INTERVAL, coverage(n, j))
    return Spread(median(vals), xs[0], xs[-1], vals, RANGE, coverage(n, 1))
