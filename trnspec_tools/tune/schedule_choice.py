"""Choose a deployment per concurrency band from alternated measurements (pure, no I/O).

`tune --schedule` (schedule_tune.py) measures every candidate against the same plain server
(no speculation), alternating the two arms round by round (ABBA), so each round gives one
ratio measured side by side and the rounds give its spread. This module turns those ratios into:

- the bands: each measured concurrency level c_i covers the batches (c_{i-1}, c_i], the last
  band runs to max_num_seqs (a server at concurrency c never runs a batch larger than c);
- the schedule candidates, built from the best static k of each band (k > 0 always); a k=0
  band only in a second candidate, where plain beat every static k, and it is recommended only
  if it then measures at least as fast as plain in that band;
- the recommendation: the candidate whose worst ratio to the best measured at any band is
  highest; candidates within the measured spread of it at every band are named as ties, and the
  simplest kind among them (plain, then a static k, then a schedule; within a kind the best
  worst case) is the one recommended, so a schedule is chosen only when it measured better than
  every static k somewhere, never by noise.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from trnspec.config.k_schedule import schedule_text
from trnspec.plan.verdict import Verdict

from trnspec_tools.ab.comparison import Comparison
from trnspec_tools.ab.spread import Spread

Band = tuple[int, int, int]

#: The plain server's name; every ratio is "candidate tok/s / plain tok/s" of one round.
PLAIN = "plain"


@dataclass(frozen=True)
class Candidate:
    """One deployment: plain, one static k, or a k schedule."""

    name: str
    k: int | None = None
    schedule: tuple[Band, ...] = ()

    @property
    def kind_rank(self) -> int:
        """Simplicity, for ties: plain, then static k, then a schedule."""
        return 0 if self.name == PLAIN else 1 if not self.schedule else 2

    @property
    def window(self) -> int:
        """The largest k it drafts (0 for plain)."""
        if self.schedule:
            return max(k for _, _, k in self.schedule)
        return self.k or 0

    def overrides(self) -> list[str]:
        """The `--set` items that make a profile run this candidate."""
        if self.name == PLAIN:
            return ["speculation.method=none"]
        items = [f"speculation.num_speculative_tokens={self.window}"]
        if self.schedule:
            items.append(f"speculation.k_schedule={schedule_text(self.schedule)}")
        return items


def static(k: int) -> Candidate:
    return Candidate(f"k={k}", k=k)


def scheduled(bands: Sequence[Band]) -> Candidate:
    merged = merge_bands(bands)
    return Candidate(f"schedule {schedule_text(merged)}", schedule=tuple(merged))


EXACT = Spread(1.0, 1.0, 1.0, (), "the reference", 1.0)


def level_bands(levels: Sequence[int], max_num_seqs: int) -> list[tuple[int, int]]:
    """The batch range each measured level stands for: (c_{i-1}, c_i], the last to max_num_seqs."""
    ordered = sorted(set(levels))
    if not ordered or ordered[0] < 1:
        raise ValueError("levels must be integers >= 1")
    if ordered[-1] > max_num_seqs:
        raise ValueError(
            f"concurrency {ordered[-1]} exceeds max_num_seqs={max_num_seqs}: the batch never"
            " reaches it; measure up to max_num_seqs"
        )
    out, start = [], 1
    for i, c in enumerate(ordered):
        end = max_num_seqs if i == len(ordered) - 1 else c
        out.append((start, end))
        start = end + 1
    return out


def merge_bands(bands: Sequence[Band]) -> list[Band]:
    """Adjacent bands with the same k joined."""
    out: list[Band] = []
    for start, end, k in sorted(bands):
        if out and out[-1][2] == k and out[-1][1] + 1 == start:
            out[-1] = (out[-1][0], end, k)
        else:
            out.append((start, end, k))
    return out


#: comparisons[candidate name][level]: the A/B core's comparison with plain at that level
Comparisons = Mapping[str, Mapping[int, Comparison]]


def spreads(comparisons: Comparisons) -> dict[str, dict[int, Spread]]:
    """Each candidate's ratio to plain per level (levels with a round that could not be paired
    have none)."""
    return {
        name: {c: cmp.speedup for c, cmp in by_c.items() if cmp.speedup is not None}
        for name, by_c in comparisons.items()
    }


def best_static_per_level(
    measured: Mapping[str, Mapping[int, Spread]], statics: Sequence[Candidate]
) -> dict[int, Candidate]:
    """The static k with the highest median ratio at each level (ties: the smaller k)."""
    levels = sorted({c for s in statics for c in measured.get(s.name, {})})
    out = {}
    for c in levels:
        have = [s for s in statics if c in measured.get(s.name, {})]
        if have:
            out[c] = max(have, key=lambda s: (measured[s.name][c].median, -(s.k or 0)))
    return out


def schedule_candidates(
    measured: Mapping[str, Mapping[int, Spread]],
    statics: Sequence[Candidate],
    levels: Sequence[int],
    max_num_seqs: int,
) -> list[Candidate]:
    """Schedules worth measuring: the best static k per band, and (only where plain beat every
    static k at a band) the same with k=0 there. A schedule equal to one static k, or with no
    band that speculates, is left out (it is measured already, or it is plain)."""
    best = best_static_per_level(measured, statics)
    bands = level_bands(levels, max_num_seqs)
    ordered = sorted(set(levels))
    if any(c not in best for c in ordered):
        return []
    per_band = [(a, b, best[c].k or 0) for (a, b), c in zip(bands, ordered, strict=True)]
    with_zero = [
        (a, b, 0 if measured[best[c].name][c].median < 1.0 else k)
        for (a, b, k), c in zip(per_band, ordered, strict=True)
    ]
    out: list[Candidate] = []
    for bands_k in (per_band, with_zero):
        merged = merge_bands(bands_k)
        if len(merged) == 1 or all(k == 0 for _, _, k in merged):
            continue
        cand = scheduled(merged)
        if cand not in out:
            out.append(cand)
    return out


@dataclass(frozen=True)
class LevelChoice:
    """At one level: the candidate measured best, its ratio to plain and the chosen one's."""

    best: str
    best_spread: Spread
    chosen_spread: Spread

    @property
    def chosen_over_best(self) -> float:
        """The chosen candidate's median as a fraction of the best's (1.0: it is the best)."""
        return self.chosen_spread.median / self.best_spread.median


