"""A comparison measured in rounds (`bench --rounds N`): one figure per level from N pairs.

Each round at a level pairs one run of the target with one of the baseline, measured back to
back (trnspec_tools.ab.order), so each round gives its own comparison (stats.compare). The
level's speedup and verdict are the A/B core's (trnspec_tools.ab.comparison: the rounds paired
by round number, the median ratio with its interval, the one decision rule); the latency changes
are the medians of the rounds'. A figure that one round lacks (a bursty stream, an implausible
speedup, a round with failed requests) is left out of the level too: a median over the other
rounds would hide the round that could not be measured. The verdict is said in the level's note
when the interval holds 1.0: the target is then not told apart from the baseline. One round
gives the pair's comparison as is.

The runs listed per arm and level are each arm's round of median output throughput
(trnspec_tools.ab.median_round).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median
from typing import TYPE_CHECKING, TypeVar

from trnspec.plan.verdict import Verdict

from trnspec_tools.ab.comparison import Comparison, Unpaired
from trnspec_tools.ab.median_round import median_round
from trnspec_tools.bench.stats import RoundComparison

if TYPE_CHECKING:
    from trnspec_tools.bench.versus_predicted import SpeedupPrediction

#: the figures of stats.compare that are combined as medians over the rounds
PAIRED_FIGURES = (
    "speedup_output_tokens_per_s",
    "itl_p50_change",
    "tpot_p50_change",
    "ttft_p50_change",
    "e2e_p50_change",
)
SPEEDUP = PAIRED_FIGURES[0]

Run = TypeVar("Run")


def median_runs(
    rounds: Mapping[tuple[str, int], Sequence[Run]], levels: Sequence[int], arms: Sequence[str]
) -> list[Run]:
    """Each arm's median round (median_round) at each level: level by level, the arms in the
    order given; `rounds[arm, level]` holds that arm's runs at that level in round order."""
    return [median_round(rounds[arm, level]) for level in levels for arm in arms]  # type: ignore[type-var]


@dataclass(frozen=True)
class LevelComparison:
    """The target against the baseline at one level, over its rounds (see the module): the
    A/B core's speedup and verdict, the median latency changes, each round's speedup and what
    was left out, and (with --profile) the model's predicted speedup beside it."""

    concurrency: int
    #: the median of the rounds' paired ratios (one round: the pair's); None: not measurable
    speedup_output_tokens_per_s: float | None
    itl_p50_change: float | None
    tpot_p50_change: float | None
    ttft_p50_change: float | None
    e2e_p50_change: float | None
    verdict: Verdict | None
    #: each round's speedup, in round order (one entry for one round)
    speedup_rounds: tuple[float | None, ...]
    #: the interval of the median speedup (several rounds with a speedup only)
    speedup_low: float | None = None
    speedup_high: float | None = None
    speedup_interval: str | None = None
    #: each round's speedup its tokens per step cannot explain (None where it can), round order
    implausible_speedup: tuple[float | None, ...] = ()
    note: str | None = None
    #: the performance model's speedup at this level (bench --profile: versus_predicted.attach)
    prediction: SpeedupPrediction | None = None

    @property
    def rounds(self) -> int:
        return len(self.speedup_rounds)

    def to_json(self) -> dict[str, object]:
        """The level as bench's JSON `comparison` holds it: one round as the pair's own
        comparison (stats.RoundComparison.to_json) with the verdict; several with each round's
        speedup, the interval (when there is a speedup) and the refused speedups (when any)."""
        out: dict[str, object] = {"concurrency": self.concurrency}
        verdict = None if self.verdict is None else self.verdict.value
        if self.rounds == 1:
            out[SPEEDUP] = self.speedup_output_tokens_per_s
            out |= self._changes()
            if (implausible := self.implausible_speedup[0]) is not None:
                out["implausible_speedup"] = implausible
            if self.note:
                out["note"] = self.note
            out["verdict"] = verdict
        else:
            out |= self._changes()
            out[SPEEDUP] = self.speedup_output_tokens_per_s
            out["speedup_rounds"] = list(self.speedup_rounds)
            if self.speedup_low is not None:
                out["speedup_low"], out["speedup_high"] = self.speedup_low, self.speedup_high
                out["speedup_interval"] = self.speedup_interval
            out["verdict"] = verdict
            if any(v is not None for v in self.implausible_speedup):
                out["implausible_speedup"] = list(self.implausible_speedup)
            if self.note:
                out["note"] = self.note
        if self.prediction is not None:
            out["prediction"] = self.prediction.to_json()
        return out

    def _changes(self) -> dict[str, object]:
        return {
            "itl_p50_change": self.itl_p50_change,
            "tpot_p50_change": self.tpot_p50_change,
            "ttft_p50_change": self.ttft_p50_change,
            "e2e_p50_change": self.e2e_p50_change,
        }


def _median_over(per_round: Sequence[RoundComparison], name: str) -> float | None:
    """A paired figure's median over the rounds; None when any round lacks it."""
    values = [r.figure(name) for r in per_round]
    numbers = [v for v in values if v is not None]
    return median(numbers) if len(numbers) == len(values) else None


def combined(
    concurrency: int, per_round: Sequence[RoundComparison], ab: Comparison
) -> LevelComparison:
    """The level's comparison from its rounds' comparisons, in round order, and the A/B core's
    comparison of the same rounds (see the module)."""
    if not per_round:
        raise ValueError("no rounds measured")
    speedups = tuple(r.speedup_output_tokens_per_s for r in per_round)
    implausible = tuple(r.implausible_speedup for r in per_round)
    if len(per_round) == 1:
        (only,) = per_round
        return LevelComparison(
            concurrency=concurrency,
            speedup_output_tokens_per_s=only.speedup_output_tokens_per_s,
            itl_p50_change=only.itl_p50_change,
            tpot_p50_change=only.tpot_p50_change,
            ttft_p50_change=only.ttft_p50_change,
            e2e_p50_change=only.e2e_p50_change,
            verdict=ab.verdict,
            speedup_rounds=speedups,
            implausible_speedup=implausible,
            note=only.note or None,
        )
    s = ab.speedup
    notes = []
    if ab.verdict is Verdict.UNDECIDED and s is not None:
        notes.append(
            f"the speedup's {s.method} ({s.low:.2f}-{s.high:.2f}) holds 1.0: at this level"
            " the target is not told apart from the baseline; measure more rounds"
        )
    notes += [f"round {i + 1}: {r.note}" for i, r in enumerate(per_round) if r.note]
    # an implausible round is already in its own note (stats.compare)
    notes += [x.line() for x in ab.left_out if x.why is not Unpaired.IMPLAUSIBLE]
    return LevelComparison(
        concurrency=concurrency,
        speedup_output_tokens_per_s=None if s is None else s.median,
        itl_p50_change=_median_over(per_round, "itl_p50_change"),
        tpot_p50_change=_median_over(per_round, "tpot_p50_change"),
        ttft_p50_change=_median_over(per_round, "ttft_p50_change"),
        e2e_p50_change=_median_over(per_round, "e2e_p50_change"),
        verdict=ab.verdict,
        speedup_rounds=speedups,
        speedup_low=None if s is None else s.low,
        speedup_high=None if s is None else s.high,
        speedup_interval=None if s is None else s.method,
        implausible_speedup=implausible,
        note="; ".join(notes) or None,
    )
