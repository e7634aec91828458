"""A calibration deployment's speculative arm is scraped under its own `service` label, and the
KEDA query that scales the main Deployment never counts its requests (both arms serve the same
model name)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from workload_cases import build

from infra.serving.manifests.monitoring import SERVICE_TARGET_LABEL
from infra.serving.manifests.service import nlb_service_name
from infra.serving.manifests.spec import WorkloadSpec

PLAIN = "qwen3-4b-baseline"
CALIBRATION = {
    "speculative": {"profile": "qwen3-4b-dflash", "overrides": ["max_num_seqs=4"]},
    "concurrency": [1, 2, 4],
}
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"([^"]*)"')


def _service_monitors(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "ServiceMonitor"]


def _target_labels(monitor: dict[str, Any], service: str, namespace: str) -> dict[str, str] | None:
    """The labels Prometheus Operator gives a target of `monitor` behind Service `service`
    (namespace, service, pod), or None when the monitor's relabelings drop it; applies only
    the `keep` rules on the Service's name, the only ones the workload sets."""
    (endpoint,) = monitor["spec"]["endpoints"]
    meta = {"__meta_kubernetes_service_name": service}
    for rule in endpoint.get("relabelings", []):
        assert rule["action"] == "keep"
        value = ";".join(meta[s] for s in rule["sourceLabels"])
        if not re.fullmatch(rule["regex"], value):
            return None
    return {"namespace": namespace, SERVICE_TARGET_LABEL: service, "pod": f"{service}-abc-x"}


def _selects(query: str, series: dict[str, str]) -> bool:
    """Whether some vector selector of `query` (label matchers in braces) selects `series`."""
    for block in re.findall(r"\{([^}]*)\}", query):
        matchers = _MATCHER.findall(block)
        assert matchers and all(op == "=" for _, op, _ in matchers), block
        if all(series.get(name) == value for name, _, value in matchers):
            return True
    return False


def _vllm_series(spec: WorkloadSpec, target: dict[str, str]) -> dict[str, str]:
    """A vLLM gauge's labels as scraped: vLLM's own (model_name, engine) and the target's."""
    return {"model_name": spec.served_model_name, "engine": "0", **target}


def _keda_query(objects: list[dict[str, Any]]) -> str:
    # one in-flight query: the arm's ScaledObject counts the Job's pods, never requests
    (query,) = [
        t["metadata"]["query"]
        for o in objects
        if o["kind"] == "ScaledObject"
        for t in o["spec"]["triggers"]
        if t["type"] == "prometheus"
    ]
    return str(query)


def test_the_arm_is_scraped_by_its_own_service_monitor_only_with_calibration() -> None:
    _, spec, plain, _ = build(PLAIN)
    assert [m["metadata"]["name"] for m in _service_monitors(plain.monitoring)] == [spec.name]
    _, spec, cal, _ = build(PLAIN, calibration=CALIBRATION)
    arm = f"{spec.name}-spec"
    monitors = {m["metadata"]["name"]: m for m in _service_monitors(cal.monitoring)}
    assert sorted(monitors) == sorted([spec.name, arm])
    (arm_service,) = [
        o for o in cal.core if o["kind"] == "Service" and o["metadata"]["name"] == arm
    ]
    selector = monitors[arm]["spec"]["selector"]["matchLabels"]
    assert selector.items() <= arm_service["metadata"]["labels"].items()
    assert _target_labels(monitors[arm], arm, spec.namespace) is not None
    # Each monitor keeps its own Service's targets only.
    assert _target_labels(monitors[spec.name], arm, spec.namespace) is None
    assert _target_labels(monitors[arm], spec.name, spec.namespace) is None


@pytest.mark.parametrize("internal_nlb", [False, True])
def test_the_keda_query_counts_the_main_deployment_once_and_never_the_arm(
    internal_nlb: bool,
) -> None:
    _, spec, m, _ = build(PLAIN, calibration=CALIBRATION, internal_nlb=internal_nlb)
    query = _keda_query(m.all())
    monitors = {sm["metadata"]["name"]: sm for sm in _service_monitors(m.monitoring)}
    main = _target_labels(monitors[spec.name], spec.name, spec.namespace)
    arm_name = f"{spec.name}-spec"
    arm = _target_labels(monitors[arm_name], arm_name, spec.namespace)
    assert main is not None and arm is not None
    assert _selects(query, _vllm_series(spec, main))
    assert not _selects(query, _vllm_series(spec, arm))
    # The NLB Service selects the main pods too: its targets are dropped, not scraped twice.
    assert _target_labels(monitors[spec.name], nlb_service_name(spec), spec.namespace) is None


def test_with_an_existing_prometheus_the_arm_carries_no_scrape_annotations() -> None:
    """An annotation scrape labels a target by namespace and pod only: the arm's series would
    carry the main's namespace and model name, so the arm must not be scraped that way."""
    _, spec, m, _ = build(
        PLAIN, calibration=CALIBRATION, prometheus="existing", prometheus_url="http://p:9090"
    )
    deployments = {o["metadata"]["name"]: o for o in m.core if o["kind"] == "Deployment"}

    def annotations(name: str) -> dict[str, str]:
        return dict(deployments[name]["spec"]["template"]["metadata"].get("annotations", {}))

    assert annotations(spec.name)["prometheus.io/scrape"] == "true"
    assert not [k for k in annotations(f"{spec.name}-spec") if k.startswith("prometheus.io/")]
    assert m.monitoring == []
    query = _keda_query(m.all())
    assert _selects(query, {"namespace": spec.namespace, "model_name": spec.served_model_name})
