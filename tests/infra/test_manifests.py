"""Every Kubernetes object the platform applies is valid for the cluster it targets.

Built-in kinds: kubernetes-validate --strict for each supported Kubernetes minor. Karpenter
NodePool / EC2NodeClass: the validators generated from Karpenter's CRD schemas (crd_validation:
types, required fields, enums; unknown fields and CEL rules are left to the API server).
"""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from crd_validation import CUSTOM_KINDS, validate_custom
from platform_synth import PROFILES

from infra.settings import DEFAULT_KARPENTER_AMI_ALIAS, SUPPORTED_KUBERNETES_VERSIONS


def _objects(platform_synth: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(p, m) for p in PROFILES for m in platform_synth(p).manifests()]


def test_platform_embeds_manifests(platform_synth: Any) -> None:
    kinds = {m["kind"] for _, m in _objects(platform_synth)}
    assert {"DaemonSet", "NodePool", "EC2NodeClass"} <= kinds


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_builtin_manifests_validate_strictly(platform_synth: Any, version: str) -> None:
    checked = 0
    for profile, obj in _objects(platform_synth):
        if (obj["apiVersion"], obj["kind"]) in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, f"{version}.0", strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{profile}: {obj['kind']}/{obj['metadata']['name']}: {err.message}")
        checked += 1
    assert checked


def test_karpenter_objects_validate_against_their_crd_schemas(platform_synth: Any) -> None:
    custom = [
        (p, o) for p, o in _objects(platform_synth) if (o["apiVersion"], o["kind"]) in CUSTOM_KINDS
    ]
    results = validate_custom([o for _, o in custom])
    pairs = zip(custom, results, strict=True)
    bad = [f"{p}: {o['kind']}: {errors}" for (p, o), errors in pairs if errors]
    assert bad == []
    assert len(custom) == 4  # two pools x (NodePool, EC2NodeClass)


def test_crd_validation_rejects_a_nodepool_field_of_the_wrong_type() -> None:
    bad = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "x"},
        "spec": {"template": {"spec": {"nodeClassRef": {}, "requirements": "none"}}},
    }
    (errors,) = validate_custom([bad])
    assert errors


def test_reserved_pool_selects_its_capacity_reservation(platform_synth: Any) -> None:
    objs = {(m["kind"], m["metadata"]["name"]): m for m in platform_synth("karpenter").manifests()}
    pool = objs[("NodePool", "trn2-odcr")]["spec"]
    reqs = {r["key"]: r["values"] for r in pool["template"]["spec"]["requirements"]}
    assert reqs["karpenter.sh/capacity-type"] == ["reserved"]
    assert reqs["topology.kubernetes.io/zone"] == ["us-east-2b"]
    assert reqs["node.kubernetes.io/instance-type"] == ["trn2.48xlarge"]
    assert pool["template"]["spec"]["taints"] == [
        {"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"}
    ]
    node_class = objs[("EC2NodeClass", "trn2-odcr")]["spec"]
    assert node_class["capacityReservationSelectorTerms"] == [{"id": "cr-0fedcba9876543210"}]
    # Pinned, so Trn2 nodes do not drift with every AMI release.
    assert node_class["amiSelectorTerms"] == [{"alias": DEFAULT_KARPENTER_AMI_ALIAS}]
    assert "logical_nc_config" in node_class["userData"]
    # Karpenter RAID0s the trn2.48xlarge instance store itself; the user data does not repeat it.
    assert node_class["instanceStorePolicy"] == "RAID0"
    assert "localStorage" not in node_class["userData"]
