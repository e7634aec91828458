"""What the rounds of a calibration show: per arm and level the figures with their spread, the
status (ok, or failed with the reason), and the verdict per level. Pure: runs in, typed out.

- A figure's spread is over rounds: the median of the rounds' values and the lowest and highest
  (each round's TPOT and ITL are that run's p50). With 4 rounds that is 4 values, not a
  confidence interval: it is printed as what it is.
- An arm fails at a level when any of its rounds raised, lost a request or produced no output:
  then it has no figures at all, so a broken arm can never pass for a slow one, and the level
  has no verdict ("failed", naming the arm and the reason).
- Cost per 1M output tokens = the arm's hourly price / its output tokens per hour. Both arms run
  on one chip each, so without prices the cost ratio is the inverse of the throughput ratio.
- The verdict of a level compares the arms round by round (each round holds one run of each arm,
  back to back): an arm is cheaper only if it is cheaper in every round; when the rounds
  disagree, the level is "within the spread" (undecided: measure more rounds or prompts).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from trnspec_tools.bench.run_result import RunResult
from trnspec_tools.calibration.abba import ARMS, Arm

Status = Literal["ok", "failed"]
Decision = Literal["speculative", "plain", "within-spread", "failed"]


@dataclass(frozen=True)
class RoundRun:
    """One measured run of one arm in one round (result None when the run itself raised)."""

    arm: Arm
    concurrency: int
    round: int
    #: its place in the level's sequence (0, 1, 2, ...): the ABBA order as it ran
    position: int
    result: RunResult | None
    error: str | None = None


@dataclass(frozen=True)
class OverRounds:
    """A figure over rounds: median, lowest and highest, and every round's value in order."""

    median: float
    low: float
    high: float
    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float | None]) -> OverRounds | None:
        """None when any round lacks the figure (a spread over some rounds would hide it)."""
        if not values or any(v is None for v in values):
            return None
        vals = tuple(float(v) for v in values if v is not None)
        return cls(statistics.median(vals), min(vals), max(vals), vals)

    def to_json(self) -> dict[str, object]:
        return {"median": self.median, "low": self.low, "high": self.high,
                "rounds": list(self.values)}  # fmt: skip


@dataclass(frozen=True)
class ArmLevel:
    """One arm at one concurrency: figures over its rounds, or failed with the reason."""

    arm: Arm
    concurrency: int
    status: Status
    reason: str | None
    rounds: int
    tpot_ms: OverRounds | None = None
    itl_ms: OverRounds | None = None
    output_tokens_per_s: OverRounds | None = None
    cost_per_1m_output_tokens_usd: OverRounds | None = None
    #: pooled over the rounds' spec-decode counter deltas (None without server counters)
    acceptance_rate: float | None = None
    mean_accepted_length: float | None = None
    k_used: float | None = None
    acceptance_note: str | None = None

    def to_json(self) -> dict[str, object]:
        def spread(s: OverRounds | None) -> object:
            return None if s is None else s.to_json()

        return {
            "arm": self.arm,
            "concurrency": self.concurrency,
            "status": self.status,
            "reason": self.reason,
            "rounds": self.rounds,
            "tpot_ms": spread(self.tpot_ms),
            "itl_ms": spread(self.itl_ms),
            "output_tokens_per_s": spread(self.output_tokens_per_s),
            "cost_per_1m_output_tokens_usd": spread(self.cost_per_1m_output_tokens_usd),
            "acceptance_rate": self.acceptance_rate,
            "mean_accepted_length": self.mean_accepted_length,
            "k_used": self.k_used,
            "acceptance_note": self.acceptance_note,
        }


@dataclass(frozen=True)
class LevelVerdict:
    """Which arm is cheaper per 1M output tokens at one concurrency, and how sure."""

    concurrency: int
    decision: Decision
    #: speculative / plain output throughput, per round
    speedup: OverRounds | None
    #: speculative / plain cost per 1M output tokens, per round (below 1: speculation cheaper)
    cost_ratio: OverRounds | None
    text: str

    def to_json(self) -> dict[str, object]:
        return {
            "concurrency": self.concurrency,
            "decision": self.decision,
            "speedup": None if self.speedup is None else self.speedup.to_json(),
            "cost_ratio": None if self.cost_ratio is None else self.cost_ratio.to_json(),
            "text": self.text,
        }


