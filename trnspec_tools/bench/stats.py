"""Aggregates over per-request timings: percentiles, throughput, goodput, errors.

Pure functions over RequestResult lists so the numbers a report prints can be checked against
hand-computed values. Percentiles use linear interpolation (numpy's default, also what
`vllm bench serve` uses), so the two tools agree on the same samples.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trnspec_tools.ab.comparison import exceeds_tokens_per_step
from trnspec_tools.bench.run_result import Goodput, Latency, RequestFigures, RunResult

if TYPE_CHECKING:
    from trnspec_tools.client.bench_client import RequestResult


@dataclass(frozen=True)
class Slo:
    """Latency objectives; a request is 'good' when it meets every objective that is set."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None

    @property
    def is_set(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.e2e_ms))

    def met_by(self, r: RequestResult) -> bool:
        if not r.ok:
            return False
        checks = (
            (self.ttft_ms, r.ttft_s),
            (self.tpot_ms, r.tpot_s),
            (self.e2e_ms, r.e2e_s),
        )
        for limit, value_s in checks:
            if limit is None:
                continue
            if value_s is None or value_s * 1000.0 > limit:
                # A single-token request has no TPOT; it cannot violate a TPOT objective.
                if value_s is None and limit is self.tpot_ms:
                    continue
                return False
        return True


def tokens_per_step_estimate(results: Sequence[RequestResult]) -> float | None:
    """Mean tokens per decode step, estimated from streamed chunk sizes.

    A streaming server sends one chunk per engine step per request; the first chunk comes from
    prefill (one token, no speculation), so it is left out. It is an estimate: a server or proxy
    that coalesces chunks (slow client, detokenizer holding back partial characters) inflates it.
    """
    tokens = 0
    steps = 0
    for r in results:
        if not r.ok or not r.usage_reported or r.output_tokens is None:
            continue
        if r.content_chunks < 2:
            continue
        tokens += r.output_tokens - 1
        steps += r.content_chunks - 1
    return tokens / steps if steps else None


def aggregate(
    results: Sequence[RequestResult], duration_s: float, slo: Slo | None = None
) -> RequestFigures:
    """The run's headline figures from its measured (non warm-up) requests."""
    ok = [r for r in results if r.ok]
    errors = Counter(r.error for r in results if r.error is not None)
    out_tokens = sum(r.output_tokens or 0 for r in ok)
    chunks = sum(r.content_chunks for r in results)
    overhead = sum(r.parse_overhead_s for r in results)
    duration = max(duration_s, 1e-9)
    goodput = None
    if slo is not None and slo.is_set:
        good = sum(1 for r in ok if slo.met_by(r))
        fraction = good / len(results) if results else None
        goodput = Goodput(slo.ttft_ms, slo.tpot_ms, slo.e2e_ms, good, good / duration, fraction)
    return RequestFigures(
        num_requests=len(results),
        completed=len(ok),
        duration_s=duration_s,
        ttft_ms=Latency.of_seconds(r.ttft_s for r in ok if r.ttft_s is not None),
        itl_ms=Latency.of_seconds(g for r in ok for g in r.itl_s),
        tpot_ms=Latency.of_seconds(r.tpot_s for r in ok if r.tpot_s is not None),
        e2e_ms=Latency.of_seconds(r.e2e_s for r in ok if r.e2e_s is not None),
        output_tokens=out_tokens,
        output_tokens_per_s=out_tokens / duration,
        requests_per_s=len(ok) / duration,
        errors={"total": sum(errors.values()), **dict(sorted(errors.items()))},
        retries=sum(r.retries for r in results),
        usage_reported=all(r.usage_reported for r in ok) if ok else False,
        tool_overhead_us_per_chunk=(overhead / chunks * 1e6) if chunks else None,
        tokens_per_step_estimate=tokens_per_step_estimate(ok),
        goodput=goodput,
    )


#: below this median gap (ms) a stream is coalesced (many tokens per read), not paced per step
BURST_ITL_MS = 0.05


@dataclass(frozen=True)
class RoundComparison:
    """One round of an A/B: the target's throughput speedup over the baseline and the relative
    change of median ITL, TPOT, TTFT and E2E (None: not measurable, with the reason in note)."""

    speedup_output_tokens_per_s: float | None
    itl_p50_change: float | None
    tpot_p50_change: float | None
    ttft_p50_change: float | None
    e2e_p50_change: float | None
    #: a speedup the target's tokens per step cannot explain, left out of speedup
    implausible_speedup: float | None = None
    note: str | None = None

    def figure(self, name: str) -> float | None:
        """One of PAIRED_FIGURES by name (bench/rounds.py combines them over rounds)."""
        value = getattr(self, name)
        return value if isinstance(value, float) else None

    def to_json(self) -> dict[str, object]:
        """The keys bench's JSON has always held (implausible_speedup and note only when set)."""
        out: dict[str, object] = {
            "speedup_output_tokens_per_s": self.speedup_output_tokens_per_s,
            "itl_p50_change": self.itl_p50_change,
            "tpot_p50_change": self.tpot_p50_change,
            "ttft_p50_change": self.ttft_p50_change,
            "e2e_p50_change": self.e2e_p50_change,
        }
        if self.implausible_speedup is not None:
            out["implausible_speedup"] = self.implausible_speedup
        if self.note:
            out["note"] = self.note
        return out


def compare(target: RunResult, baseline: RunResult) -> RoundComparison:
    """A/B figures: throughput speedup and relative change of median ITL, TPOT, TTFT and E2E.

    A server whose API process falls behind its engine merges queued outputs into one chunk
    (vLLM V1 does), so its median ITL is ~0 and its TPOT reflects the burst, not the step time: a
    relative change against that is meaningless and is left out, with a note saying why.
    """

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None or b == 0 else a / b

    def change(block: Callable[[RequestFigures], Latency]) -> float | None:
        r = ratio(block(target.requests).p50, block(baseline.requests).p50)
        return None if r is None else r - 1.0

    bursty = [
        name
        for name, run in (("target", target), ("baseline", baseline))
        if run.requests.itl_ms.p50 is not None and run.requests.itl_ms.p50 < BURST_ITL_MS
    ]
    notes = []
    if bursty:
        notes.append(
            f"{' and '.join(bursty)} streamed in bursts (median ITL < {BURST_ITL_MS} ms): the"
            " server merged queued tokens into single chunks, so ITL/TPOT changes are omitted;"
            " compare throughput and E2E"
        )
    speedup = ratio(target.output_tokens_per_s, baseline.output_tokens_per_s)
    implausible = None
    tau = target.acceptance.mean_accepted_length
    if tau is not None and speedup is not None and exceeds_tokens_per_step(speedup, tau):
        implausible, speedup = speedup, None
        notes.append(
            f"measured speedup {implausible:.2f}x exceeds the {tau:.2f} tokens per step the"
            " target's counters show; a speculative step is never cheaper than a plain one,"
            " so the baseline arm ran slow (stalled server or busy host): speedup omitted,"
            " re-measure"
        )
    return RoundComparison(
        speedup_output_tokens_per_s=speedup,
        itl_p50_change=None if bursty else change(lambda r: r.itl_ms),
        tpot_p50_change=None if bursty else change(lambda r: r.tpot_ms),
        ttft_p50_change=change(lambda r: r.ttft_ms),
        e2e_p50_change=change(lambda r: r.e2e_ms),
        implausible_speedup=implausible,
        note="; ".join(notes) or None,
    )
