"""How each measured window did against the plain server it was alternated with (pure, no I/O).

`tune` measures the plain server (no speculation) and each window k back to back, round by round
in ABBA order (alternated.py), at every concurrency level. Each level's rounds are compared by
the A/B core (trnspec_tools.ab.comparison: paired by round, the ratio's interval, the one
verdict). The rule both `tune` and `tune --schedule` follow: plain is the reference and the
simplest choice, so a window is recommended only where the verdict at the level the
recommendation is made for is speculation, and never where the verdict at any level measured is
plain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trnspec.plan.verdict import Verdict

from trnspec_tools.ab.comparison import Comparison, Unpaired, compare
from trnspec_tools.ab.spread import Spread
from trnspec_tools.tune.round_run import RoundPair

#: What turns speculation off in a profile (the `--set` item and the deployment override).
PLAIN_OVERRIDE = "speculation.method=none"


def rounds_comparison(pairs: Sequence[RoundPair]) -> Comparison:
    """The A/B core's comparison of one level's alternated rounds (plain is the reference)."""
    return compare(
        [p.plain.as_round(i) for i, p in enumerate(pairs)],
        [p.candidate.as_round(i) for i, p in enumerate(pairs)],
    )


@dataclass(frozen=True)
class VersusPlain:
    """Per window k and concurrency level: the A/B comparison with plain."""

    comparisons: Mapping[int, Mapping[int, Comparison]]

    @classmethod
    def of_rounds(cls, rounds: Mapping[int, Mapping[int, Sequence[RoundPair]]]) -> VersusPlain:
        """From the alternated rounds (rounds[k][c])."""
        return cls(
            {
                k: {c: rounds_comparison(pairs) for c, pairs in by_c.items() if pairs}
                for k, by_c in rounds.items()
            }
        )

    def comparison(self, k: int, c: int) -> Comparison | None:
        return self.comparisons.get(k, {}).get(c)

    def at(self, k: int, c: int) -> Spread | None:
        """The spread of window k's ratio to plain at level c (None: not measured, or a round
        that could not be paired)."""
        found = self.comparison(k, c)
        return None if found is None else found.speedup

    def verdict(self, k: int, c: int) -> Verdict | None:
        found = self.comparison(k, c)
        return None if found is None else found.verdict

    def implausible(self, k: int, c: int) -> bool:
        """A round at level c measured a speedup its tokens per step cannot explain (the
        reference ran slow), so the level has no ratio."""
        found = self.comparison(k, c)
        return found is not None and any(x.why is Unpaired.IMPLAUSIBLE for x in found.left_out)

    def beats_plain(self, k: int, c: int) -> bool:
        """The verdict at level c is speculation."""
        return self.verdict(k, c) is Verdict.SPECULATION

    def slower_at(self, k: int) -> list[int]:
        """The levels where the verdict on window k is plain."""
        return sorted(
            c for c, found in self.comparisons.get(k, {}).items() if found.verdict is Verdict.PLAIN
        )

    def eligible(self, k: int, c: int) -> bool:
        """May be recommended for level c: beats plain there and loses to it nowhere."""
        return self.beats_plain(k, c) and not self.slower_at(k)
