"""Two arms measured in alternated rounds, paired by round, and the one decision rule.

Whether a run counts is decided here, for every tool (ArmRound.of_run, ArmRound.problem): it
ran, lost no request (no error, every request completed), produced output tokens and measured a
positive finite throughput. `round_speedup` is one round's speedup when both runs count.

Pairing: a round's reference run is paired with the candidate run of the same round number, never
by position in a list (a failed or missing run would shift every later pair onto another round
and another host state). A round pairs only when both runs count, they did the same work (output
token totals within SAME_WORK of each other: an arm that stopped early measured less work, not a
faster server), and the candidate's speedup is physically possible for the tokens per step its
counters show (stats-free bound: a speculative step is never cheaper than a plain one, so
speedup <= tokens per step, with SPEEDUP_BOUND_SLACK).

Each pair gives the candidate's speedup (its tok/s over the reference's) and its cost ratio
(its cost per output token over the reference's) = (candidate price / reference price) / speedup,
each arm at its own hourly price; without both prices the arms run on the same hardware and the
cost ratio is 1 / speedup.

The decision rule, chosen on purpose: the verdict is read from the cost ratio's interval over the
paired rounds (spread.py: the 90 % distribution-free interval of the median from 5 rounds on,
else the range of the rounds):

- SPECULATION when the whole interval lies below 1 (the candidate is cheaper),
- PLAIN when the whole interval lies above 1 (the reference is cheaper),
- UNDECIDED when it holds 1, or with fewer than MIN_ROUNDS paired rounds (one round bounds
  nothing), and no verdict at all (None) when any round could not be paired: a median over the
  other rounds would hide the round that could not be measured, and a broken arm must never pass
  for a slow one.

Why this rule: below 8 rounds it is exactly "in every round" (the interval is the range), which
is what a few expensive rounds on Trn2 can honestly say; from 8 rounds on a single disturbed
round (a neighbour's burst) no longer vetoes a verdict that the median's 90 % interval still
supports. It decides on cost, not speed, so arms on differently priced hardware are compared on
what the user pays; with equal prices the cost ratio's interval is the speedup's reciprocal and
the verdict is the speed verdict. The confidence of the interval it used travels with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from trnspec.plan.verdict import Verdict

from trnspec_tools.ab.spread import Spread, spread

#: fewer paired rounds than this decide nothing
MIN_ROUNDS = 2
#: the largest relative difference of the arms' output token totals that is still the same work
SAME_WORK = 0.05
#: slack on the bound speedup <= tokens per step (run-to-run noise of two arms measured apart)
SPEEDUP_BOUND_SLACK = 0.10


def exceeds_tokens_per_step(speedup: float | None, tokens_per_step: float | None) -> bool:
    """Whether a measured speedup is physically impossible for its acceptance: a speculative
    step does all a plain step does plus the drafts, and emits `tokens_per_step` tokens per
    sequence against one, so speedup over plain is at most the tokens per step; beyond it (with
    SPEEDUP_BOUND_SLACK) the reference ran slower than plain decoding does. Unknown inputs are
    not judged (False)."""
    if speedup is None or tokens_per_step is None or tokens_per_step < 1.0:
        return False
    return speedup > tokens_per_step * (1.0 + SPEEDUP_BOUND_SLACK)


@dataclass(frozen=True)
class ArmRound:
    """One arm's run in one round, as the comparison needs it."""

    round: int
    #: None when the run did not complete
    output_tokens_per_s: float | None
    output_tokens: int | None = None
    #: why the run does not count (errors, lost requests), None when it does
    failure: str | None = None
    #: the candidate's tokens per verification step from its counters (None: unknown)
    tokens_per_step: float | None = None

    @classmethod
    def of_run(
        cls,
        round_index: int,
        output_tokens_per_s: float,
        output_tokens: int,
        completed: int,
        num_requests: int,
        errors: int,
        tokens_per_step: float | None = None,
        error_kinds: Mapping[str, int] | None = None,
    ) -> ArmRound:
        """A finished run: it counts only when every request completed without an error (then
        `problem` judges its output). `error_kinds` (kind -> count, "total" ignored), when
        given, are named in the failure ("no answer" when there are none)."""
        failure = None
        if errors or completed < num_requests:
            failure = f"{num_requests - completed} of {num_requests} requests failed"
            if error_kinds is not None:
                kinds = ", ".join(
                    f"{k} {v}" for k, v in sorted(error_kinds.items()) if k != "total"
                )
                failure += f" ({kinds or 'no answer'})"
        return cls(round_index, output_tokens_per_s, output_tokens, failure, tokens_per_step)

    def problem(self) -> str | None:
        """Why this run does not count as a measurement, or None when it does (the rule of
        every tool: see the module)."""
        if self.failure is not None:
            return self.failure
        tps = self.output_tokens_per_s
        if tps is None:
            return "the run did not complete"
        if not math.isfinite(tps) or tps <= 0:
            return f"no output throughput was measured ({tps})"
        if self.output_tokens is not None and self.output_tokens <= 0:
            return "no output tokens were produced"
        return None


