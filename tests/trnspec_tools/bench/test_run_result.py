"""bench.run_result: a run is typed in the tools and written with exactly the keys the reports
have always had (bench.py's and tune.py's JSON schema)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trnspec.boundary import json_io
from trnspec.boundary.errors import BoundaryError

from trnspec_tools.bench.run import spec_decode_fields
from trnspec_tools.bench.run_result import (
    AcceptanceFigures,
    ArmRun,
    Goodput,
    Latency,
    RequestFigures,
    RunResult,
    SpecDecodeDeltas,
)
from trnspec_tools.bench.stats import Slo, aggregate
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


# --- reading a written run back: RunResult.from_json is the exact inverse of to_json ----------

_counts = st.integers(min_value=0, max_value=10**9)
_non_negative = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)
_fraction = st.floats(min_value=0, max_value=1, allow_nan=False)
_text = st.text(max_size=12)


@st.composite
def _latencies(draw: st.DrawFn) -> Latency:
    if draw(st.booleans()):
        return Latency(None, None, None, None, 0)
    p50, p90, p99, mean = (draw(_non_negative) for _ in range(4))
    return Latency(p50, p90, p99, mean, draw(st.integers(1, 10**6)))


_goodputs = st.builds(
    Goodput,
    ttft_ms=st.none() | _non_negative,
    tpot_ms=st.none() | _non_negative,
    e2e_ms=st.none() | _non_negative,
    good_requests=_counts,
    requests_per_s=_non_negative,
    fraction=st.none() | _fraction,
)
_requests = st.builds(
    RequestFigures,
    num_requests=_counts,
    completed=_counts,
    duration_s=_non_negative,
    ttft_ms=_latencies(),
    itl_ms=_latencies(),
    tpot_ms=_latencies(),
    e2e_ms=_latencies(),
    output_tokens=_counts,
    output_tokens_per_s=_non_negative,
    requests_per_s=_non_negative,
    errors=st.dictionaries(_text, _counts, max_size=3),
    retries=_counts,
    usage_reported=st.booleans(),
    tool_overhead_us_per_chunk=st.none() | _non_negative,
    tokens_per_step_estimate=st.none() | _non_negative,
    goodput=st.none() | _goodputs,
)
_acceptance = st.builds(
    AcceptanceFigures,
    acceptance_rate=st.none() | _fraction,
    mean_accepted_length=st.none() | _non_negative,
    acceptance_per_position=st.none() | st.lists(_fraction, max_size=4).map(tuple),
    acceptance_source=st.none() | st.sampled_from(["server-metrics", "estimate-from-chunks"]),
    acceptance_note=st.none() | _text,
    spec_decode_deltas=st.none()
    | st.builds(
        SpecDecodeDeltas,
        _counts,
        _counts,
        _counts,
        st.lists(_counts, max_size=4).map(tuple),
    ),
    k_used=st.none() | _non_negative,
)
_runs = st.builds(
    RunResult,
    requests=_requests,
    acceptance=_acceptance,
    cost_per_1m_output_tokens_usd=st.none() | _non_negative,
    tool_cpu_fraction_of_one_core=st.none() | _non_negative,
    tool_cpu_us_per_output_token=st.none() | _non_negative,
    concurrency=st.integers(1, 10**5),
    request_rate=st.none() | _non_negative.filter(lambda x: x > 0),
)
_arm_runs = st.builds(
    ArmRun,
    arm=_text,
    endpoint=_text,
    model=_text,
    result=_runs,
    prediction=st.none() | st.dictionaries(_text, _non_negative, max_size=2),
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _written(value: dict[str, object]) -> object:
    """What a file holds: the JSON text as written, read back with the bounded reader."""
    return json_io.loads(json_io.dumps(value), "test")


@SETTINGS
@given(_runs)
def test_a_run_read_back_from_its_written_json_is_the_same_run(run: RunResult) -> None:
    assert RunResult.from_json(_written(run.to_json()), "run") == run


@SETTINGS
@given(_arm_runs)
def test_an_arm_run_read_back_from_its_written_json_is_the_same_arm_run(arm: ArmRun) -> None:
    assert ArmRun.from_json(_written(arm.to_json()), "runs[0]") == arm


def _written_run(**changes: object) -> dict[str, object]:
    return {**_run(Slo(ttft_ms=500)).to_json(), **changes}


@pytest.mark.parametrize(
    ("changes", "field", "fix"),
    [
        ({"output_tokens_per_s": -1.0}, "runs.2.output_tokens_per_s", ">= 0"),
        ({"output_tokens_per_s": "fast"}, "runs.2.output_tokens_per_s", "finite number"),
        ({"acceptance_rate": 1.5}, "runs.2.acceptance_rate", "<= 1"),
        ({"acceptance_per_position": [0.5, 2.0]}, "runs.2.acceptance_per_position[1]", "<= 1"),
        ({"concurrency": 0}, "runs.2.concurrency", ">= 1"),
        ({"concurrency": 2.5}, "runs.2.concurrency", "integer"),
        ({"completed": True}, "runs.2.completed", "integer"),
        ({"tpot_ms": {"p50": 1.0}}, "runs.2.tpot_ms.p90", "required"),
        ({"errors": {"total": -1}}, "runs.2.errors.total", ">= 0"),
        ({"usage_reported": "yes"}, "runs.2.usage_reported", "true or false"),
        ({"spec_decode_deltas": []}, "runs.2.spec_decode_deltas", "JSON object"),
        ({"goodput": {"slo": {}}}, "runs.2.goodput.slo.ttft_ms", "required"),
        ({"request_rate": 0.0}, "runs.2.request_rate", "> 0"),
    ],
)
def test_a_malformed_run_is_refused_in_one_line_naming_the_field(changes, field, fix) -> None:
    with pytest.raises(BoundaryError) as refused:
        RunResult.from_json(_written_run(**changes), "runs.2")
    assert refused.value.field == field
    assert fix in str(refused.value) and "\n" not in str(refused.value)


def test_a_run_missing_a_key_is_refused_naming_the_key() -> None:
    written = _written_run()
    del written["duration_s"]
    with pytest.raises(BoundaryError, match=r"^runs\.2\.duration_s=.*required"):
        RunResult.from_json(written, "runs.2")
