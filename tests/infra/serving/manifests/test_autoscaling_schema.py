"""The KEDA ScaledObject as KEDA reads it, and its timing as the documentation states it.

Schema: the validators generated from KEDA's CRD (crd_validation), with every field the CRD does
not declare refused, as `kubectl apply --validate=strict` does (the API server would otherwise drop
a misspelt field silently and KEDA run on its default). Timing: the polling, fallback, cooldown
and scale-down figures of docs/workload.md and docs/platform.md, and the scale-up policy of
trnspec.config.scale_up (the one `plan-deploy` times its ramp with), on any replica bounds.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from crd_validation import unknown_custom_fields, validate_custom
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.config.scale_up import SCALE_UP_PERIOD_SECONDS, scale_up_floor, scale_up_rate
from workload_cases import build

from infra.serving.manifests.autoscaling import scaled_object
from infra.settings.serving import ServingSettings

DOCS = Path(__file__).resolve().parents[4] / "docs"
EXISTING_PROMETHEUS = {"prometheus": "existing", "prometheus_url": "http://prom.example:9090"}
#: Replica bounds and Prometheus choices the schema checks run on.
CASES: list[dict[str, Any]] = [
    {},
    {"scale_to_zero": True},
    {"min_replicas": 3, "max_replicas": 3},
    {"min_replicas": 2, "max_replicas": 64, **EXISTING_PROMETHEUS},
]


def _scaled(**overrides: Any) -> dict[str, Any]:
    _, spec, _, _ = build()
    return scaled_object(spec, ServingSettings(**overrides))


def _doc_minutes(doc: str, pattern: str) -> tuple[int, ...]:
    """The numbers `pattern` captures in docs/<doc>, whitespace and line breaks normalised."""
    text = " ".join((DOCS / doc).read_text(encoding="utf-8").split())
    found = re.search(pattern, text)
    assert found, f"docs/{doc} no longer says {pattern!r}: update the test with the doc"
    return tuple(int(n) for n in found.groups())


def test_the_scaled_object_validates_against_keda_s_crd_schema() -> None:
    objects = [_scaled(**case) for case in CASES]
    assert validate_custom(objects) == [[] for _ in CASES]


def test_the_scaled_object_has_no_field_keda_s_crd_does_not_declare() -> None:
    objects = [_scaled(**case) for case in CASES]
    assert unknown_custom_fields(objects) == [[] for _ in CASES]


def test_the_unknown_field_check_names_a_misspelt_or_misplaced_field_by_its_path() -> None:
    planted = copy.deepcopy(_scaled())
    planted["spec"]["pollingIntervall"] = planted["spec"].pop("pollingInterval")
    behavior = planted["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    behavior["scaleUp"]["policies"][0]["periodSecond"] = 60
    planted["spec"]["triggers"][0]["metadata"]["any-key"] = "is allowed: a string map"
    (found,) = unknown_custom_fields([planted])
    assert sorted(found) == [
        "/spec/advanced/horizontalPodAutoscalerConfig/behavior/scaleUp/policies/0/periodSecond",
        "/spec/pollingIntervall",
    ]


def test_the_scaled_object_scales_the_deployment_it_is_named_after_in_its_namespace() -> None:
    _, spec, _, _ = build()
    so = _scaled()
    assert so["apiVersion"] == "keda.sh/v1alpha1" and so["kind"] == "ScaledObject"
    assert (so["metadata"]["name"], so["metadata"]["namespace"]) == (spec.name, spec.namespace)
    assert so["spec"]["scaleTargetRef"]["name"] == spec.name


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 64), st.integers(0, 63), st.booleans())
def test_the_scale_up_policy_is_trnspec_config_scale_up_s_alone_and_immediate(
    low: int, extra: int, to_zero: bool
) -> None:
    high = min(64, low + extra)
    so = _scaled(min_replicas=low, max_replicas=high, scale_to_zero=to_zero)["spec"]
    floor = scale_up_floor(low, to_zero)
    rate = scale_up_rate(floor, high)
    scale_up = so["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleUp"]
    assert scale_up["policies"] == [
        {"type": "Pods", "value": rate.pods, "periodSeconds": rate.period_s}
    ]
    assert scale_up["stabilizationWindowSeconds"] == 0  # the load's demand acts at once
    assert (so["minReplicaCount"], so["maxReplicaCount"]) == (floor, high)


def test_scale_down_waits_and_removes_pods_one_at_a_time_as_documented() -> None:
    wait, every = _doc_minutes(
        "workload.md", r"scale-down waits (\d+) minutes and removes one pod per (\d+) minutes"
    )
    for case in CASES:
        behavior = _scaled(**case)["spec"]["advanced"]["horizontalPodAutoscalerConfig"]
        scale_down = behavior["behavior"]["scaleDown"]
        assert scale_down["stabilizationWindowSeconds"] == wait * 60
        assert scale_down["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": every * 60}]


def test_the_last_replica_goes_after_the_documented_cooldown() -> None:
    (minutes,) = _doc_minutes("platform.md", r"the ScaledObject's (\d+)-minute cooldown")
    assert _scaled(scale_to_zero=True)["spec"]["cooldownPeriod"] == minutes * 60


def test_keda_polls_and_falls_back_to_the_floor_within_one_scale_up_period() -> None:
    polling, failures = _doc_minutes(
        "workload.md", r"KEDA polls Prometheus every (\d+) s; after (\d+) failed polls in a row"
    )
    for case in CASES:
        so = _scaled(**case)["spec"]
        assert so["pollingInterval"] == polling
        assert so["fallback"]["failureThreshold"] == failures
        assert polling * failures <= SCALE_UP_PERIOD_SECONDS
        assert so["fallback"]["replicas"] == max(1, ServingSettings(**case).min_replicas)


@pytest.mark.parametrize("case", CASES)
def test_one_request_in_flight_wakes_a_fleet_at_zero(case: dict[str, Any]) -> None:
    """KEDA activates (0 -> 1) when the metric exceeds activationThreshold: one request must."""
    (trigger,) = _scaled(**case)["spec"]["triggers"]
    assert 0 <= float(trigger["metadata"]["activationThreshold"]) < 1
