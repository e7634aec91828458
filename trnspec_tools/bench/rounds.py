"""A comparison measured in rounds (`bench --rounds N`): one figure per level from N pairs.

Each round at a level pairs one run of the target with one of the baseline, measured back to
back (arm_order.py), so each round gives its own speedup (stats.compare). The level's speedup is
the median of those paired ratios with the interval it is known to (spread.py: the range of the
rounds, the 90 % interval of the median from five rounds on); the latency changes are the
medians of theirs. A figure that one round lacks (a bursty stream, an implausible speedup, a
baseline that produced nothing) is left out of the level too: a median over the other rounds
would hide the round that could not be measured. An interval that holds 1.0 is said in the
level's note: the target is then not told apart from the baseline. One round gives the pair's
comparison as is.

The runs listed per arm and level are each arm's round of median output throughput.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median
from typing import Protocol, TypeVar

from trnspec_tools.bench.spread import spread

#: the figures of stats.compare that are combined as medians over the rounds
PAIRED_FIGURES = (
    "speedup_output_tokens_per_s",
    "itl_p50_change",
    "tpot_p50_change",
    "ttft_p50_change",
    "e2e_p50_change",
)
SPEEDUP = PAIRED_FIGURES[0]


class _Throughput(Protocol):
    @property
    def output_tokens_per_s(self) -> float: ...


Run = TypeVar("Run", bound=_Throughput)


def median_round(runs: Sequence[Run]) -> Run:
    """The run of median output throughput (the lower one of an even count): a RunResult, or an
    ArmRun."""
    if not runs:
        raise ValueError("no rounds measured")
    ordered = sorted(runs, key=lambda r: r.output_tokens_per_s)
    return ordered[(len(ordered) - 1) // 2]


def median_runs(
    rounds: Mapping[tuple[str, int], Sequence[Run]], levels: Sequence[int], arms: Sequence[str]
) -> list[Run]:
    """Each arm's median round (median_round) at each level: level by level, the arms in the
    order given; `rounds[arm, level]` holds that arm's runs at that level in round order."""
    return [median_round(rounds[arm, level]) for level in levels for arm in arms]


def combined(per_round: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """The level's comparison from its rounds' comparisons, in round order (see the module)."""
    if not per_round:
        raise ValueError("no rounds measured")
    if len(per_round) == 1:
        return dict(per_round[0])
    out: dict[str, object] = {}
    for key in PAIRED_FIGURES:
        values = [r.get(key) for r in per_round]
        numbers = [float(v) for v in values if isinstance(v, int | float)]
        out[key] = median(numbers) if len(numbers) == len(values) else None
    speedups = [r.get(SPEEDUP) for r in per_round]
    out["speedup_rounds"] = speedups
    ratios = [float(v) for v in speedups if isinstance(v, int | float)]
    notes = []
    if len(ratios) == len(speedups):
        s = spread(ratios)
        out["speedup_low"], out["speedup_high"], out["speedup_interval"] = s.low, s.high, s.method
        if s.low <= 1.0 <= s.high:
            notes.append(
                f"the speedup's {s.method} ({s.low:.2f}-{s.high:.2f}) holds 1.0: at this level"
                " the target is not told apart from the baseline; measure more rounds"
            )
    implausible = [r.get("implausible_speedup") for r in per_round]
    if any(v is not None for v in implausible):
        out["implausible_speedup"] = implausible
    notes += [f"round {i + 1}: {r['note']}" for i, r in enumerate(per_round) if r.get("note")]
    if notes:
        out["note"] = "; ".join(notes)
    return out