def round_speedup(reference: ArmRound, candidate: ArmRound) -> float | None:
    """The candidate's tok/s over the reference's in one round, or None when either run does
    not count (ArmRound.problem)."""
    if reference.problem() is not None or candidate.problem() is not None:
        return None
    assert reference.output_tokens_per_s is not None  # counted: it completed
    assert candidate.output_tokens_per_s is not None
    return candidate.output_tokens_per_s / reference.output_tokens_per_s


@dataclass(frozen=True)
class Prices:
    """Each arm's hourly price (USD); None: not given."""

    reference: float | None = None
    candidate: float | None = None

    def __post_init__(self) -> None:
        for name, p in (("reference", self.reference), ("candidate", self.candidate)):
            if p is not None and not (math.isfinite(p) and p > 0):
                raise ValueError(f"{name} price {p!r} must be a positive finite number")

    @property
    def ratio(self) -> float:
        """candidate price / reference price; 1.0 (the same hardware) unless both are given."""
        if self.reference is None or self.candidate is None:
            return 1.0
        return self.candidate / self.reference


class Unpaired(Enum):
    """Why a round could not be paired."""

    #: one arm has no run in that round
    MISSING = "missing"
    #: a run did not count (raised, lost requests, no output)
    FAILED = "failed"
    #: the arms' output token totals differ beyond SAME_WORK (an arm stopped early)
    DIFFERENT_WORK = "different-work"
    #: the speedup exceeds the candidate's tokens per step (the reference ran slow)
    IMPLAUSIBLE = "implausible"


@dataclass(frozen=True)
class LeftOut:
    """A round that could not be paired, and why."""

    round: int
    why: Unpaired
    text: str

    def line(self) -> str:
        return f"round {self.round + 1}: {self.text}"


@dataclass(frozen=True)
class PairedRound:
    """One round both arms measured: the candidate's speedup and cost ratio."""

    round: int
    speedup: float
    cost_ratio: float


@dataclass(frozen=True)
class Comparison:
    """The candidate against the reference over the rounds of one level."""

    #: None: some round could not be paired (see left_out), so nothing is decided
    verdict: Verdict | None
    pairs: tuple[PairedRound, ...]
    #: candidate tok/s over reference tok/s, per paired round (None when a round was left out)
    speedup: Spread | None
    #: candidate cost per output token over the reference's (below 1: the candidate is cheaper)
    cost_ratio: Spread | None
    price_ratio: float
    #: the rounds that could not be paired, and why
    left_out: tuple[LeftOut, ...]
    #: why the verdict is what it is, in one line
    reason: str