def failure_reason(run: RoundRun) -> str | None:
    """Why one run does not count as a measurement, or None when it does."""
    where = f"round {run.round + 1}"
    if run.result is None:
        return f"{where}: {run.error or 'the run did not complete'}"
    req = run.result.requests
    if req.error_total or req.completed < req.num_requests:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(req.errors.items()) if k != "total")
        failed = req.num_requests - req.completed
        return f"{where}: {failed} of {req.num_requests} requests failed ({kinds or 'no answer'})"
    if req.output_tokens <= 0 or req.output_tokens_per_s <= 0:
        return f"{where}: no output tokens were produced"
    return None


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
    arm: Arm, concurrency: int, runs: Sequence[RoundRun], price_per_hour: float | None
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
        tpot_ms=OverRounds.of([r.requests.tpot_ms.p50 for r in results]),
        itl_ms=OverRounds.of([r.requests.itl_ms.p50 for r in results]),
        output_tokens_per_s=OverRounds.of(tps),
        cost_per_1m_output_tokens_usd=None
        if price_per_hour is None
        else OverRounds.of([price_per_hour / (t * 3600.0) * 1e6 for t in tps]),
        acceptance_rate=rate,
        mean_accepted_length=length,
        k_used=k,
        acceptance_note=note,
    )


def _fmt(s: OverRounds, unit: str = "", digits: int = 2) -> str:
    return f"{s.median:.{digits}f}{unit} (rounds {s.low:.{digits}f}-{s.high:.{digits}f})"


def level_verdict(
    plain: ArmLevel,
    speculative: ArmLevel,
    plain_runs: Sequence[RoundRun],
    speculative_runs: Sequence[RoundRun],
    prices: Mapping[Arm, float | None],
) -> LevelVerdict:
    """The verdict of one level from both arms' rounds (paired by round)."""
    c = plain.concurrency
    failed = [a for a in (plain, speculative) if a.status == "failed"]
    if failed:
        text = "; ".join(f"{a.arm} arm failed ({a.reason})" for a in failed)
        return LevelVerdict(c, "failed", None, None, f"concurrency {c}: no verdict: {text}")
    by_round = {r.round: r for r in plain_runs}
    pairs = [
        (by_round[s.round].result, s.result)
        for s in sorted(speculative_runs, key=lambda r: r.round)
        if s.round in by_round
    ]
    ratios = [s.output_tokens_per_s / p.output_tokens_per_s for p, s in pairs if p and s]
    price_p, price_s = prices.get("plain"), prices.get("speculative")
    price_ratio = price_s / price_p if price_p and price_s else 1.0
    speedup = OverRounds.of(ratios)
    cost_ratio = OverRounds.of([price_ratio / r for r in ratios])
    if speedup is None or cost_ratio is None:
        return LevelVerdict(c, "failed", None, None, f"concurrency {c}: no paired rounds")
    basis = (
        f"cost per 1M output tokens speculative/plain {_fmt(cost_ratio, 'x')}, "
        f"throughput speculative/plain {_fmt(speedup, 'x')}"
    )
    if plain.cost_per_1m_output_tokens_usd and speculative.cost_per_1m_output_tokens_usd:
        basis += (
            f"; ${speculative.cost_per_1m_output_tokens_usd.median:.4g} vs "
            f"${plain.cost_per_1m_output_tokens_usd.median:.4g} per 1M"
        )
    elif price_ratio == 1.0:
        basis += " (same hardware per arm: one chip each)"
    if cost_ratio.high < 1.0:
        decision: Decision = "speculative"
        head = "speculative is cheaper in every round"
    elif cost_ratio.low > 1.0:
        decision = "plain"
        head = "plain is cheaper in every round"
    else:
        decision = "within-spread"
        head = "undecided: the rounds disagree (within the spread; measure more)"
    return LevelVerdict(c, decision, speedup, cost_ratio, f"concurrency {c}: {head}: {basis}")


@dataclass(frozen=True)
class Summary:
    """Every arm at every level and the verdict per level."""

    arms: tuple[ArmLevel, ...]
    verdicts: tuple[LevelVerdict, ...]

    def overall(self) -> str:
        """One line: at which loads which arm is cheaper."""
        parts = []
        for decision in ("speculative", "plain", "within-spread", "failed"):
            levels = [str(v.concurrency) for v in self.verdicts if v.decision == decision]
            if levels:
                label = {
                    "speculative": "speculation is cheaper per 1M output tokens",
                    "plain": "plain is cheaper per 1M output tokens",
                    "within-spread": "undecided (within the spread)",
                    "failed": "no verdict (an arm failed)",
                }[decision]
                parts.append(f"{label} at concurrency {', '.join(levels)}")
        return "; ".join(parts) or "nothing measured"


def summarize(
    runs: Sequence[RoundRun], levels: Sequence[int], prices: Mapping[Arm, float | None]
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
