"""What the rounds of a calibration show: per arm and level the figures with their spread, the
status (ok, or failed with the reason), and the verdict per level. Pure: runs in, typed out.

- A figure's spread is over rounds (trnspec_tools.ab.spread: the median with the range of the
  rounds, or the median's 90 % interval from 5 rounds on; each round's TPOT and ITL are that
  run's p50).
- An arm fails at a level when any of its rounds raised, lost a request or produced no output:
  then it has no figures at all, so a broken arm can never pass for a slow one, and the level
  has no verdict (naming the arm and the reason).
- Cost per 1M output tokens = the arm's hourly price / its output tokens per hour.
- The verdict of a level is the A/B core's (trnspec_tools.ab.comparison): the rounds paired by
  round number, each arm at its own price, decided on the cost ratio's interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from trnspec.plan.verdict import Verdict

from trnspec_tools.ab.comparison import ArmRound, Comparison, Prices, compare
from trnspec_tools.ab.spread import Spread, spread
from trnspec_tools.bench.run_result import RunResult

Arm = Literal["plain", "speculative"]
#: the arms in the order of round 0 (trnspec_tools.ab.order reverses it in odd rounds)
ARMS: tuple[Arm, Arm] = ("plain", "speculative")
Status = Literal["ok", "failed"]


@dataclass(frozen=True)
class CalibrationRun:
    """One measured run of one arm in one round (result None when the run itself raised)."""

    arm: Arm
    concurrency: int
    round: int
    #: its place in the level's sequence (0, 1, 2, ...): the ABBA order as it ran
    position: int
    result: RunResult | None
    error: str | None = None


def over_rounds(values: Sequence[float | None]) -> Spread | None:
    """A figure's spread over the rounds; None when any round lacks it (a spread over some
    rounds would hide the round that could not be measured)."""
    if not values or any(v is None for v in values):
        return None
    return spread([v for v in values if v is not None])


@dataclass(frozen=True)
class ArmLevel:
    """One arm at one concurrency: figures over its rounds, or failed with the reason."""

    arm: Arm
    concurrency: int
    status: Status
    reason: str | None
    rounds: int
    tpot_ms: Spread | None = None
    itl_ms: Spread | None = None
    output_tokens_per_s: Spread | None = None
    cost_per_1m_output_tokens_usd: Spread | None = None
    #: pooled over the rounds' spec-decode counter deltas (None without server counters)
    acceptance_rate: float | None = None
    mean_accepted_length: float | None = None
    k_used: float | None = None
    acceptance_note: str | None = None

    def to_json(self) -> dict[str, object]:
        def figure(s: Spread | None) -> object:
            return None if s is None else s.to_json()

        return {
            "arm": self.arm,
            "concurrency": self.concurrency,
            "status": self.status,
            "reason": self.reason,
            "rounds": self.rounds,
            "tpot_ms": figure(self.tpot_ms),
            "itl_ms": figure(self.itl_ms),
            "output_tokens_per_s": figure(self.output_tokens_per_s),
            "cost_per_1m_output_tokens_usd": figure(self.cost_per_1m_output_tokens_usd),
            "acceptance_rate": self.acceptance_rate,
            "mean_accepted_length": self.mean_accepted_length,
            "k_used": self.k_used,
            "acceptance_note": self.acceptance_note,
        }


@dataclass(frozen=True)
class LevelVerdict:
    """Which arm is cheaper per 1M output tokens at one concurrency, and how sure."""

    concurrency: int
    #: None: no verdict (an arm failed, or a round could not be paired)
    verdict: Verdict | None
    #: speculative / plain output throughput, per paired round
    speedup: Spread | None
    #: speculative / plain cost per 1M output tokens, per paired round (below 1: speculation
    #: cheaper)
    cost_ratio: Spread | None
    text: str

    @property
    def decision(self) -> str:
        """The verdict's word, or "failed" when there is none (calibration.json's field)."""
        return "failed" if self.verdict is None else self.verdict.value

    def to_json(self) -> dict[str, object]:
        return {
            "concurrency": self.concurrency,
            "decision": self.decision,
            "speedup": None if self.speedup is None else self.speedup.to_json(),
            "cost_ratio": None if self.cost_ratio is None else self.cost_ratio.to_json(),
            "text": self.text,
        }


def arm_round(run: CalibrationRun) -> ArmRound:
    """One run as the A/B core judges and pairs it (by its round number)."""
    result = run.result
    if result is None:
        return ArmRound(run.round, None, failure=run.error or "the run did not complete")
    req = result.requests
    return ArmRound.of_run(
        run.round,
        req.output_tokens_per_s,
        req.output_tokens,
        req.completed,
        req.num_requests,
        req.error_total,
        result.acceptance.mean_accepted_length,
        error_kinds=req.errors,
    )


def failure_reason(run: CalibrationRun) -> str | None:
    """Why one run does not count as a measurement (the A/B core's rule, ArmRound.problem), or
    None when it does."""
    why = arm_round(run).problem()
    return None if why is None else f"round {run.round + 1}: {why}"


def _pooled_acceptance(
    results: Sequence[RunResult],
) -> tuple[float | None, float | None, float | None, str | None]:
    """(acceptance rate, mean accepted length, k used, note) from the rounds' counter deltas
    summed; all None with the note when any round lacks the server's counters."""
    deltas = [r.acceptance.spec_decode_deltas for r in results]
    if any(d is None for d in deltas) or any(
        r.acceptance.acceptance_source != "server-metrics" for r in results
    ):
        notes = {r.acceptance.acceptance_note for r in results if r.acceptance.acceptance_note}
        return None, None, None, "; ".join(sorted(notes)) or "no spec-decode counters"
    drafts = sum(d.num_drafts for d in deltas if d is not None)
    draft_tokens = sum(d.num_draft_tokens for d in deltas if d is not None)
    accepted = sum(d.num_accepted_tokens for d in deltas if d is not None)
    if drafts == 0 or draft_tokens == 0:
        return None, None, None, "the spec-decode counters did not move"
    return accepted / draft_tokens, 1.0 + accepted / drafts, draft_tokens / drafts, None


def arm_level(
    arm: Arm, concurrency: int, runs: Sequence[CalibrationRun], price_per_hour: float | None
) -> ArmLevel:
    """The figures of one arm at one level from its rounds (in round order)."""
    runs = sorted(runs, key=lambda r: r.round)
    if not runs:
        return ArmLevel(arm, concurrency, "failed", "not measured", 0)
    reasons = [reason for r in runs if (reason := failure_reason(r)) is not None]
    if reasons:
        return ArmLevel(arm, concurrency, "failed", "; ".join(reasons), len(runs))
    results = [r.result for r in runs if r.result is not None]
    tps = [r.output_tokens_per_s for r in results]
    rate, length, k, note = _pooled_acceptance(results) if arm == "speculative" else (None,) * 4
    return ArmLevel(
        arm,
        concurrency,
        "ok",
        None,
        len(runs),
        tpot_ms=over_rounds([r.requests.tpot_ms.p50 for r in results]),
        itl_ms=over_rounds([r.requests.itl_ms.p50 for r in results]),
        output_tokens_per_s=over_rounds(tps),
        cost_per_1m_output_tokens_usd=None
        if price_per_hour is None
        else over_rounds([price_per_hour / (t * 3600.0) * 1e6 for t in tps]),
        acceptance_rate=rate,
        mean_accepted_length=length,
        k_used=k,
        acceptance_note=note,
    )


def _fmt(s: Spread, unit: str = "", digits: int = 2) -> str:
    return f"{s.median:.{digits}f}{unit} ({s.method} {s.low:.{digits}f}-{s.high:.{digits}f})"


def arm_rounds(runs: Sequence[CalibrationRun]) -> list[ArmRound]:
    """An arm's runs at one level as the A/B core pairs them (by their round number)."""
    return [arm_round(r) for r in runs]


#: what each verdict says of a level
HEADS = {
    Verdict.SPECULATION: "speculation is cheaper",
    Verdict.PLAIN: "plain is cheaper",
    Verdict.UNDECIDED: "undecided: measure more rounds or prompts",
}


def level_verdict(
    plain: ArmLevel,
    speculative: ArmLevel,
    plain_runs: Sequence[CalibrationRun],
    speculative_runs: Sequence[CalibrationRun],
    prices: Mapping[Arm, float | None],
) -> LevelVerdict:
    """The verdict of one level from both arms' rounds (trnspec_tools.ab.comparison)."""
    c = plain.concurrency
    failed = [a for a in (plain, speculative) if a.status == "failed"]
    if failed:
        text = "; ".join(f"{a.arm} arm failed ({a.reason})" for a in failed)
        return LevelVerdict(c, None, None, None, f"concurrency {c}: no verdict: {text}")
    cmp = compare(
        arm_rounds(plain_runs),
        arm_rounds(speculative_runs),
        Prices(prices.get("plain"), prices.get("speculative")),
    )
    return LevelVerdict(
        c, cmp.verdict, cmp.speedup, cmp.cost_ratio, _text(c, cmp, plain, speculative)
    )


def _text(c: int, cmp: Comparison, plain: ArmLevel, speculative: ArmLevel) -> str:
    if cmp.verdict is None or cmp.speedup is None or cmp.cost_ratio is None:
        return f"concurrency {c}: no verdict: {cmp.reason}"
    basis = (
        f"cost per 1M output tokens speculative/plain {_fmt(cmp.cost_ratio, 'x')}, "
        f"throughput speculative/plain {_fmt(cmp.speedup, 'x')}"
    )
    p_cost, s_cost = plain.cost_per_1m_output_tokens_usd, speculative.cost_per_1m_output_tokens_usd
    if p_cost and s_cost:
        basis += f"; ${s_cost.median:.4g} vs ${p_cost.median:.4g} per 1M"
    elif cmp.price_ratio == 1.0:
        basis += " (same hardware per arm: one chip each)"
    return f"concurrency {c}: {HEADS[cmp.verdict]}: {basis}; {cmp.reason}"


@dataclass(frozen=True)
class Summary:
    """Every arm at every level and the verdict per level."""

    arms: tuple[ArmLevel, ...]
    verdicts: tuple[LevelVerdict, ...]

    def overall(self) -> str:
        """One line: at which loads which arm is cheaper."""
        labels: dict[Verdict | None, str] = {
            Verdict.SPECULATION: "speculation is cheaper per 1M output tokens",
            Verdict.PLAIN: "plain is cheaper per 1M output tokens",
            Verdict.UNDECIDED: "undecided (within the spread)",
            None: "no verdict (an arm failed)",
        }
        parts = []
        for verdict, label in labels.items():
            levels = [str(v.concurrency) for v in self.verdicts if v.verdict is verdict]
            if levels:
                parts.append(f"{label} at concurrency {', '.join(levels)}")
        return "; ".join(parts) or "nothing measured"


def summarize(
    runs: Sequence[CalibrationRun], levels: Sequence[int], prices: Mapping[Arm, float | None]
) -> Summary:
    """The summary of a whole calibration."""
    arms: list[ArmLevel] = []
    verdicts: list[LevelVerdict] = []
    for c in levels:
        by_arm = {arm: [r for r in runs if r.arm == arm and r.concurrency == c] for arm in ARMS}
        plain, spec = (arm_level(a, c, by_arm[a], prices.get(a)) for a in ARMS)
        arms += [plain, spec]
        verdicts.append(level_verdict(plain, spec, by_arm["plain"], by_arm["speculative"], prices))
    return Summary(tuple(arms), tuple(verdicts))
