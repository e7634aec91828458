"""The platform's add-ons in the synthesized templates: waited for, pinned, placed, wired."""

from __future__ import annotations

import json
from typing import Any

import pytest
from platform_synth import PROFILES, Synth, cfn_text

from infra.platform.addons import pins
from infra.platform.addons.ebs_csi.install import PROVISIONER
from infra.platform.addons.ebs_csi.install import SERVICE_ACCOUNT as EBS_SERVICE_ACCOUNT
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.settings import AddonSettings


def _charts(synth: Synth) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["Chart"]: r
        for r in synth.resources("Custom::AWSCDK-EKS-HelmChart").values()
    }


def _values(chart: dict[str, Any]) -> dict[str, Any]:
    return json.loads(cfn_text(chart["Properties"]["Values"]))


@pytest.mark.parametrize("profile", PROFILES)
def test_every_helm_release_waits_for_readiness_within_the_timeout(
    platform_synth: Any, profile: str
) -> None:
    charts = _charts(platform_synth(profile))
    assert charts
    timeout = f"{AddonSettings().helm_timeout_minutes * 60}s"
    for name, chart in charts.items():
        assert chart["Properties"].get("Wait") is True, name
        assert chart["Properties"].get("Timeout") == timeout, name


@pytest.mark.parametrize("profile", PROFILES)
def test_every_chart_is_the_pinned_version(platform_synth: Any, profile: str) -> None:
    pinned = {p.chart: p for p in pins.PINS if isinstance(p, pins.ChartPin)}
    for name, chart in _charts(platform_synth(profile)).items():
        assert chart["Properties"]["Version"] == pinned[name].version, name
        assert chart["Properties"]["Repository"] == pinned[name].repository, name


@pytest.mark.parametrize("profile", PROFILES)
def test_keda_and_prometheus_belong_to_the_platform_on_system_nodes(
    platform_synth: Any, profile: str
) -> None:
    synth = platform_synth(profile)
    charts = _charts(synth)
    assert _values(charts["keda"])["nodeSelector"] == SYSTEM_LABEL
    spec = _values(charts["kube-prometheus-stack"])["prometheus"]["prometheusSpec"]
    assert spec["nodeSelector"] == SYSTEM_LABEL
    assert not _charts_in(synth.serving_raw)


def _charts_in(raw: dict[str, Any]) -> list[str]:
    return [k for k, v in raw["Resources"].items() if v["Type"] == "Custom::AWSCDK-EKS-HelmChart"]


def test_prometheus_keeps_its_history_on_a_gp3_volume(platform_synth: Any) -> None:
    spec = _values(_charts(platform_synth("default"))["kube-prometheus-stack"])["prometheus"][
        "prometheusSpec"
    ]
    defaults = AddonSettings()
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "gp3"
    assert claim["resources"]["requests"]["storage"] == f"{defaults.prometheus_volume_gib}Gi"
    assert spec["retention"] == f"{defaults.prometheus_retention_days}d"


def test_gp3_class_is_encrypted_with_the_platform_key_and_binds_where_the_pod_lands(
    platform_synth: Any,
) -> None:
    synth = platform_synth("default")
    (sc,) = [m for m in synth.manifests() if m["kind"] == "StorageClass"]
    assert sc["metadata"]["name"] == "gp3"
    assert sc["provisioner"] == PROVISIONER
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer"
    assert sc["parameters"]["type"] == "gp3"
    assert sc["parameters"]["encrypted"] == "true"
    (key,) = [k for k in synth.resources("AWS::KMS::Key") if k.startswith("EbsCsiVolumeKey")]
    assert sc["parameters"]["kmsKeyId"] == "${" + key + ".Arn}"
    assert synth.raw["Resources"][key]["Properties"]["EnableKeyRotation"] is True


