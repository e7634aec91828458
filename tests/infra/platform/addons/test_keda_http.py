"""The KEDA HTTP add-on: installed exactly when the workload scales to zero, after KEDA, on the
system nodes, with the interceptor pods isolated."""

from __future__ import annotations

import json
from typing import Any

import pytest
from platform_synth import Synth, cfn_text, synth_profile
from trnspec.config.pod_contract import ENV_DRAIN_SECONDS

from infra.contracts import KEDA_HTTP_INTERCEPTOR_POD_LABELS
from infra.platform.addons.addon import workload_needs
from infra.platform.addons.keda_http.install import keda_http_values
from infra.platform.addons.pins import KEDA_CHART, KEDA_HTTP_CHART
from infra.platform.addons.registry import addon_problems, installed_addons
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.settings import SUPPORTED_KUBERNETES_VERSIONS, load_settings
from infra.settings.serving import load_serving_settings


def _installed(overrides: dict[str, str]) -> frozenset[str]:
    settings = load_settings("default", overrides)
    return installed_addons(settings, workload_needs(load_serving_settings(settings.serving)))


def test_installed_only_when_the_workload_scales_to_zero() -> None:
    assert "keda_http" not in _installed({})
    names = _installed({"serving.scale_to_zero": "true"})
    assert "keda_http" in names
    assert addon_problems(names) == []
    assert any("requires keda" in p for p in addon_problems(names - {"keda"}))


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_the_pin_covers_every_supported_kubernetes_version(version: str) -> None:
    assert KEDA_HTTP_CHART.kubernetes.contains(version)
    assert KEDA_CHART.kubernetes.contains(version)


def test_every_component_runs_on_the_system_nodes() -> None:
    values = keda_http_values(SYSTEM_LABEL, drain_seconds=60)
    for component in ("operator", "scaler", "interceptor"):
        assert values[component]["nodeSelector"] == SYSTEM_LABEL
    # Two interceptors: the chart's PDB (maxUnavailable 1) then keeps one through a drain, and
    # the scaler (0.16.0, kedacore/http-add-on#1729) skips one that stops answering.
    assert values["interceptor"]["replicas"]["min"] >= 2
    assert values["scaler"]["replicas"] >= 2


@pytest.fixture(scope="module")
def wake_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    out = tmp_path_factory.mktemp("cdk-scale-to-zero")
    return synth_profile("default", out, {"serving.scale_to_zero": "true"})


def _chart(synth: Synth, name: str) -> dict[str, Any]:
    (chart,) = [
        r
        for r in synth.resources("Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Chart"] == name
    ]
    return chart


def _serving_objects(synth: Synth, kind: str) -> list[dict[str, Any]]:
    return [
        doc
        for r in synth.serving_raw["Resources"].values()
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
        for doc in json.loads(cfn_text(r["Properties"]["Manifest"]))
        if doc["kind"] == kind
    ]


def _seconds(duration: str) -> int:
    assert duration.endswith("s"), duration
    return int(duration[:-1])


def test_the_pin_is_past_the_idle_wake_regression() -> None:
    """kedacore/http-add-on#1692 (0.15.0: after ~33 min idle a held request's requestRate rounds
    to zero and nothing wakes) is fixed by #1708 and #1730 (scaler crash-loop on one wedged
    interceptor) by #1729, both first released in 0.16.0."""
    assert tuple(int(p) for p in KEDA_HTTP_CHART.version.split(".")) >= (0, 16, 0)


def test_a_stopping_interceptor_drains_the_longest_request_of_the_route(wake_synth: Synth) -> None:
    """The chart's 30 s drain would cut held and streamed requests when an interceptor pod goes
    (node drain, rollout): the synthesized chart drains at least a full hold plus the longest
    answer the synthesized route and server allow."""
    values = json.loads(cfn_text(_chart(wake_synth, "keda-add-ons-http")["Properties"]["Values"]))
    interceptor = values["interceptor"]
    (route,) = _serving_objects(wake_synth, "InterceptorRoute")
    timeouts = route["spec"]["timeouts"]
    (server,) = [
        d
        for d in _serving_objects(wake_synth, "Deployment")
        if d["metadata"]["name"] == route["spec"]["target"]["service"]
    ]
    # The longest request the server finishes (its drain on SIGTERM, the pod contract's env).
    (server_drain,) = [
        int(e["value"])
        for c in server["spec"]["template"]["spec"]["containers"]
        for e in c.get("env", [])
        if e["name"] == ENV_DRAIN_SECONDS
    ]
    longest = _seconds(timeouts["readiness"]) + max(
        server_drain, _seconds(timeouts["responseHeader"])
    )
    drain = _seconds(interceptor["drainTimeout"])
    assert drain >= longest, (drain, longest)
    grace = interceptor["terminationGracePeriodSeconds"]
    assert grace > _seconds(interceptor["shutdownDelay"]) + drain  # the chart's own rule
    assert interceptor["directPodRouting"] is False


def test_synth_with_scale_to_zero_installs_the_chart_after_keda_and_isolates_the_interceptor(
    wake_synth: Synth,
) -> None:
    synth = wake_synth
    charts = {
        r["Properties"]["Chart"]: (lid, r)
        for lid, r in synth.resources("Custom::AWSCDK-EKS-HelmChart").items()
    }
    _, chart = charts["keda-add-ons-http"]
    assert chart["Properties"]["Version"] == KEDA_HTTP_CHART.version
    assert chart["Properties"]["Namespace"] == "keda"
    keda_id, _ = charts["keda"]
    assert keda_id in chart["DependsOn"]
    (policy,) = [
        m
        for m in synth.manifests()
        if m["kind"] == "NetworkPolicy" and m["metadata"]["namespace"] == "keda"
    ]
    assert policy["spec"]["podSelector"]["matchLabels"] == KEDA_HTTP_INTERCEPTOR_POD_LABELS
    assert policy["spec"]["policyTypes"] == ["Ingress"]
