"""How each measured window did against the plain server it was alternated with (pure, no I/O).

`tune` measures the plain server (no speculation) and each window k back to back, round by round
in ABBA order (alternated.py), at every concurrency level; each round gives one ratio (window
tok/s / plain tok/s) and the rounds give its spread (schedule_choice.spread: the 90 % interval of
the median with five rounds or more, else the range of the rounds). The rule both `tune` and
`tune --schedule` follow: plain is the reference and the simplest choice, so a window is
recommended only where its whole spread lies above 1.0 at the level the recommendation is made
for, and never where its whole spread lies below 1.0 at any level measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trnspec_tools.bench.spread import Spread, spread
from trnspec_tools.tune.round_run import RoundPair

#: What turns speculation off in a profile (the `--set` item and the deployment override).
PLAIN_OVERRIDE = "speculation.method=none"


@dataclass(frozen=True)
class VersusPlain:
    """Per window k and concurrency level: the spread of its ratio to plain."""

    spreads: Mapping[int, Mapping[int, Spread]]

    @classmethod
    def of_rounds(cls, rounds: Mapping[int, Mapping[int, Sequence[RoundPair]]]) -> VersusPlain:
        """From the alternated rounds (rounds[k][c]); a level without a usable ratio (errors in
        either run of every round) has no spread."""
        out: dict[int, dict[int, Spread]] = {}
        for k, by_c in rounds.items():
            for c, pairs in by_c.items():
                ratios = [p.ratio for p in pairs if p.ratio is not None]
                if ratios:
                    out.setdefault(k, {})[c] = spread(ratios)
        return cls(out)

    @classmethod
    def of_ratios(cls, ratios: Mapping[int, Mapping[int, float]]) -> VersusPlain:
        """From one ratio per window and level (a run measured before alternation: one round,
        no spread)."""
        return cls({k: {c: spread([r]) for c, r in by_c.items()} for k, by_c in ratios.items()})

    def at(self, k: int, c: int) -> Spread | None:
        return self.spreads.get(k, {}).get(c)

    def beats_plain(self, k: int, c: int) -> bool:
        """Faster than plain at level c beyond the measured spread (its low end above 1.0)."""
        s = self.at(k, c)
        return s is not None and s.low > 1.0

    def slower_at(self, k: int) -> list[int]:
        """The levels where window k measured slower than plain beyond its spread."""
        return sorted(c for c, s in self.spreads.get(k, {}).items() if s.high < 1.0)

    def eligible(self, k: int, c: int) -> bool:
        """May be recommended for level c: beats plain there and loses to it nowhere."""
        return self.beats_plain(k, c) and not self.slower_at(k)