@dataclass(frozen=True)
class Choice:
    """The recommendation and why."""

    candidate: Candidate
    #: its worst median ratio to the best median measured at any level
    worst_relative: float
    #: per level measured, in order
    per_level: Mapping[int, LevelChoice]
    #: other candidates within the measured spread of the leader at every level
    ties: tuple[str, ...]
    #: the candidate with the highest worst_relative before tie-breaking
    leader: str
    notes: tuple[str, ...] = field(default=())


def _at(measured: Mapping[str, Mapping[int, Spread]], name: str, c: int) -> Spread | None:
    return EXACT if name == PLAIN else measured.get(name, {}).get(c)


def choose(
    measured: Mapping[str, Mapping[int, Spread]],
    candidates: Sequence[Candidate],
    levels: Sequence[int],
) -> Choice:
    """The deployment best at every level measured (see the module docstring)."""
    ordered = sorted(set(levels))
    complete = [
        cand for cand in candidates if all(_at(measured, cand.name, c) is not None for c in ordered)
    ]
    if not complete:
        raise ValueError("no candidate was measured at every level")
    best_at = {
        c: max(complete, key=lambda cand: _at(measured, cand.name, c).median)  # type: ignore[union-attr]
        for c in ordered
    }

    def worst(cand: Candidate) -> float:
        return min(
            _at(measured, cand.name, c).median  # type: ignore[union-attr]
            / _at(measured, best_at[c].name, c).median  # type: ignore[union-attr]
            for c in ordered
        )

    leader = max(complete, key=lambda cand: (worst(cand), -cand.kind_rank, -cand.window))
    tied = [
        cand
        for cand in complete
        if cand is not leader
        and all(
            _at(measured, cand.name, c).overlaps(_at(measured, leader.name, c))  # type: ignore[union-attr,arg-type]
            for c in ordered
        )
    ]
    # Among candidates the data cannot tell apart, the simplest kind (plain, static, schedule)
    # wins; within a kind, the best worst-case median.
    chosen = min([leader, *tied], key=lambda cand: (cand.kind_rank, -worst(cand), cand.window))
    per_level = {
        c: LevelChoice(
            best_at[c].name,
            _at(measured, best_at[c].name, c),  # type: ignore[arg-type]
            _at(measured, chosen.name, c),  # type: ignore[arg-type]
        )
        for c in ordered
    }
    return Choice(
        candidate=chosen,
        worst_relative=worst(chosen),
        per_level=per_level,
        ties=tuple(cand.name for cand in tied),
        leader=leader.name,
    )


@dataclass(frozen=True)
class ZeroBand:
    """How a schedule's k=0 band measured against plain at its level."""

    candidate: str
    batches: tuple[int, int]
    concurrency: int
    spread: Spread
    verdict: Verdict | None

    @property
    def loses(self) -> bool:
        """The A/B verdict there is plain: such a schedule is never recommended."""
        return self.verdict is Verdict.PLAIN

    def note(self) -> str:
        lo, hi = self.batches
        verdict = (
            "it loses to a server without speculation, so this schedule is not recommended"
            if self.loses
            else "at least as fast as plain there"
        )
        return (
            f"{self.candidate}: its k=0 band (batches {lo}-{hi}) measured {self.spread.text()}"
            f" of plain at concurrency {self.concurrency}: {verdict}"
        )


def zero_bands(
    comparisons: Comparisons,
    candidates: Sequence[Candidate],
    levels: Sequence[int],
    max_num_seqs: int,
) -> list[ZeroBand]:
    """Every measured level that a schedule runs at k=0, with its comparison with plain."""
    out = []
    bands = dict(zip(sorted(set(levels)), level_bands(levels, max_num_seqs), strict=True))
    for cand in candidates:
        for c, (lo, hi) in bands.items():
            ks = {k for a, b, k in cand.schedule if a <= hi and b >= lo}
            cmp = comparisons.get(cand.name, {}).get(c)
            if ks == {0} and cmp is not None and cmp.speedup is not None:
                out.append(ZeroBand(cand.name, (lo, hi), c, cmp.speedup, cmp.verdict))
    return out


def set_line(items: Sequence[str]) -> str:
    """`--set` flags for render and bench --local, each quoted for the shell."""
    return " ".join(f"--set {shlex.quote(item)}" for item in items)


def deploy_line(items: Sequence[str]) -> str:
    """The same items as the deployment's `-c serving.overrides=[...]` (docs/workload.md)."""
    inner = ", ".join(f'"{item}"' for item in items)
    return "-c " + shlex.quote(f"serving.overrides=[{inner}]")
