"""Properties of bench's statistics on any requests: TTFT, ITL and TPOT come only from the
requests that completed, a request meets an objective at its limit and fails it just above,
the median interval holds the median with at least the asked coverage, and the counts add up."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from made_runs import made_run

from trnspec_tools.ab.comparison import SPEEDUP_BOUND_SLACK, exceeds_tokens_per_step
from trnspec_tools.bench.run_result import AcceptanceFigures
from trnspec_tools.bench.stats import (
    Slo,
    aggregate,
    compare,
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


@st.composite
def streamed(draw: st.DrawFn) -> RequestResult:
    """A request as the client records it: completed or not, usage reported or not, any chunks."""
    chunks = draw(st.integers(0, 6))
    return RequestResult(
        error=draw(st.sampled_from([None, None, "timeout"])),
        ttft_s=0.1,
        e2e_s=1.0,
        output_tokens=draw(st.one_of(st.none(), st.integers(1, 30))),
        usage_reported=draw(st.booleans()),
        content_chunks=chunks,
    )


def _eligible(r: RequestResult) -> bool:
    return r.ok and r.usage_reported and r.output_tokens is not None and r.content_chunks >= 2


@SETTINGS
@given(st.lists(streamed(), max_size=8), st.randoms())
def test_tokens_per_step_pools_every_eligible_request_in_any_order(results, rnd):
    """Decode tokens over decode steps of every completed request with usage and 2+ chunks,
    pooled (not a mean of per-request ratios), whatever comes before or after it."""
    eligible = [r for r in results if _eligible(r)]
    tokens = sum((r.output_tokens or 0) - 1 for r in eligible)
    steps = sum(r.content_chunks - 1 for r in eligible)
    expected = tokens / steps if steps else None
    shuffled = list(results)
    rnd.shuffle(shuffled)
    assert tokens_per_step_estimate(results) == expected
    got = tokens_per_step_estimate(shuffled)
    assert got == expected or (got is not None and math.isclose(got, expected or 0.0))
    # the run's figure is the same estimate over its completed requests
    assert aggregate(results, 1.0).tokens_per_step_estimate == expected


@SETTINGS
@given(st.lists(streamed(), max_size=8))
def test_usage_is_reported_only_when_every_completed_request_reported_it(results):
    ok = [r for r in results if r.ok]
    assert aggregate(results, 1.0).usage_reported is (
        bool(ok) and all(r.usage_reported for r in ok)
    )
    # a completed request whose token count is unknown adds no tokens
    assert aggregate(results, 1.0).output_tokens == sum(r.output_tokens or 0 for r in ok)


def test_e2e_comes_from_the_completed_requests_that_have_one():
    done = [RequestResult(ttft_s=0.1, e2e_s=e, output_tokens=2) for e in (0.2, 0.4, 0.9)]
    unknown = RequestResult(ttft_s=0.1, output_tokens=2)
    fig = aggregate([*done, unknown, RequestResult(error="timeout")], 1.0)
    assert fig.e2e_ms.count == 3 and fig.e2e_ms.p50 == 400.0


def test_goodput_records_every_objective_and_is_none_over_no_request():
    slo = Slo(ttft_ms=100.0, tpot_ms=50.0, e2e_ms=900.0)
    good = RequestResult(ttft_s=0.05, itl_s=[0.01], e2e_s=0.1, output_tokens=3)
    fig = aggregate([good], 1.0, slo)
    assert fig.goodput is not None
    assert (fig.goodput.ttft_ms, fig.goodput.tpot_ms, fig.goodput.e2e_ms) == (100.0, 50.0, 900.0)
    empty = aggregate([], 1.0, slo)
    assert empty.goodput is not None and empty.goodput.fraction is None
    assert empty.goodput.good_requests == 0


def test_a_single_token_request_is_still_held_to_its_other_objectives():
    single = RequestResult(ttft_s=0.01, e2e_s=2.0, output_tokens=1)  # no TPOT
    assert not Slo(tpot_ms=10.0, e2e_ms=1000.0).met_by(single)
    assert Slo(tpot_ms=10.0, e2e_ms=3000.0).met_by(single)


def test_a_speedup_exactly_at_the_bound_is_possible():
    for tau in (1.0, 2.0, 4.7):
        assert not exceeds_tokens_per_step(tau * (1.0 + SPEEDUP_BOUND_SLACK), tau)


@pytest.mark.parametrize(
    ("target", "baseline"),
    [(None, 200.0), (300.0, None), (300.0, 0.0), (None, None)],
)
def test_a_ratio_with_a_figure_missing_or_a_zero_baseline_is_absent(target, baseline):
    t = made_run(ttft_p50=target)
    b = made_run(ttft_p50=baseline)
    assert compare(t, b).ttft_p50_change is None
    assert compare(made_run(ttft_p50=110.0), made_run(ttft_p50=100.0)).ttft_p50_change == (
        pytest.approx(0.1)
    )


def test_the_note_names_each_bursty_arm_and_what_was_left_out():
    bursty = dict(itl_p50=0.01, tpot_p50=0.1)
    paced = dict(itl_p50=6.0, tpot_p50=4.0)
    both = compare(made_run(**bursty), made_run(**bursty))
    assert both.note == (
        "target and baseline streamed in bursts (median ITL < 0.05 ms): the server merged"
        " queued tokens into single chunks, so ITL/TPOT changes are omitted; compare"
        " throughput and E2E"
    )
    assert compare(made_run(**bursty), made_run(**paced)).note.startswith(
        "target streamed in bursts"
    )
    assert compare(made_run(**paced), made_run(**paced)).note is None


def test_two_reasons_are_one_note_joined_in_order():
    target = made_run(
        output_tokens_per_s=1000.0,
        itl_p50=0.01,
        acceptance=AcceptanceFigures(mean_accepted_length=2.0),
    )
    note = str(compare(target, made_run(output_tokens_per_s=100.0, itl_p50=6.0)).note)
    bursts, speedup = note.split("; compare throughput and E2E; ")
    assert bursts.startswith("target streamed in bursts")
    assert speedup == (
        "measured speedup 10.00x exceeds the 2.00 tokens per step the target's counters show;"
        " a speculative step is never cheaper than a plain one, so the baseline arm ran slow"
        " (stalled server or busy host): speedup omitted, re-measure"
    )
