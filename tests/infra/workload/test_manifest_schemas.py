"""Every emitted manifest is valid for the cluster.

Built-in kinds: kubernetes-validate --strict for every Kubernetes minor the platform deploys.
KEDA and Prometheus Operator objects: the CRD schemas the pinned charts ship (vendored under
crds/, source and commit noted in each file), made strict the way `kubectl apply
--validate=strict` is: an unknown field is an error unless the schema preserves unknown fields.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from workload_cases import TRN2_PROFILES, build

from infra.settings import SUPPORTED_KUBERNETES_VERSIONS
from infra.workload.constants import KEDA_CHART_VERSION, KUBE_PROMETHEUS_STACK_VERSION

CRD_DIR = Path(__file__).parent / "crds"
CRD_FILES = {
    ("keda.sh/v1alpha1", "ScaledObject"): f"keda-{KEDA_CHART_VERSION}-scaledobjects.yaml",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): (
        f"kube-prometheus-stack-{KUBE_PROMETHEUS_STACK_VERSION}-servicemonitors.yaml"
    ),
    ("monitoring.coreos.com/v1", "PodMonitor"): (
        f"kube-prometheus-stack-{KUBE_PROMETHEUS_STACK_VERSION}-podmonitors.yaml"
    ),
}

VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "nlb-ebs-zero": {
        "internal_nlb": True,
        "weights_storage": "ebs",
        "scale_to_zero": True,
        "precompile_on_deploy": False,
    },
    "existing-prometheus": {
        "prometheus": "existing",
        "prometheus_url": "http://prometheus.observability.svc:9090",
        "max_replicas": 4,
    },
}


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@cache
def crd_schema(api_version: str, kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRD_DIR / CRD_FILES[(api_version, kind)]).read_text())
    group, version = api_version.split("/")
    assert crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema = copy.deepcopy(served["schema"]["openAPIV3Schema"])
    # metadata is validated by the API server's ObjectMeta, not by the CRD schema.
    schema["properties"]["metadata"] = {"type": "object"}
    return _strict(schema)


def _all(profiles: list[str] = TRN2_PROFILES) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for profile in profiles:
        for variant, settings in VARIANTS.items():
            for m in build(profile, **settings)[2].all():
                out.append((f"{profile}/{variant}/{m['kind']}/{m['metadata']['name']}", m))
    return out


@pytest.mark.parametrize("k8s", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_builtin_manifest_validates_strictly(k8s: str) -> None:
    # Every profile on the newest minor; older minors see the default profile's variants (the
    # manifests' shapes do not depend on the profile, only their numbers do).
    newest = k8s == SUPPORTED_KUBERNETES_VERSIONS[-1]
    checked = 0
    for label, manifest in _all(TRN2_PROFILES if newest else TRN2_PROFILES[:1]):
        if (manifest["apiVersion"], manifest["kind"]) in CRD_FILES:
            continue
        try:
            kubernetes_validate.validate(manifest, f"{k8s}.0", strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{label} invalid for Kubernetes {k8s}: {err.message} at {list(err.path)}")
        checked += 1
    assert checked > 0


def test_every_custom_resource_validates_against_the_pinned_chart_crd() -> None:
    kinds_seen = set()
    for label, manifest in _all():
        key = (manifest["apiVersion"], manifest["kind"])
        if key not in CRD_FILES:
            continue
        kinds_seen.add(key)
        errors = list(jsonschema.Draft7Validator(crd_schema(*key)).iter_errors(manifest))
        assert not errors, f"{label}: " + "; ".join(
            f"{e.message} at {list(e.absolute_path)}" for e in errors
        )
    assert kinds_seen == set(CRD_FILES)


def test_crd_validation_rejects_a_misspelt_field() -> None:
    scaled = next(m for m in build()[2].keda if m["kind"] == "ScaledObject")
    bad = copy.deepcopy(scaled)
    bad["spec"]["minReplicas"] = 1  # the real field is minReplicaCount
    assert list(
        jsonschema.Draft7Validator(crd_schema("keda.sh/v1alpha1", "ScaledObject")).iter_errors(bad)
    )
