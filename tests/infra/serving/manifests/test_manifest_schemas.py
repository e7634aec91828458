"""Every emitted manifest is valid for the cluster.

Built-in kinds: kubernetes-validate --strict for every Kubernetes minor the platform deploys.
KEDA and Prometheus Operator objects: the validators generated from those projects' CRD schemas
(crd_validation: types, required fields, enums), and no field those schemas do not declare (what
`kubectl apply --validate=strict` refuses and the API server otherwise drops silently).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import kubernetes_validate
import pytest
from crd_validation import CUSTOM_KINDS, OTHER_CUSTOM_KINDS, unknown_custom_fields, validate_custom
from workload_cases import TRN2_PROFILES, build

from infra.settings import SUPPORTED_KUBERNETES_VERSIONS

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
    # A manifest identical to one already validated (most network policies, namespaces and
    # config maps repeat across profiles and variants: 230 distinct of 431) is not validated
    # again: the validator is a pure function of the manifest and the minor.
    newest = k8s == SUPPORTED_KUBERNETES_VERSIONS[-1]
    checked = 0
    seen: set[str] = set()
    for label, manifest in _all(TRN2_PROFILES if newest else TRN2_PROFILES[:1]):
        if (manifest["apiVersion"], manifest["kind"]) in CUSTOM_KINDS | OTHER_CUSTOM_KINDS:
            continue
        if (text := json.dumps(manifest, sort_keys=True)) in seen:
            continue
        seen.add(text)
        try:
            kubernetes_validate.validate(manifest, f"{k8s}.0", strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{label} invalid for Kubernetes {k8s}: {err.message} at {list(err.path)}")
        checked += 1
    assert checked > 0


def test_every_custom_resource_validates_against_its_crd_schema() -> None:
    custom = [(label, m) for label, m in _all() if (m["apiVersion"], m["kind"]) in CUSTOM_KINDS]
    kinds_seen = {(m["apiVersion"], m["kind"]) for _, m in custom}
    results = validate_custom([m for _, m in custom])
    pairs = zip(custom, results, strict=True)
    bad = [f"{label}: {errors}" for (label, _), errors in pairs if errors]
    assert bad == []
    assert kinds_seen == {
        ("keda.sh/v1alpha1", "ScaledObject"),
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("monitoring.coreos.com/v1", "PodMonitor"),
    }


def test_no_custom_resource_carries_a_field_its_crd_schema_does_not_declare() -> None:
    custom = [(label, m) for label, m in _all() if (m["apiVersion"], m["kind"]) in CUSTOM_KINDS]
    results = unknown_custom_fields([m for _, m in custom])
    pairs = zip(custom, results, strict=True)
    assert [f"{label}: {paths}" for (label, _), paths in pairs if paths] == []


def test_crd_validation_rejects_a_field_of_the_wrong_type() -> None:
    scaled = next(m for m in build()[2].keda if m["kind"] == "ScaledObject")
    bad = copy.deepcopy(scaled)
    bad["spec"]["minReplicaCount"] = "one"
    (errors,) = validate_custom([bad])
    assert any("minReplicaCount" in e for e in errors)
