"""Typed runs (bench.run_result.RunResult) made by hand for pure tests: only the figures a test
names are set, every other latency block is an empty sample and every other figure is absent.
Every run does the same work (OUTPUT_TOKENS output tokens, unless a test says otherwise), as the
arms of a real comparison do: a faster run takes less time, it does not produce more tokens."""

from __future__ import annotations

from trnspec_tools.bench.run_result import (
    AcceptanceFigures,
    Latency,
    RequestFigures,
    RunResult,
    SpecDecodeDeltas,
)
from trnspec_tools.tune.round_run import RoundRun


def p50(ms: float | None) -> Latency:
    """A latency block whose median is `ms` (None: an empty sample)."""
    if ms is None:
        return Latency(None, None, None, None, 0)
    return Latency(ms, ms, ms, ms, 1)


def deltas(drafts: int, draft_tokens: int, accepted: int, per_position=()) -> SpecDecodeDeltas:
    return SpecDecodeDeltas(drafts, draft_tokens, accepted, tuple(per_position))


#: the output tokens of a made run (the same for every arm, as with ignore_eos)
OUTPUT_TOKENS = 1000


def made_run(
    *,
    output_tokens_per_s: float = 100.0,
    output_tokens: int = OUTPUT_TOKENS,
    ttft_p50: float | None = None,
    itl_p50: float | None = None,
    tpot_p50: float | None = None,
    e2e_p50: float | None = None,
    concurrency: int = 1,
    request_rate: float | None = None,
    acceptance: AcceptanceFigures | None = None,
) -> RunResult:
    requests = RequestFigures(
        num_requests=1,
        completed=1,
        duration_s=output_tokens / output_tokens_per_s if output_tokens_per_s > 0 else 1.0,
        ttft_ms=p50(ttft_p50),
        itl_ms=p50(itl_p50),
        tpot_ms=p50(tpot_p50),
        e2e_ms=p50(e2e_p50),
        output_tokens=output_tokens,
        output_tokens_per_s=output_tokens_per_s,
        requests_per_s=1.0,
        errors={"total": 0},
        retries=0,
        usage_reported=True,
        tool_overhead_us_per_chunk=None,
        tokens_per_step_estimate=None,
    )
    return RunResult(
        requests=requests,
        acceptance=acceptance or AcceptanceFigures(),
        cost_per_1m_output_tokens_usd=None,
        tool_cpu_fraction_of_one_core=None,
        tool_cpu_us_per_output_token=None,
        concurrency=concurrency,
        request_rate=request_rate,
    )


def kept_run(
    output_tokens_per_s: float,
    output_tokens: int = OUTPUT_TOKENS,
    acceptance: AcceptanceFigures | None = None,
) -> RoundRun:
    """A round's kept run with the given throughput, no errors, one request."""
    return RoundRun(
        output_tokens_per_s=output_tokens_per_s,
        output_tokens=output_tokens,
        duration_s=1.0,
        completed=1,
        num_requests=1,
        errors=0,
        acceptance=acceptance or AcceptanceFigures(),
    )
