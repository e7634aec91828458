"""`python -m trnspec_tools manifests --out`: the files hold the objects the serving stack applies
(the same kinds and names as the synthesized default), and, read back from disk, they pass the
checks the synthesized manifests pass: the API server's rules, strict schemas of the built-in
kinds, the CRD schemas of the custom ones, and placement on a Trn2 pool's node."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from crd_validation import CUSTOM_KINDS, unknown_custom_fields, validate_custom
from platform_synth import Synth, cfn_text

from infra.compliance.api_server import ObjectRef, api_server_findings
from infra.platform.cluster.placement import CALIBRATION_ENGINE_OVERRIDES, placement_problems
from infra.settings import SUPPORTED_KUBERNETES_VERSIONS, Trn2PoolSettings
from trnspec_tools import manifests as command

PLAN = str(Path(__file__).resolve().parents[4] / "config" / "plans" / "default.yaml")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("export")
    argv = ["--plan", PLAN, "--vpc-cidr", "10.0.0.0/16", "--region", "us-east-2"]
    assert command.main([*argv, "--bucket", "models-bucket", "--out", str(out)]) == 0
    return [
        doc
        for path in sorted(out.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
    ]


def _ids(objects: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(m["kind"], m["metadata"].get("namespace", ""), m["metadata"]["name"]) for m in objects}


def test_the_export_holds_every_object_the_serving_stack_applies(
    exported: list[dict[str, Any]], platform_synth: Callable[[str], Synth]
) -> None:
    """The default profile deploys the default plan: the same objects, by kind, namespace and
    name, service accounts included."""
    serving = platform_synth("default").serving_raw["Resources"].values()
    applied = [
        doc
        for r in serving
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
        for doc in json.loads(cfn_text(r["Properties"]["Manifest"]))
    ]
    assert len(applied) > 20
    assert _ids(exported) == _ids(applied)


def test_the_exported_files_pass_the_api_servers_rules(exported: list[dict[str, Any]]) -> None:
    # The service accounts are in the files now; only the add-on's StorageClass is provided.
    assert api_server_findings(exported, [ObjectRef("StorageClass", "gp3")]) == []


@pytest.mark.parametrize("k8s", SUPPORTED_KUBERNETES_VERSIONS)
def test_the_exported_built_in_objects_validate_strictly(
    exported: list[dict[str, Any]], k8s: str
) -> None:
    builtin = [
        m
        for m in exported
        if "." not in m["apiVersion"].split("/")[0]
        or m["apiVersion"].split("/")[0].endswith(".k8s.io")
    ]
    assert builtin
    for m in builtin:
        kubernetes_validate.validate(m, f"{k8s}.0", strict=True)


def test_the_exported_custom_resources_match_their_crds(exported: list[dict[str, Any]]) -> None:
    custom = [m for m in exported if (m["apiVersion"], m["kind"]) in CUSTOM_KINDS]
    assert {m["kind"] for m in custom} == {"ScaledObject", "ServiceMonitor", "PodMonitor"}
    assert validate_custom(custom) == [[] for _ in custom]
    assert unknown_custom_fields(custom) == [[] for _ in custom]


def test_the_exported_pods_fit_a_trn2_48xlarge_node(exported: list[dict[str, Any]]) -> None:
    pool = Trn2PoolSettings(name="trn2")
    assert placement_problems((pool,), exported, CALIBRATION_ENGINE_OVERRIDES) == []
    assert placement_problems((pool.model_copy(update={"lnc": 1}),), exported) != []


def test_the_given_values_are_bound_and_the_stacks_own_left_as_placeholders(
    exported: list[dict[str, Any]],
) -> None:
    text = yaml.safe_dump_all(exported)
    assert "models-bucket" in text and "us-east-2" in text and "10.0.0.0/16" in text
    assert "trnspec-model-bucket-placeholder" not in text
    assert "trnspec-image-placeholder" not in text  # the profile's public image, as the stack
    assert "trnspec-bundle-sha256-placeholder" in text
