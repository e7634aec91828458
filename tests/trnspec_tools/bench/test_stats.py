"""Aggregates over per-request timings, checked against hand-computed values."""

from __future__ import annotations

import pytest
from made_runs import made_run

from trnspec_tools.bench.run_result import AcceptanceFigures, Latency
from trnspec_tools.bench.stats import (
    Slo,
    aggregate,
    compare,
    tokens_per_step_estimate,
)
from trnspec_tools.client.bench_client import RequestResult


def ok(ttft: float, gaps: list[float], tokens: int, chunks: int | None = None) -> RequestResult:
    return RequestResult(
        ttft_s=ttft,
        itl_s=gaps,
        e2e_s=ttft + sum(gaps),
        output_tokens=tokens,
        usage_reported=True,
        content_chunks=chunks if chunks is not None else len(gaps) + 1,
    )


def test_summary_percentiles_use_linear_interpolation_in_ms():
    s = Latency.of_seconds([0.010, 0.020, 0.030, 0.040])
    assert s.p50 == pytest.approx(25.0)
    assert s.p90 == pytest.approx(37.0)  # 30 + 0.7 * 10
    assert s.mean == pytest.approx(25.0)
    assert s.count == 4


def test_summary_of_nothing_is_none_not_zero():
    assert Latency.of_seconds([]).p50 is None
    assert Latency.of_seconds([]).to_json() == {
        "p50": None,
        "p90": None,
        "p99": None,
        "mean": None,
        "count": 0,
    }


def test_tpot_excludes_the_first_token():
    r = ok(0.1, [0.02, 0.02, 0.02], tokens=4)
    assert r.tpot_s == pytest.approx(0.02)
    assert ok(0.1, [], tokens=1).tpot_s is None


def test_aggregate_counts_tokens_and_rates_over_the_window():
    results = [ok(0.1, [0.02] * 3, 4), ok(0.2, [0.04] * 3, 4)]
    results.append(RequestResult(error="http_5xx"))
    results.append(RequestResult(error="timeout", retries=0))
    stats = aggregate(results, duration_s=2.0)
    assert stats.output_tokens == 8
    assert stats.output_tokens_per_s == pytest.approx(4.0)
    assert stats.requests_per_s == pytest.approx(1.0)
    assert stats.errors == {"total": 2, "http_5xx": 1, "timeout": 1}
    assert stats.ttft_ms.p50 == pytest.approx(150.0)
    assert stats.itl_ms.count == 6
    assert stats.tpot_ms.mean == pytest.approx(30.0)


def test_goodput_counts_only_requests_meeting_every_objective():
    results = [ok(0.1, [0.02] * 3, 4), ok(0.3, [0.02] * 3, 4), ok(0.1, [0.05] * 3, 4)]
    stats = aggregate(results, 1.0, Slo(ttft_ms=200, tpot_ms=30))
    assert stats.goodput is not None
    assert stats.goodput.good_requests == 1
    assert stats.goodput.requests_per_s == pytest.approx(1.0)
    assert stats.to_json()["goodput"] == {
        "slo": {"ttft_ms": 200, "tpot_ms": 30, "e2e_ms": None},
        "good_requests": 1,
        "requests_per_s": pytest.approx(1.0),
        "fraction": pytest.approx(1 / 3),
    }


def test_tokens_per_step_estimate_leaves_out_the_prefill_chunk():
    # 1 token from prefill, then 3 steps of 3 tokens: 9 / 3 = 3 tokens per step
    assert tokens_per_step_estimate([ok(0.1, [0.02] * 3, tokens=10, chunks=4)]) == 3.0


def test_tokens_per_step_estimate_needs_server_usage():
    r = ok(0.1, [0.02] * 3, tokens=4)
    r.usage_reported = False
    assert tokens_per_step_estimate([r]) is None


def test_compare_reports_speedup_and_relative_latency_changes():
    t = made_run(output_tokens_per_s=300.0, itl_p50=30.0, ttft_p50=110.0, tpot_p50=10.0)
    b = made_run(output_tokens_per_s=200.0, itl_p50=20.0, ttft_p50=100.0, tpot_p50=20.0)
    c = compare(t, b)
    assert c.speedup_output_tokens_per_s == pytest.approx(1.5)
    assert c.itl_p50_change == pytest.approx(0.5)
    assert c.ttft_p50_change == pytest.approx(0.1)
    assert c.tpot_p50_change == pytest.approx(-0.5)


def test_compare_omits_per_token_changes_against_a_bursty_stream_and_says_why():
    t = made_run(output_tokens_per_s=300.0, itl_p50=6.0, ttft_p50=20.0, tpot_p50=4.0, e2e_p50=300.0)
    b = made_run(
        output_tokens_per_s=400.0, itl_p50=0.01, ttft_p50=130.0, tpot_p50=0.1, e2e_p50=150.0
    )
    c = compare(t, b)
    assert c.itl_p50_change is None and c.tpot_p50_change is None
    assert c.e2e_p50_change == pytest.approx(1.0)
    assert "baseline streamed in bursts" in c.note


def test_compare_omits_a_speedup_the_acceptance_cannot_explain_and_says_why():
    from trnspec_tools.bench.stats import compare

    target = made_run(
        output_tokens_per_s=1034.0, acceptance=AcceptanceFigures(mean_accepted_length=1.99)
    )
    baseline = made_run(output_tokens_per_s=262.7)
    out = compare(target, baseline)
    assert out.speedup_output_tokens_per_s is None
    assert abs(out.implausible_speedup - 1034.0 / 262.7) < 1e-9
    assert "exceeds the 1.99 tokens per step" in out.note
    fine = compare(
        made_run(output_tokens_per_s=300.0, acceptance=AcceptanceFigures(mean_accepted_length=4.7)),
        baseline,
    )
    assert abs(fine.speedup_output_tokens_per_s - 300.0 / 262.7) < 1e-9
    assert fine.implausible_speedup is None
