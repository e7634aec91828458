"""The KEDA HTTP add-on: installed exactly when the workload scales to zero, after KEDA, on the
system nodes, with the interceptor pods isolated."""

from __future__ import annotations

from typing import Any

import pytest
from platform_synth import synth_profile

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
    values = keda_http_values(SYSTEM_LABEL)
    for component in ("operator", "scaler", "interceptor"):
        assert values[component]["nodeSelector"] == SYSTEM_LABEL
    # Two interceptors: the chart's PDB (maxUnavailable 1) then keeps one through a drain.
    assert values["interceptor"]["replicas"]["min"] >= 2


def test_synth_with_scale_to_zero_installs_the_chart_after_keda_and_isolates_the_interceptor(
    tmp_path: Any,
) -> None:
    synth = synth_profile("default", tmp_path, {"serving.scale_to_zero": "true"})
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
