"""One measured run at one concurrency level against one endpoint: the benchmark's I/O core.

Shared by `bench.py` (A/B and concurrency sweeps) and `tune.py` (k sweeps) so both measure the same
way: warm-up requests first (not recorded), a /metrics snapshot, the measured requests (closed loop
bounded by concurrency, or open loop with Poisson arrivals), a second snapshot, then aggregates.
Acceptance comes from the spec-decode counter deltas over exactly that window, so warm-up and
other traffic before it are excluded.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trnspec.hardware.pricing import cost_per_1m_output_tokens

from trnspec_tools.bench.run_result import AcceptanceFigures, RunResult, SpecDecodeDeltas
from trnspec_tools.bench.stats import Slo, aggregate
from trnspec_tools.bench.workload import arrival_offsets
from trnspec_tools.boundary.endpoint import BoundKey, bind_key
from trnspec_tools.client.bench_client import (
    Api,
    RequestResult,
    StreamClient,
    scrape,
    send_request,
)
from trnspec_tools.client.client_args import api_key
from trnspec_tools.client.http_stream import Deadlines
from trnspec_tools.client.metrics import (
    NO_COUNTERS,
    UNMOVED_COUNTERS,
    MetricsFormatError,
    SpecDecodeCounters,
    acceptance,
    checked_delta,
)
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.client.retry_rule import DEFAULT_RETRY_AFTER_CAP_S


@dataclass(frozen=True)
class RunOptions:
    """How to load the server; identical for every arm of a comparison."""

    api: Api = "completions"
    #: warm-up requests, not recorded; None = one per concurrency slot, so every connection the
    #: measured window uses is already open (a new TCP connect would land in someone's TTFT)
    warmup: int | None = None
    request_rate: float = float("inf")
    seed: int = 0
    #: per-request deadline for the whole request, s
    timeout_s: float = Deadlines.total_s
    connect_timeout_s: float = Deadlines.connect_s
    first_byte_timeout_s: float = Deadlines.first_byte_s
    max_retries: int = 2
    #: longest wait a Retry-After header may ask for before a retry, s
    retry_after_cap_s: float = DEFAULT_RETRY_AFTER_CAP_S
    #: sent as "Authorization: Bearer"; kept out of repr so it never reaches a log. Only what
    #: the caller gives (a BoundKey only to its origin): the runner reads no key from the
    #: environment, so a key never reaches an endpoint it was not given for
    api_key: str | BoundKey | None = field(default=None, repr=False)
    ignore_eos: bool = True
    slo: Slo = field(default_factory=Slo)
    #: the server's k, only needed to turn a chunk-based estimate into an acceptance rate
    num_speculative_tokens: int | None = None


def run_options_from_args(args: argparse.Namespace, **extra: Any) -> RunOptions:
    """RunOptions from the flags bench and tune share (workload_args, client_args); `extra` sets
    the rest (request rate, EOS, SLOs, k)."""
    return RunOptions(
        api=args.api,
        warmup=args.warmup,
        seed=args.seed,
        timeout_s=args.timeout,
        connect_timeout_s=args.connect_timeout,
        first_byte_timeout_s=args.first_byte_timeout,
        max_retries=args.max_retries,
        retry_after_cap_s=args.retry_after_cap,
        api_key=bind_key(api_key(args), getattr(args, "endpoint", None)),
        **extra,
    )


def spec_decode_fields(
    before: str | None,
    after: str | None,
    tokens_per_step_estimate: float | None,
    k: int | None,
    model: str | None = None,
    completed: int | None = None,
    missing: str | None = None,
) -> AcceptanceFigures:
    """Acceptance figures for the window between two /metrics snapshots.

    Only from completed work: with `completed` == 0 (no request of the window finished) every
    figure is absent, whatever the counters say. With k known, the counters must allow at most k
    draft tokens per draft (checked_delta) and a chunk estimate above k+1 tokens per step is
    dropped (the server or a proxy coalesced chunks).

    Prefer the server's own counters (exact) when their delta is consistent. When the server
    exports none (or /metrics is missing), or they did not move (some Neuron builds), fall back to
    the chunk-size estimate, labelled as such. When they are present but inconsistent (a reset
    or restart in the window, accepted > drafted), acceptance is absent: an estimate would hide
    a fault. `acceptance_note` says why the counters were not used (for a scrape that gave no
    text, `missing`: the answer the server gave, e.g. HTTP 401).
    """
    if completed == 0:
        return AcceptanceFigures(
            acceptance_note="no request completed: acceptance is measured on completed work"
        )
    figures, reason, may_estimate = _from_counters(before, after, k, model, missing)
    if figures is not None:
        return figures
    if not may_estimate:
        return AcceptanceFigures(acceptance_note=reason)
    return _from_chunks(reason, tokens_per_step_estimate, k)


def _from_counters(
    before: str | None,
    after: str | None,
    k: int | None,
    model: str | None,
    missing: str | None = None,
) -> tuple[AcceptanceFigures | None, str, bool]:
    """(the figures of a consistent counter delta, else None; why not; whether the chunk
    estimate may stand in: only when the counters are absent or did not move)."""
    if before is None or after is None:
        return None, missing or "the server has no /metrics endpoint", True
    try:
        first = SpecDecodeCounters.from_text(before, model)
        second = SpecDecodeCounters.from_text(after, model)
    except MetricsFormatError as exc:
        first = second = SpecDecodeCounters()
        reason = f"/metrics is not a Prometheus exposition ({str(exc)[:80]})"
    else:
        reason = NO_COUNTERS
    checked = checked_delta(first, second, k)
    if checked.delta is not None:
        return _counter_figures(checked.delta), reason, False
    if first.present or second.present:
        reason = checked.reason or reason
        return None, reason, reason == UNMOVED_COUNTERS
    return None, reason, True


def _counter_figures(delta: SpecDecodeCounters) -> AcceptanceFigures:
    acc = acceptance(delta)
    per_pos = tuple(p for p in acc.per_position if p is not None)
    return AcceptanceFigures(
        acceptance_rate=acc.acceptance_rate,
        mean_accepted_length=acc.mean_accepted_length,
        acceptance_per_position=per_pos or None,
        acceptance_source="server-metrics",
        k_used=acc.k_used,
        spec_decode_deltas=SpecDecodeDeltas(
            num_drafts=int(delta.drafts),
            num_draft_tokens=int(delta.draft_tokens),
            num_accepted_tokens=int(delta.accepted_tokens),
            accepted_per_position=tuple(
                int(v) for _, v in sorted(delta.accepted_per_position.items())
            ),
        ),
    )


def _from_chunks(reason: str, estimate: float | None, k: int | None) -> AcceptanceFigures:
    """The chunk-size estimate of tokens per step, unless it is impossible for k."""
    if estimate is None:
        return AcceptanceFigures(acceptance_note=reason)
    if k is not None and estimate > k + 1:
        return AcceptanceFigures(
            acceptance_note=f"{reason}; the chunk estimate ({estimate:.2f} tokens per step) is"
            f" above k+1={k + 1}, impossible: chunks were coalesced"
        )
    return AcceptanceFigures(
        acceptance_rate=max(0.0, min(1.0, (estimate - 1.0) / k)) if k else None,
        mean_accepted_length=estimate,
        acceptance_source="estimate-from-chunks",
        acceptance_note=reason,
    )


async def _run_requests(
    client: StreamClient,
    model: str,
    specs: Sequence[RequestSpec],
    concurrency: int,
    opts: RunOptions,
    offsets: Sequence[float],
    on_done: Callable[[], None] | None,
) -> list[RequestResult]:
    sem = asyncio.Semaphore(concurrency)
    results: list[RequestResult | None] = [None] * len(specs)
    t0 = time.perf_counter()

    async def one(i: int, spec: RequestSpec) -> None:
        delay = t0 + offsets[i] - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        async with sem:
            results[i] = await send_request(
                client, model, spec, opts.api, opts.max_retries, opts.ignore_eos
            )
        if on_done is not None:
            on_done()

    await asyncio.gather(*(one(i, s) for i, s in enumerate(specs)))
    return [r for r in results if r is not None]


async def run_level(
    base_url: str,
    model: str,
    specs: Sequence[RequestSpec],
    concurrency: int,
    opts: RunOptions,
    price_per_hour: float | None = None,
    on_done: Callable[[], None] | None = None,
) -> RunResult:
    """Warm up, measure, and return the run's figures."""
    async with StreamClient(
        base_url, deadlines(opts), opts.api_key, opts.retry_after_cap_s
    ) as client:
        n_warm = concurrency if opts.warmup is None else opts.warmup
        if n_warm > 0:
            warm = [specs[i % len(specs)] for i in range(n_warm)]
            await _run_requests(client, model, warm, concurrency, opts, [0.0] * len(warm), None)
        before = await scrape(client)
        offsets = arrival_offsets(len(specs), opts.request_rate, opts.seed)
        cpu0 = time.process_time()
        start = time.perf_counter()
        results = await _run_requests(client, model, specs, concurrency, opts, offsets, on_done)
        duration = time.perf_counter() - start
        cpu_s = time.process_time() - cpu0
        after = await scrape(client)
    figures = aggregate(results, duration, opts.slo)
    tps = figures.output_tokens_per_s
    out_tokens = figures.output_tokens
    return RunResult(
        requests=figures,
        acceptance=spec_decode_fields(
            before.text,
            after.text,
            figures.tokens_per_step_estimate,
            opts.num_speculative_tokens,
            model,
            completed=figures.completed,
            missing=before.missing or after.missing,
        ),
        cost_per_1m_output_tokens_usd=(
            cost_per_1m_output_tokens(price_per_hour, tps) if price_per_hour else None
        ),
        tool_cpu_fraction_of_one_core=cpu_s / duration if duration > 0 else None,
        tool_cpu_us_per_output_token=cpu_s / out_tokens * 1e6 if out_tokens else None,
        concurrency=concurrency,
        request_rate=None if opts.request_rate == float("inf") else opts.request_rate,
    )


def deadlines(opts: RunOptions) -> Deadlines:
    return Deadlines.capped(opts.connect_timeout_s, opts.first_byte_timeout_s, opts.timeout_s)
