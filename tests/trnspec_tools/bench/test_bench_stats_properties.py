"""Properties of bench's statistics on any requests: TTFT, ITL and TPOT come only from the
requests that completed, a request meets an objective at its limit and fails it just above,
the median interval holds the median with at least the asked coverage, and the counts add up."""

from __future__ import annotations

import math
import statistics
from math import comb

from hypothesis import given, settings
from hypothesis import strategies as st

from trnspec_tools.bench.bench_stats import (
    Slo,
    aggregate,
    exceeds_tokens_per_step,
    median_interval,
    tokens_per_step_estimate,
)
from trnspec_tools.client.bench_client import RequestResult

SETTINGS = settings(max_examples=100, deadline=None)
gap = st.floats(0.001, 0.5, allow_nan=False)


@st.composite
def requests(draw: st.DrawFn) -> RequestResult:
    if draw(st.booleans()) and draw(st.booleans()):
        return RequestResult(error=draw(st.sampled_from(["timeout", "http 500"])), retries=1)
    ttft = draw(gap)
    gaps = draw(st.lists(gap, max_size=6))
    return RequestResult(
        ttft_s=ttft,
        itl_s=gaps,
        e2e_s=ttft + sum(gaps),
        output_tokens=len(gaps) + 1 + draw(st.integers(0, 3)),
        usage_reported=True,
        content_chunks=len(gaps) + 1,
        parse_overhead_s=1e-5,
    )


@SETTINGS
@given(st.lists(requests(), max_size=8), st.floats(0.5, 100))
def test_latencies_come_from_completed_requests_and_counts_add_up(results, duration):
    fig = aggregate(results, duration)
    ok = [r for r in results if r.ok]
    assert (fig.num_requests, fig.completed) == (len(results), len(ok))
    assert fig.errors["total"] == len(results) - len(ok)
    assert fig.retries == sum(r.retries for r in results)
    assert fig.ttft_ms.count == len(ok)
    assert fig.itl_ms.count == sum(len(r.itl_s) for r in ok)
    assert fig.tpot_ms.count == sum(1 for r in ok if (r.output_tokens or 0) >= 2)
    assert fig.output_tokens == sum(r.output_tokens or 0 for r in ok)
    assert math.isclose(fig.output_tokens_per_s, fig.output_tokens / duration)
    assert math.isclose(fig.requests_per_s, len(ok) / duration)
    if ok:
        ttfts = sorted(r.ttft_s * 1000 for r in ok if r.ttft_s is not None)
        assert fig.ttft_ms.p50 is not None
        assert math.isclose(fig.ttft_ms.p50, statistics.median(ttfts), rel_tol=1e-9)
        assert fig.usage_reported
    chunks = sum(r.content_chunks for r in results)
    if chunks:
        assert fig.tool_overhead_us_per_chunk is not None
        overhead = sum(r.parse_overhead_s for r in results)
        assert math.isclose(fig.tool_overhead_us_per_chunk, overhead / chunks * 1e6)


@SETTINGS
@given(gap, st.lists(gap, min_size=1, max_size=5), st.sampled_from(["ttft", "tpot", "e2e"]))
def test_a_request_meets_an_objective_at_its_limit_and_fails_just_above(ttft, gaps, which):
    r = RequestResult(ttft_s=ttft, itl_s=gaps, e2e_s=ttft + sum(gaps), output_tokens=len(gaps) + 1)
    value_ms = {"ttft": r.ttft_s, "tpot": r.tpot_s, "e2e": r.e2e_s}[which] * 1000.0
    assert Slo(**{f"{which}_ms": value_ms}).met_by(r)
    assert not Slo(**{f"{which}_ms": value_ms * 0.999}).met_by(r)
    assert Slo(**{f"{which}_ms": value_ms}).is_set and not Slo().is_set


def test_a_single_token_request_cannot_miss_a_tpot_objective_but_misses_a_missing_ttft():
    single = RequestResult(ttft_s=0.1, e2e_s=0.1, output_tokens=1)
    assert single.tpot_s is None
    assert Slo(tpot_ms=1.0).met_by(single)
    assert not Slo(ttft_ms=1000.0).met_by(RequestResult(e2e_s=0.1, output_tokens=3))
    assert not Slo(e2e_ms=1e9).met_by(RequestResult(error="timeout"))


def test_goodput_counts_requests_meeting_every_objective_over_the_window():
    fast = RequestResult(ttft_s=0.01, itl_s=[0.01], e2e_s=0.02, output_tokens=2)
    slow = RequestResult(ttft_s=0.5, itl_s=[0.01], e2e_s=0.51, output_tokens=2)
    failed = RequestResult(error="timeout")
    fig = aggregate([fast, slow, failed], 2.0, Slo(ttft_ms=100))
    assert fig.goodput is not None
    assert (fig.goodput.good_requests, fig.goodput.fraction) == (1, 1 / 3)
    assert fig.goodput.requests_per_s == 0.5
    assert aggregate([fast], 1.0, Slo()).goodput is None


def _coverage(n: int, j: int) -> float:
    return 1.0 - 2.0 * sum(comb(n, i) for i in range(j)) / 2**n


@SETTINGS
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=40))
def test_the_median_interval_holds_the_median_with_the_tightest_sufficient_coverage(values):
    got = median_interval(values, 0.9)
    xs, n = sorted(values), len(values)
    if got is None:
        assert all(_coverage(n, j) < 0.9 for j in range(1, n // 2 + 1))
        return
    low, high = got
    assert low <= statistics.median(xs) <= high
    tightest = max(j for j in range(1, n // 2 + 1) if _coverage(n, j) >= 0.9)
    assert (low, high) == (xs[tightest - 1], xs[n - tightest])


@SETTINGS
@given(st.integers(2, 8), st.integers(1, 6), st.integers(0, 5))
def test_tokens_per_step_leaves_out_the_prefill_chunk(chunks, per_step, extra):
    r = RequestResult(
        ttft_s=0.1, e2e_s=1.0, output_tokens=1 + per_step * (chunks - 1),
        usage_reported=True, content_chunks=chunks,
    )  # fmt: skip
    assert tokens_per_step_estimate([r]) == per_step
    unreported = RequestResult(ttft_s=0.1, e2e_s=1, output_tokens=99, content_chunks=chunks)
    one_chunk = RequestResult(output_tokens=5, usage_reported=True, content_chunks=1)
    assert tokens_per_step_estimate([r, unreported, one_chunk]) == per_step
    assert tokens_per_step_estimate([one_chunk]) is None
    del extra


@SETTINGS
@given(st.floats(1.0, 8.0))
def test_a_speedup_is_judged_against_the_tokens_per_step_with_its_slack(tau):
    assert not exceeds_tokens_per_step(tau * 1.1 * 0.999, tau)
    assert exceeds_tokens_per_step(tau * 1.1 * 1.001, tau)
    assert not exceeds_tokens_per_step(100.0, 0.99)
    assert not exceeds_tokens_per_step(None, tau) and not exceeds_tokens_per_step(2.0, None)
