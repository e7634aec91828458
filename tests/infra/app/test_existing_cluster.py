"""`cluster.existing`: the app synthesizes the serving stack alone, on the imported cluster; with
it unset, the stacks and every template are those of the platform's own cluster, unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from platform_synth import ADMIN, Synth, cdk_json_context, cfn_text, synth_profile

from infra.app.composition import check_profile, compose
from infra.outputs import PlatformOutputs, ServingOutputs
from infra.settings import SettingsError, load_settings

EXISTING = {"cluster.existing.name": "prod-trn2", "cluster.existing.vpc_cidr": "10.20.0.0/16"}
ROLE = "arn:aws:iam::123456789012:role/EksKubectl"


def _synth(overrides: dict[str, Any], outdir: Path) -> tuple[list[str], dict[str, Any]]:
    """The stack names the app synthesizes for the default profile, and the serving template."""
    app = App(context=cdk_json_context(), outdir=str(outdir))
    built = compose(app, load_settings("default", overrides))
    app.synth()
    names = sorted(p.name.removesuffix(".template.json") for p in outdir.glob("*.template.json"))
    template = json.loads((outdir / f"{built.serving.stack_name}.template.json").read_text())
    return names, template


@pytest.fixture(scope="module")
def existing(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, Any]]:
    return _synth(EXISTING, tmp_path_factory.mktemp("existing"))


def _of_type(template: dict[str, Any], cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == cfn_type}


def test_an_existing_cluster_gets_the_serving_stack_alone(
    existing: tuple[list[str], dict[str, Any]],
) -> None:
    names, template = existing
    assert names == ["TrnspecPlatform-serving"]
    types = {v["Type"] for v in template["Resources"].values()}
    assert not {t for t in types if t.startswith("AWS::EKS::") and "Cluster" in t}
    assert "AWS::EKS::Nodegroup" not in types and "AWS::EC2::VPC" not in types
    assert "Custom::AWSCDK-EKS-HelmChart" not in types  # no add-on


def test_every_kubernetes_object_and_identity_targets_the_named_cluster(
    existing: tuple[list[str], dict[str, Any]],
) -> None:
    _, template = existing
    objects = _of_type(template, "Custom::AWSCDK-EKS-KubernetesResource")
    associations = _of_type(template, "AWS::EKS::PodIdentityAssociation")
    assert objects and associations
    assert {cfn_text(r["Properties"]["ClusterName"]) for r in objects.values()} == {"prod-trn2"}
    assert {r["Properties"]["ClusterName"] for r in associations.values()} == {"prod-trn2"}


def test_the_kubectl_lambda_is_made_cluster_admin_before_anything_is_applied(
    existing: tuple[list[str], dict[str, Any]],
) -> None:
    _, template = existing
    ((entry_id, entry),) = _of_type(template, "AWS::EKS::AccessEntry").items()
    props = entry["Properties"]
    assert props["ClusterName"] == "prod-trn2"
    (policy,) = props["AccessPolicies"]
    assert cfn_text(policy["PolicyArn"]).endswith("/AmazonEKSClusterAdminPolicy")
    assert policy["AccessScope"] == {"Type": "cluster"}
    handler = next(
        v
        for v in _of_type(template, "AWS::Lambda::Function").values()
        if "kubectl" in v["Properties"].get("Description", "")
    )
    assert props["PrincipalArn"] == handler["Properties"]["Role"]
    # The namespace goes first and every other object waits for it (infra/serving/workload.py).
    objects = _of_type(template, "Custom::AWSCDK-EKS-KubernetesResource")
    (namespace,) = [
        r for r in objects.values() if '"kind":"Namespace"' in cfn_text(r["Properties"]["Manifest"])
    ]
    assert entry_id in namespace["DependsOn"]


def test_the_vpc_cidr_setting_reaches_the_network_policies(
    existing: tuple[list[str], dict[str, Any]],
) -> None:
    _, template = existing
    manifests = [
        doc
        for r in _of_type(template, "Custom::AWSCDK-EKS-KubernetesResource").values()
        for doc in json.loads(cfn_text(r["Properties"]["Manifest"]))
    ]
    blocks = {
        block["ipBlock"]["cidr"]
        for m in manifests
        if m["kind"] == "NetworkPolicy"
        for rule in m["spec"].get("egress", [])
        for block in rule.get("to", [])
        if "ipBlock" in block
    }
    assert "10.20.0.0/16" in blocks


def test_the_tools_find_the_cluster_in_the_serving_stacks_own_outputs(
    existing: tuple[list[str], dict[str, Any]],
) -> None:
    """smoke/bench --stack read PlatformStack, then that stack's ClusterName: here the same."""
    outputs = existing[1]["Outputs"]
    assert outputs[ServingOutputs.PLATFORM_STACK]["Value"] == "TrnspecPlatform-serving"
    assert outputs[PlatformOutputs.CLUSTER_NAME]["Value"] == "prod-trn2"


def test_a_given_kubectl_role_runs_the_lambda_and_no_access_entry_is_made(
    tmp_path: Path,
) -> None:
    _, template = _synth({**EXISTING, "cluster.existing.kubectl_role_arn": ROLE}, tmp_path)
    assert _of_type(template, "AWS::EKS::AccessEntry") == {}
    roles = [v["Properties"]["Role"] for v in _of_type(template, "AWS::Lambda::Function").values()]
    assert ROLE in roles


def test_an_existing_cluster_needs_no_admin_and_skips_the_platforms_checks() -> None:
    """Pools, add-on pins and admins belong to the platform this app does not make: a pool
    setting the placement check refuses passes on an existing cluster."""
    refused = {"trn2_pools.0.lnc": "1"}
    with pytest.raises(SettingsError, match=r"trnspec\.io/lnc"):
        check_profile("default", {**ADMIN, **refused})
    assert check_profile("default", {**EXISTING, **refused}).settings.cluster.existing


def test_with_the_setting_unset_the_templates_are_byte_identical(
    platform_synth: Callable[[str], Synth], tmp_path: Path
) -> None:
    """`cluster.existing` given as null is the default: the same two stacks, byte for byte,
    but for the serving stack's DeployContext output, which records the `-c` items given (here
    the extra `cluster.existing=null`) for the next deploy to repeat."""
    default = platform_synth("default")
    explicit = synth_profile("default", tmp_path, {"cluster.existing": "null"})
    for name in (default.stack.stack_name, default.serving.stack_name):
        file = f"{name}.template.json"
        mine, theirs = (tmp_path / file).read_bytes(), (default.outdir / file).read_bytes()
        if name == default.serving.stack_name:
            context = {o: json.loads(b)["Outputs"].pop(ServingOutputs.DEPLOY_CONTEXT)["Value"]
                       for o, b in (("mine", mine), ("theirs", theirs))}  # fmt: skip
            assert context["mine"] == context["theirs"] + " -c cluster.existing=null"
            mine, theirs = (_without_deploy_context(b) for b in (mine, theirs))
        assert mine == theirs, file
    stacks = sorted(p.name for p in tmp_path.glob("*.template.json"))
    assert stacks == ["TrnspecPlatform-serving.template.json", "TrnspecPlatform.template.json"]
    assert explicit.stack.settings.cluster.existing is None


def _without_deploy_context(template: bytes) -> bytes:
    doc = json.loads(template)
    doc["Outputs"].pop(ServingOutputs.DEPLOY_CONTEXT)
    return json.dumps(doc, sort_keys=True).encode()