def test_ebs_csi_driver_is_an_eks_add_on_with_its_own_pod_identity_role(
    platform_synth: Any,
) -> None:
    synth = platform_synth("default")
    (addon,) = [
        r
        for r in synth.resources("AWS::EKS::Addon").values()
        if r["Properties"]["AddonName"] == "aws-ebs-csi-driver"
    ]
    (assoc,) = addon["Properties"]["PodIdentityAssociations"]
    assert assoc["ServiceAccount"] == EBS_SERVICE_ACCOUNT
    role = assoc["RoleArn"]["Fn::GetAtt"][0]
    trust = synth.raw["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    policies = [
        p
        for p in synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
    ]
    statements = {
        s["Sid"]: s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]
    }
    assert "ec2:DeleteVolume" in statements["DeleteOwnVolumes"]["Action"]
    assert statements["DeleteOwnVolumes"]["Condition"] == {
        "StringLike": {"ec2:ResourceTag/ebs.csi.aws.com/cluster": "true"}
    }
    assert statements["VolumeKeyGrants"]["Condition"] == {
        "Bool": {"kms:GrantIsForAWSResource": "true"}
    }
    assert not any(
        "Snapshot" in a for s in statements.values() for a in s["Action"] if "Create" in a
    )


def test_vpc_cni_enforces_network_policies(platform_synth: Any) -> None:
    (cni,) = [
        r
        for r in platform_synth("default").resources("AWS::EKS::Addon").values()
        if r["Properties"]["AddonName"] == "vpc-cni"
    ]
    assert json.loads(cni["Properties"]["ConfigurationValues"]) == {"enableNetworkPolicy": "true"}


def test_neuron_scheduler_extension_runs_the_clusters_kube_scheduler(platform_synth: Any) -> None:
    values = _values(_charts(platform_synth("default"))["neuron-helm-chart"])
    image = values["scheduler"]["customScheduler"]["image"]
    assert image == {
        "repository": pins.NEURON_KUBE_SCHEDULER.repository,
        "tag": pins.NEURON_KUBE_SCHEDULER.tags["1.36"],
    }


def test_karpenter_crds_are_their_own_release_upgraded_with_the_controller(
    platform_synth: Any,
) -> None:
    synth = platform_synth("karpenter")
    charts = _charts(synth)
    crds, controller = charts["karpenter-crd"], charts["karpenter"]
    assert crds["Properties"]["Version"] == controller["Properties"]["Version"]
    assert controller["Properties"]["SkipCrds"] is True
    crd_id = next(k for k, v in synth.raw["Resources"].items() if v is crds)
    assert crd_id in controller["DependsOn"]
    env = _values(controller)["controller"]["env"]
    assert {"name": "AWS_REGION", "value": "us-east-2"} in env


def test_cluster_autoscaler_and_karpenter_are_never_both_installed(platform_synth: Any) -> None:
    for profile in PROFILES:
        names = set(_charts(platform_synth(profile)))
        assert len(names & {"cluster-autoscaler", "karpenter"}) == 1, profile


@pytest.mark.parametrize("profile", ["default", "karpenter"])
def test_every_controller_with_an_aws_role_starts_after_its_pod_identity_association(
    platform_synth: Any, profile: str
) -> None:
    """A controller chart created before its association runs without credentials: each chart
    whose service account has a role waits for that role's association."""
    synth = platform_synth(profile)
    associations = synth.resources("AWS::EKS::PodIdentityAssociation")
    by_account = {
        a["Properties"]["ServiceAccount"]: logical_id
        for logical_id, a in associations.items()
        if a["Properties"]["Namespace"] == "kube-system"
    }
    charts = _charts(synth)
    waited = 0
    for chart in charts.values():
        account = _values(chart).get("serviceAccount", {}).get("name") or _values(chart).get(
            "rbac", {}
        ).get("serviceAccount", {}).get("name")
        if account in by_account:
            assert by_account[account] in chart.get("DependsOn", []), account
            waited += 1
    assert waited == 1  # the node autoscaler of the profile
