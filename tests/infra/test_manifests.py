"""Every Kubernetes object the platform applies is valid for the cluster it targets.

Built-in kinds: kubernetes-validate --strict for each supported Kubernetes minor. Karpenter
NodePool / EC2NodeClass: the CRD schemas of the pinned chart (vendored in crds/, source and
commit in each file's header), made strict like `kubectl apply --validate=strict`. CEL rules
(x-kubernetes-validations) in those CRDs are not evaluated here: the API server checks them.
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
from platform_synth import PROFILES

from infra import karpenter
from infra.settings import SUPPORTED_KUBERNETES_VERSIONS

CRD_DIR = Path(__file__).parent / "crds"
CRDS = {
    (
        "karpenter.sh/v1",
        "NodePool",
    ): f"karpenter-{karpenter.CHART_VERSION}-karpenter.sh_nodepools.yaml",
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): (
        f"karpenter-{karpenter.CHART_VERSION}-karpenter.k8s.aws_ec2nodeclasses.yaml"
    ),
}


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Reject unknown fields wherever the schema lists properties and keeps no unknowns."""
    schema = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if (
                "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


@cache
def _crd_schema(api_version: str, kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRD_DIR / CRDS[(api_version, kind)]).read_text())
    version = api_version.split("/")[1]
    (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema = _strict(entry["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


def _objects(platform_synth: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(p, m) for p in PROFILES for m in platform_synth(p).manifests()]


def test_platform_embeds_manifests(platform_synth: Any) -> None:
    kinds = {m["kind"] for _, m in _objects(platform_synth)}
    assert {"DaemonSet", "NodePool", "EC2NodeClass"} <= kinds


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_builtin_manifests_validate_strictly(platform_synth: Any, version: str) -> None:
    checked = 0
    for profile, obj in _objects(platform_synth):
        if (obj["apiVersion"], obj["kind"]) in CRDS:
            continue
        try:
            kubernetes_validate.validate(obj, f"{version}.0", strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{profile}: {obj['kind']}/{obj['metadata']['name']}: {err.message}")
        checked += 1
    assert checked


def test_karpenter_objects_validate_against_the_pinned_crds(platform_synth: Any) -> None:
    checked = 0
    for profile, obj in _objects(platform_synth):
        key = (obj["apiVersion"], obj["kind"])
        if key not in CRDS:
            continue
        errors = sorted(
            jsonschema.Draft7Validator(_crd_schema(*key)).iter_errors(obj), key=lambda e: e.path
        )
        assert not errors, f"{profile}: {obj['kind']}: " + "; ".join(
            f"{list(e.path)}: {e.message}" for e in errors
        )
        checked += 1
    assert checked == 4  # two pools x (NodePool, EC2NodeClass)


def test_strict_crd_schema_rejects_a_misspelled_field() -> None:
    schema = _crd_schema("karpenter.sh/v1", "NodePool")
    bad = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "x"},
        "spec": {"template": {"spec": {"nodeClasRef": {}, "requirements": []}}},
    }
    assert list(jsonschema.Draft7Validator(schema).iter_errors(bad))


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
    assert node_class["amiSelectorTerms"] == [{"alias": karpenter.AMI_ALIAS}]
    assert "logical_nc_config" in node_class["userData"]
