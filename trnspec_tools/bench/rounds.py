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
from statistics import median
from typing import TypeVar

from trnspec.plan.verdict import Verdict

from trnspec_tools.ab.comparison import Comparison, Unpaired
from trnspec_tools.ab.median_round import median_round
from trnspec_tools.bench.stats import RoundComparison

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


def combined(per_round: Sequence[RoundComparison], ab: Comparison) -> dict[str, object]:
    """The level's comparison from its rounds' comparisons, in round order, and the A/B core's
    comparison of the same rounds (see the module)."""
    if not per_round:
        raise ValueError("no rounds measured")
    verdict = None if ab.verdict is None else ab.verdict.value
    if len(per_round) == 1:
        return {**per_round[0].to_json(), "verdict": verdict}
    out: dict[str, object] = {}
    for key in PAIRED_FIGURES[1:]:
        values = [r.figure(key) for r in per_round]
        numbers = [v for v in values if v is not None]
        out[key] = median(numbers) if len(numbers) == len(values) else None
    s = ab.speedup
    out[SPEEDUP] = None if s is None else s.median
    out["speedup_rounds"] = [r.speedup_output_tokens_per_s for r in per_round]
    notes = []
    if s is not None:
        out["speedup_low"], out["speedup_high"], out["speedup_interval"] = s.low, s.high, s.method
    out["verdict"] = verdict
    if ab.verdict is Verdict.UNDECIDED and s is not None:
        notes.append(
            f"the speedup's {s.method} ({s.low:.2f}-{s.high:.2f}) holds 1.0: at this level"
            " the target is not told apart from the baseline; measure more rounds"
        )
    implausible = [r.implausible_speedup for r in per_round]
    if any(v is not None for v in implausible):
        out["implausible_speedup"] = implausible
    notes += [f"round {i + 1}: {r.note}" for i, r in enumerate(per_round) if r.note]
    # an implausible round is already in its own note (stats.compare)
    notes += [x.line() for x in ab.left_out if x.why is not Unpaired.IMPLAUSIBLE]
    if notes:
        out["note"] = "; ".join(notes)
    return out
