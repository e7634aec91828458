"""Service, internal NLB, PodDisruptionBudget, namespace and KEDA autoscaling."""

from __future__ import annotations

import pytest
from workload_cases import build, by_kind

from infra.contracts import KUBE_PROMETHEUS_STACK_FULLNAME, PROMETHEUS_PORT
from infra.serving.manifests.autoscaling import time_to_peak_seconds
from infra.settings.serving import ServingSettings


def test_cluster_service_selects_the_serving_pods() -> None:
    m = build()[2]
    svc = by_kind(m, "Service", build()[1].name)
    dep = by_kind(m, "Deployment")
    assert svc["spec"]["type"] == "ClusterIP"
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in svc["spec"]["selector"].items())
    assert svc["spec"]["ports"][0]["targetPort"] == "http"


@pytest.mark.parametrize(("enabled", "count"), [(False, 0), (True, 1)])
def test_internal_nlb_only_when_configured(enabled: bool, count: int) -> None:
    m = build(internal_nlb=enabled)[2]
    nlbs = [x for x in m.all() if x["kind"] == "Service" and x["spec"]["type"] == "LoadBalancer"]
    assert len(nlbs) == count
    for nlb in nlbs:
        ann = nlb["metadata"]["annotations"]
        assert ann["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal"
        assert nlb["spec"]["loadBalancerClass"] == "service.k8s.aws/nlb"


def test_pdb_lets_one_pod_go_at_a_time_and_never_blocks_drains() -> None:
    m = build()[2]
    pdb = by_kind(m, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert "minAvailable" not in pdb["spec"]
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert (
        pdb["spec"]["selector"]["matchLabels"]
        == by_kind(m, "Deployment")["spec"]["selector"]["matchLabels"]
    )


def test_namespace_enforces_restricted_pod_security() -> None:
    ns = build(namespace="serving")[2].namespace
    assert ns["metadata"]["name"] == "serving"
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_scaled_object_scales_the_deployment_on_streams_in_flight_per_replica() -> None:
    _, spec, m, _ = build(min_replicas=2, max_replicas=6, streams_per_replica=3)
    so = by_kind(m, "ScaledObject")["spec"]
    assert so["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": spec.name,
    }
    assert (so["minReplicaCount"], so["maxReplicaCount"]) == (2, 6)
    (trigger,) = so["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["metricType"] == "AverageValue"
    assert trigger["metadata"]["threshold"] == "3"
    query = trigger["metadata"]["query"]
    assert spec.streams_per_replica == 3
    assert "sum(vllm:num_requests_running{" in query
    assert "sum(vllm:num_requests_waiting{" in query
    assert f'namespace="{spec.namespace}"' in query
    assert f'model_name="{spec.served_model_name}"' in query
    assert so["fallback"]["replicas"] == 2


def test_scale_to_zero_sets_the_floor_to_zero() -> None:
    so = by_kind(build(scale_to_zero=True)[2], "ScaledObject")["spec"]
    assert so["minReplicaCount"] == 0
    assert so["fallback"]["replicas"] >= 1


def test_keda_queries_in_cluster_prometheus_or_the_configured_one() -> None:
    so = by_kind(build()[2], "ScaledObject")["spec"]
    assert so["triggers"][0]["metadata"]["serverAddress"] == (
        f"http://{KUBE_PROMETHEUS_STACK_FULLNAME}-prometheus.monitoring.svc:{PROMETHEUS_PORT}"
    )
    url = "http://prom.example.svc:9090"
    so = by_kind(build(prometheus="existing", prometheus_url=url)[2], "ScaledObject")["spec"]
    assert so["triggers"][0]["metadata"]["serverAddress"] == url


def _behavior(**settings: object) -> dict:
    return by_kind(build(**settings)[2], "ScaledObject")["spec"]["advanced"][  # type: ignore[arg-type]
        "horizontalPodAutoscalerConfig"
    ]["behavior"]


def _periods_to_peak(behavior: dict, floor: int, peak: int) -> int:
    """Scale-up periods the HPA needs from `floor` to `peak` replicas under these policies, when
    the load asks for the peak at once (the selected policy is the one allowing the most)."""
    replicas, periods = floor, 0
    while replicas < peak:
        allowed = max(
            p["value"] if p["type"] == "Pods" else max(1, replicas * p["value"] // 100)
            for p in behavior["scaleUp"]["policies"]
        )
        replicas, periods = min(peak, replicas + allowed), periods + 1
    return periods


@pytest.mark.parametrize(
    ("min_replicas", "max_replicas", "scale_to_zero"),
    [(1, 16, False), (1, 2, False), (1, 64, False), (4, 5, False), (1, 64, True), (1, 1, True)],
)
def test_scale_up_reaches_the_peak_in_minutes_and_scale_down_is_slow(
    min_replicas: int, max_replicas: int, scale_to_zero: bool
) -> None:
    behavior = _behavior(
        min_replicas=min_replicas, max_replicas=max_replicas, scale_to_zero=scale_to_zero
    )
    (period,) = {p["periodSeconds"] for p in behavior["scaleUp"]["policies"]}
    floor = 0 if scale_to_zero else min_replicas
    periods = _periods_to_peak(behavior, floor, max_replicas)
    assert periods * period <= 5 * 60  # the default plan's 1 -> 16 took 75 minutes before
    assert periods * period == time_to_peak_seconds(
        ServingSettings(
            min_replicas=min_replicas, max_replicas=max_replicas, scale_to_zero=scale_to_zero
        )
    )
    assert behavior["scaleUp"]["stabilizationWindowSeconds"] == 0
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= 600
