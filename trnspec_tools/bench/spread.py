"""A ratio measured over alternated rounds, and the interval it is known to.

Two arms measured side by side, round by round with their order alternated, give one ratio per
round (candidate tok/s / reference tok/s); the rounds give its spread. bench (`--rounds`) and
tune (`--rounds`, `--schedule`) report every such ratio this way: the median, with the 90 %
confidence interval of the median (order statistics, stats.median_interval) from five rounds on,
else the lowest and highest round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from trnspec_tools.bench.stats import median_interval


@dataclass(frozen=True)
class Spread:
    """A ratio measured over alternated rounds: its median and the interval it is known to."""

    median: float
    low: float
    high: float
    rounds: int
    #: "90% CI of the median" (five rounds or more) or "min-max of the rounds"
    method: str

    def overlaps(self, other: Spread) -> bool:
        return self.low <= other.high and other.low <= self.high

    def text(self) -> str:
        return f"{self.median:.2f}x [{self.low:.2f}-{self.high:.2f}]"


def spread(ratios: Sequence[float]) -> Spread:
    """The median of the rounds' ratios and its 90 % interval (order statistics, five rounds or
    more), else the range of the rounds; a single round has no spread (low = high)."""
    if not ratios:
        raise ValueError("no rounds measured")
    mid = median(ratios)
    interval = median_interval(ratios, 0.9)
    if interval is not None:
        return Spread(mid, interval[0], interval[1], len(ratios), "90% CI of the median")
    return Spread(mid, min(ratios), max(ratios), len(ratios), "min-max of the rounds")