def pair_rounds(
    reference: Sequence[ArmRound], candidate: Sequence[ArmRound], price_ratio: float = 1.0
) -> tuple[list[PairedRound], list[LeftOut]]:
    """(the paired rounds in round order, the rounds left out and why)."""
    refs, cands = _by_round(reference, "reference"), _by_round(candidate, "candidate")
    pairs: list[PairedRound] = []
    left_out: list[LeftOut] = []
    for r in sorted(set(refs) | set(cands)):
        unpaired = _unpaired(refs.get(r), cands.get(r))
        if unpaired is not None:
            left_out.append(LeftOut(r, *unpaired))
            continue
        cand = cands[r]
        speedup = round_speedup(refs[r], cand)
        assert speedup is not None  # both runs counted (_unpaired)
        if exceeds_tokens_per_step(speedup, cand.tokens_per_step):
            text = (
                f"measured speedup {speedup:.2f}x exceeds the {cand.tokens_per_step:.2f} tokens"
                " per step the candidate's counters show (a speculative step is never cheaper"
                " than a plain one): the reference ran slow; re-measure"
            )
            left_out.append(LeftOut(r, Unpaired.IMPLAUSIBLE, text))
            continue
        pairs.append(PairedRound(r, speedup, price_ratio / speedup))
    return pairs, left_out


def _by_round(runs: Sequence[ArmRound], arm: str) -> dict[int, ArmRound]:
    out: dict[int, ArmRound] = {}
    for run in runs:
        if run.round < 0 or run.round in out:
            raise ValueError(f"{arm} arm: round {run.round} is negative or given twice")
        out[run.round] = run
    return out


def _unpaired(ref: ArmRound | None, cand: ArmRound | None) -> tuple[Unpaired, str] | None:
    if ref is None or cand is None:
        return Unpaired.MISSING, f"no {'reference' if ref is None else 'candidate'} run"
    for name, run in (("reference", ref), ("candidate", cand)):
        if (why := run.problem()) is not None:
            return Unpaired.FAILED, f"the {name} run does not count ({why})"
    a, b = ref.output_tokens, cand.output_tokens
    if a is not None and b is not None and abs(a - b) > SAME_WORK * max(a, b):
        text = (
            f"the arms did not do the same work (reference {a}, candidate {b} output tokens):"
            " an arm stopped early"
        )
        return Unpaired.DIFFERENT_WORK, text
    return None


def decide(cost_ratio: Spread) -> Verdict:
    """The rule (see the module): the cost ratio's whole interval below 1, above 1, or neither;
    fewer than MIN_ROUNDS rounds decide nothing."""
    if cost_ratio.rounds < MIN_ROUNDS:
        return Verdict.UNDECIDED
    if cost_ratio.high < 1.0:
        return Verdict.SPECULATION
    if cost_ratio.low > 1.0:
        return Verdict.PLAIN
    return Verdict.UNDECIDED


def compare(
    reference: Sequence[ArmRound], candidate: Sequence[ArmRound], prices: Prices = Prices()
) -> Comparison:
    """The comparison of one level (see the module)."""
    ratio = prices.ratio
    pairs, left_out = pair_rounds(reference, candidate, ratio)
    if left_out or not pairs:
        why = "; ".join(x.line() for x in left_out) or "no round was measured"
        return Comparison(None, tuple(pairs), None, None, ratio, tuple(left_out), why)
    speedup = spread([p.speedup for p in pairs])
    cost = spread([p.cost_ratio for p in pairs])
    verdict = decide(cost)
    return Comparison(verdict, tuple(pairs), speedup, cost, ratio, (), _reason(verdict, cost))


def _reason(verdict: Verdict, cost: Spread) -> str:
    where = f"cost ratio {cost.median:.2f} [{cost.low:.2f}-{cost.high:.2f}], {cost.method}"
    if cost.rounds < MIN_ROUNDS:
        return f"one round bounds nothing ({where}): measure {MIN_ROUNDS} or more"
    if verdict is Verdict.SPECULATION:
        return f"the candidate is cheaper: {where} lies below 1"
    if verdict is Verdict.PLAIN:
        return f"the reference is cheaper: {where} lies above 1"
    return f"undecided: {where} holds 1; measure more rounds"
