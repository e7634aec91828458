"""Properties of the KEDA autoscaling policy on any replica bounds: the scale-up rate is the
smallest that reaches max_replicas from the floor (0 with scale to zero) within RAMP_STEPS
periods, the in-flight query adds running and waiting requests, and its selector picks the
workload's own series."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.config.scale_up import RAMP_STEPS, SCALE_UP_PERIOD_SECONDS
from workload_cases import build

from infra.serving.manifests.autoscaling import (
    in_flight_query,
    in_flight_selector,
    scale_up_pods_per_period,
    time_to_peak_seconds,
)
from infra.serving.manifests.monitoring import SERVICE_TARGET_LABEL
from infra.settings.serving import ServingSettings

SETTINGS = settings(max_examples=150, deadline=None)


@st.composite
def replica_bounds(draw: st.DrawFn) -> ServingSettings:
    low = draw(st.integers(1, 64))
    high = draw(st.integers(low, 64))
    return ServingSettings(min_replicas=low, max_replicas=high, scale_to_zero=draw(st.booleans()))


@SETTINGS
@given(replica_bounds())
def test_the_rate_is_the_smallest_that_reaches_the_peak_within_the_ramp(s: ServingSettings):
    floor = 0 if s.scale_to_zero else s.min_replicas
    rate = scale_up_pods_per_period(s)
    assert rate >= 1
    assert floor + RAMP_STEPS * rate >= s.max_replicas
    assert rate == 1 or floor + RAMP_STEPS * (rate - 1) < s.max_replicas


@SETTINGS
@given(replica_bounds())
def test_time_to_peak_is_the_periods_the_rate_needs_from_the_floor(s: ServingSettings):
    floor = 0 if s.scale_to_zero else s.min_replicas
    periods = math.ceil((s.max_replicas - floor) / scale_up_pods_per_period(s))
    assert time_to_peak_seconds(s) == periods * SCALE_UP_PERIOD_SECONDS
    assert periods <= RAMP_STEPS


def _evaluate(query: str, running: int, waiting: int) -> int:
    """The query's value when the workload's gauges read `running` and `waiting` (a series of
    another workload would not match the selector; `or vector(0)` only applies without series)."""
    values = {"running": running, "waiting": waiting}
    arithmetic = re.sub(
        r"sum\(vllm:num_requests_(running|waiting)\{[^}]*\}\)",
        lambda m: str(values[m.group(1)]),
        query,
    )
    left, _, fallback = arithmetic.partition(" or ")
    assert fallback == "vector(0)"
    assert re.fullmatch(r"[\d\s()+]+", left), left
    return sum(int(n) for n in re.findall(r"\d+", left))  # only + between the sums


@given(st.integers(0, 1000), st.integers(0, 1000))
@SETTINGS
def test_the_in_flight_query_is_running_plus_waiting(running: int, waiting: int):
    _, spec, _, serving = build()
    query = in_flight_query(spec, serving)
    assert _evaluate(query, running, waiting) == running + waiting


def _matchers(selector: str) -> dict[str, str]:
    """The label matchers of a PromQL selector `{a="x",b="y"}`, refusing any other syntax."""
    matcher = r'[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"'
    assert re.fullmatch(r"\{" + matcher + r"(," + matcher + r")*\}", selector), selector
    return dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"', selector))


@pytest.mark.parametrize("prometheus", ["in-cluster", "existing"])
def test_the_selector_picks_this_workload_s_series_and_in_cluster_only_its_service(prometheus):
    """In-cluster, the ServiceMonitor labels series with the Service, which keeps a calibration's
    speculative arm (same model name, its own Service) out; an existing Prometheus does not
    scrape the arm, and labels nothing `service`."""
    url = {"prometheus_url": "http://prom.example:9090"} if prometheus == "existing" else {}
    _, spec, _, serving = build(prometheus=prometheus, **url)
    expected = {"namespace": spec.namespace, "model_name": spec.served_model_name}
    if prometheus == "in-cluster":
        expected[SERVICE_TARGET_LABEL] = spec.name
    assert _matchers(in_flight_selector(spec, serving)) == expected
