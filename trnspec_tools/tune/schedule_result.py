"""`tune --schedule`'s result, typed, and its JSON.

`ScheduleResult` holds what one run measured and concluded: the workload, the levels and the bands
they stand for, every candidate's alternated rounds with the spread of its ratio to plain and the
k it used per level, plain's tok/s, the verdicts on k=0 bands and the recommendation (the Choice,
the override items and the profile's check of them). It is built once (schedule_tune.run);
`to_json()` writes the keys the `--out` JSON has always held, in the same order; the Markdown and
the plot are schedule_report.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trnspec_tools.ab.spread import Spread
from trnspec_tools.tune.round_run import RoundPair
from trnspec_tools.tune.schedule_choice import (
    PLAIN,
    Candidate,
    Choice,
    LevelChoice,
    ZeroBand,
    deploy_line,
    set_line,
)


@dataclass(frozen=True)
class ScheduleWorkload:
    """What each arm ran: the prompts, their output length and the alternated rounds."""

    #: the dataset's name, or "synthetic (N tokens)"
    dataset: str
    output_len: int
    #: prompts per arm and round, per level
    prompts_per_level: Mapping[int, int]
    #: alternated rounds per level (ABBA)
    rounds: int


@dataclass(frozen=True)
class MeasuredCandidate:
    """One candidate's alternated rounds against plain and what they give, per level."""

    candidate: Candidate
    #: per level with a clean round, in the order measured: the ratio to plain over the rounds
    spreads: Mapping[int, Spread]
    #: per level measured: mean draft tokens per draft (None without counters)
    k_used: Mapping[int, float | None]
    #: per level measured: the rounds
    runs: Mapping[int, Sequence[RoundPair]]

    @property
    def name(self) -> str:
        return self.candidate.name


@dataclass(frozen=True)
class Recommendation:
    """The choice, the `--set` items that deploy it and the profile's verdict on them."""

    choice: Choice
    #: the run's base overrides, then the candidate's
    overrides: tuple[str, ...]
    #: "ok", or the problems the config layer finds with the overrides on the profile
    override_check: str

    @property
    def candidate(self) -> Candidate:
        return self.choice.candidate

    @property
    def per_level(self) -> Mapping[int, LevelChoice]:
        return self.choice.per_level

    @property
    def set_line(self) -> str:
        return set_line(self.overrides)

    @property
    def deploy_line(self) -> str:
        return deploy_line(self.overrides)

    def to_json(self) -> dict[str, object]:
        choice = self.choice
        return {
            "candidate": choice.candidate.name,
            "candidate_overrides": choice.candidate.overrides(),
            "overrides": list(self.overrides),
            "set_line": self.set_line,
            "deploy_line": self.deploy_line,
            "worst_ratio_to_best": choice.worst_relative,
            "leader": choice.leader,
            "ties_within_spread": list(choice.ties),
            "per_level": {str(c): level_json(entry) for c, entry in choice.per_level.items()},
            "override_check": self.override_check,
        }


def level_json(entry: LevelChoice) -> dict[str, object]:
    return {
        "best": entry.best,
        "best_ratio_to_plain": entry.best_spread.to_json(),
        "chosen_ratio_to_plain": entry.chosen_spread.to_json(),
        "chosen_over_best": entry.chosen_over_best,
    }


@dataclass(frozen=True)
class ScheduleResult:
    """One `tune --schedule` run: what was measured, per band, and what it recommends."""

    #: the profile the candidates ran on and the override line is checked against
    profile: str
    workload: ScheduleWorkload
    levels: tuple[int, ...]
    max_num_seqs: int
    #: the batches each level stands for, (first, last), in the order of `levels`
    bands: tuple[tuple[int, int], ...]
    base_overrides: tuple[str, ...]
    #: every candidate but plain, in the order measured
    measured: tuple[MeasuredCandidate, ...]
    #: plain's median tok/s per level over every round (None: no round at the level)
    plain_tokens_per_s: Mapping[int, float | None]
    zero_bands: tuple[ZeroBand, ...]
    recommendation: Recommendation
    #: the host's load averages when the run started ("... (N cpus)") and when it ended
    load_average: str
    load_average_after: str

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        """Every candidate, plain first."""
        return (Candidate(PLAIN), *(m.candidate for m in self.measured))

    def to_json(self) -> dict[str, object]:
        w = self.workload
        return {
            "profile": self.profile,
            "dataset": w.dataset,
            "output_len": w.output_len,
            "levels": list(self.levels),
            "max_num_seqs": self.max_num_seqs,
            "bands": [list(b) for b in self.bands],
            "rounds": w.rounds,
            "prompts_per_level": {str(c): n for c, n in w.prompts_per_level.items()},
            "base_overrides": list(self.base_overrides),
            "candidates": {c.name: {"overrides": c.overrides()} for c in self.candidates},
            "plain_tokens_per_s": {str(c): v for c, v in self.plain_tokens_per_s.items()},
            "spreads": {
                m.name: {str(c): s.to_json() for c, s in m.spreads.items()} for m in self.measured
            },
            "k_used": {m.name: {str(c): v for c, v in m.k_used.items()} for m in self.measured},
            "zero_band_notes": [z.note() for z in self.zero_bands],
            "recommendation": self.recommendation.to_json(),
            "runs": {
                m.name: {str(c): [p.to_json() for p in pairs] for c, pairs in m.runs.items()}
                for m in self.measured
            },
            "load_average": self.load_average,
            "load_average_after": self.load_average_after,
        }
