"""bench.run_result: a run is typed in the tools and written with exactly the keys the reports
have always had (bench.py's and tune.py's JSON schema)."""

from __future__ import annotations

from trnspec_tools.bench.bench_run import spec_decode_fields
from trnspec_tools.bench.bench_stats import Slo, aggregate
from trnspec_tools.bench.run_result import RunResult
from trnspec_tools.client.bench_client import RequestResult

#: The keys of one run in bench.py's JSON, in the order they are written.
RUN_KEYS = [
    "num_requests",
    "completed",
    "duration_s",
    "ttft_ms",
    "itl_ms",
    "tpot_ms",
    "e2e_ms",
    "output_tokens",
    "output_tokens_per_s",
    "requests_per_s",
    "errors",
    "retries",
    "usage_reported",
    "tool_overhead_us_per_chunk",
    "tokens_per_step_estimate",
    "acceptance_rate",
    "mean_accepted_length",
    "acceptance_per_position",
    "acceptance_source",
    "acceptance_note",
    "spec_decode_deltas",
    "k_used",
    "cost_per_1m_output_tokens_usd",
    "tool_cpu_fraction_of_one_core",
    "tool_cpu_us_per_output_token",
    "concurrency",
    "request_rate",
]


def _run(slo: Slo | None = None) -> RunResult:
    done = RequestResult(ttft_s=0.1, itl_s=[0.02], e2e_s=0.12, output_tokens=2, content_chunks=2)
    return RunResult(
        requests=aggregate([done, RequestResult(error="timeout")], 1.0, slo),
        acceptance=spec_decode_fields(None, None, None, None, completed=1),
        cost_per_1m_output_tokens_usd=None,
        tool_cpu_fraction_of_one_core=0.01,
        tool_cpu_us_per_output_token=5.0,
        concurrency=2,
        request_rate=None,
    )


def test_a_run_is_written_with_exactly_the_reports_keys_in_their_order() -> None:
    assert list(_run().to_json()) == RUN_KEYS


def test_goodput_is_written_only_when_an_objective_is_set() -> None:
    written = _run(Slo(ttft_ms=500)).to_json()
    assert list(written) == [*RUN_KEYS[:15], "goodput", *RUN_KEYS[15:]]
    assert written["goodput"]["good_requests"] == 1  # type: ignore[index]


def test_the_typed_figures_are_the_written_ones() -> None:
    run = _run()
    written = run.to_json()
    assert written["errors"] == {"total": 1, "timeout": 1} == dict(run.requests.errors)
    assert run.requests.error_total == 1
    assert written["output_tokens_per_s"] == run.output_tokens_per_s == 2.0
    assert written["ttft_ms"] == {"p50": 100.0, "p90": 100.0, "p99": 100.0, "mean": 100.0,
                                  "count": 1}  # fmt: skip
    assert written["acceptance_note"] == "the server has no /metrics endpoint"
