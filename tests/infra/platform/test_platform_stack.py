"""CDK assertions for the platform stack, one session-scoped synth per profile."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match
from platform_synth import ADMIN_ARN, Synth, cfn_text

from infra.contracts import NEURON_SCHEDULER_NAME
from infra.platform.addons.cluster_autoscaler import install as cluster_autoscaler
from infra.platform.addons.pins import (
    CLUSTER_AUTOSCALER_CHART,
    CLUSTER_AUTOSCALER_IMAGE,
    KARPENTER_CHART,
    NEURON_CHART,
    NEURON_MONITOR_IMAGE,
)
from infra.platform.addons.registry import ADDONS
from infra.platform.cluster.neuron_node import NEURON_AMI_TYPE

TEMPLATE_TAG = "k8s.io/cluster-autoscaler/node-template"


@pytest.fixture(scope="module")
def default(platform_synth: Any) -> Synth:
    return platform_synth("default")


@pytest.fixture(scope="module")
def capacity_block(platform_synth: Any) -> Synth:
    return platform_synth("capacity-block")


@pytest.fixture(scope="module")
def karpenter_synth(platform_synth: Any) -> Synth:
    return platform_synth("karpenter")


def _helm(s: Synth, chart: str) -> dict[str, Any]:
    charts = [
        r["Properties"]
        for r in s.resources("Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Chart"] == chart
    ]
    assert len(charts) == 1, f"expected one {chart} chart"
    props = dict(charts[0])
    props["Values"] = json.loads(cfn_text(props["Values"]))
    return props


def test_trn2_nodegroup_uses_neuron_ami_literal_and_instance_type(default: Synth) -> None:
    default.template.has_resource_properties(
        "AWS::EKS::Nodegroup",
        {
            "NodegroupName": "trnspec-trn2",
            "AmiType": "AL2023_x86_64_NEURON",
            "InstanceTypes": ["trn2.48xlarge"],
            "CapacityType": "ON_DEMAND",
        },
    )
    text = json.dumps(default.raw)
    assert NEURON_AMI_TYPE in text
    assert "AL2023_X86_64_NEURON" not in text  # the enum spelling CloudFormation rejects


def test_trn2_nodegroup_scales_from_zero(default: Synth) -> None:
    default.template.has_resource_properties(
        "AWS::EKS::Nodegroup",
        {
            "NodegroupName": "trnspec-trn2",
            "ScalingConfig": {"MinSize": 0, "DesiredSize": 0, "MaxSize": 2},
        },
    )


def test_trn2_nodes_carry_the_neuron_taint_and_pool_labels(default: Synth) -> None:
    default.template.has_resource_properties(
        "AWS::EKS::Nodegroup",
        {
            "NodegroupName": "trnspec-trn2",
            "Taints": [{"Key": "aws.amazon.com/neuron", "Value": "true", "Effect": "NO_SCHEDULE"}],
            "Labels": {"trnspec.io/pool": "trn2", "trnspec.io/lnc": "2"},
        },
    )


def test_trn2_launch_template_sets_root_volume_imdsv2_and_lnc(default: Synth) -> None:
    (lt,) = default.resources("AWS::EC2::LaunchTemplate").values()
    data = lt["Properties"]["LaunchTemplateData"]
    # The kubelet and containerd are on the instance store: the root holds the OS, at gp3's
    # included performance (infra/platform/cluster/root_volume.py).
    ebs = data["BlockDeviceMappings"][0]["Ebs"]
    assert (ebs["VolumeSize"], ebs["Iops"], ebs["Throughput"]) == (100, 3000, 125)
    assert data["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    user_data = data["UserData"]["Fn::Base64"]
    # The Neuron EKS docs' format: the variable assignment, not a bare number.
    assert "echo NEURON_LOGICAL_NC_CONFIG=2 > /opt/aws/neuron/logical_nc_config" in user_data
    assert user_data.startswith("MIME-Version: 1.0")
    # nodeadm puts the kubelet and containerd on the instance store (RAID0 of its NVMe disks).
    assert (
        "Content-Type: application/node.eks.aws\n\n---\napiVersion: node.eks.aws/v1alpha1\n"
        "kind: NodeConfig\nspec:\n  instance:\n    localStorage:\n      strategy: RAID0\n"
    ) in user_data
    assert "NetworkInterfaces" not in data and "InstanceMarketOptions" not in data


def test_node_template_tags_let_the_autoscaler_build_an_empty_trn2_group(default: Synth) -> None:
    expected = {
        f"{TEMPLATE_TAG}/resources/aws.amazon.com/neuron": "16",
        f"{TEMPLATE_TAG}/resources/aws.amazon.com/neuroncore": "64",
        f"{TEMPLATE_TAG}/taint/aws.amazon.com/neuron": "true:NoSchedule",
        f"{TEMPLATE_TAG}/label/trnspec.io/pool": "trn2",
        f"{TEMPLATE_TAG}/label/node.kubernetes.io/instance-type": "trn2.48xlarge",
        # The kubelet sits on the 4 x 1.9 TB instance store (RAID0, 7078 GiB) - 10 % nodefs
        # eviction threshold - 1 GiB kube-reserved, floored.
        f"{TEMPLATE_TAG}/resources/ephemeral-storage": "6369Gi",
    }
    default.template.has_resource_properties(
        "AWS::EKS::Nodegroup",
        {"NodegroupName": "trnspec-trn2", "Tags": Match.object_like(expected)},
    )
    # EKS does not copy node group tags to the ASG: the custom resource does.
    calls = [
        json.dumps(r["Properties"]["Update"])
        for r in default.resources("Custom::AWS").values()
        if "createOrUpdateTags" in json.dumps(r["Properties"].get("Update", ""))
    ]
    assert len(calls) == 1
    for key, value in expected.items():
        assert f'\\"Key\\":\\"{key}\\",\\"Value\\":\\"{value}\\"' in calls[0]
    assert '\\"PropagateAtLaunch\\":false' in calls[0]


def test_capacity_block_pool_targets_its_reservation_in_one_az(capacity_block: Synth) -> None:
    capacity_block.template.has_resource_properties(
        "AWS::EKS::Nodegroup",
        {"NodegroupName": "trnspec-trn2-cb", "CapacityType": "CAPACITY_BLOCK"},
    )
    (lt,) = capacity_block.resources("AWS::EC2::LaunchTemplate").values()
    data = lt["Properties"]["LaunchTemplateData"]
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["InstanceType"] == "trn2.48xlarge"  # EKS: in the template, not the group
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}
    }
    (ng,) = [
        r
        for r in capacity_block.resources("AWS::EKS::Nodegroup").values()
        if r["Properties"]["NodegroupName"] == "trnspec-trn2-cb"
    ]
    assert len(ng["Properties"]["Subnets"]) == 1  # pinned to us-east-2a
    assert "InstanceTypes" not in ng["Properties"]
    assert ng["Properties"]["AmiType"] == NEURON_AMI_TYPE


def test_efa_capacity_block_pool_has_ena_primary_efa_only_cards_and_no_new_placement_group(
    capacity_block: Synth,
) -> None:
    (lt,) = capacity_block.resources("AWS::EC2::LaunchTemplate").values()
    data = lt["Properties"]["LaunchTemplateData"]
    nics = data["NetworkInterfaces"]
    assert [(n["NetworkCardIndex"], n["InterfaceType"]) for n in nics[:2]] == [
        (0, "interface"),
        (0, "efa-only"),
    ]
    assert [n["NetworkCardIndex"] for n in nics[2:]] == list(range(1, 16))
    assert {n["InterfaceType"] for n in nics[2:]} == {"efa-only"}
    # EC2 places a capacity block's instances together itself; a new group could refuse them.
    assert capacity_block.resources("AWS::EC2::PlacementGroup") == {}
    assert "Placement" not in data


def test_control_plane_logs_all_types_and_encrypts_secrets_with_kms(default: Synth) -> None:
    default.template.has_resource_properties(
        "AWS::EKS::Cluster",
        {
            "Name": "trnspec",
            "Version": "1.36",
            "Logging": {
                "ClusterLogging": {
                    "EnabledTypes": Match.array_with(
                        [
                            {"Type": t}
                            for t in (
                                "api",
                                "audit",
                                "authenticator",
                                "controllerManager",
                                "scheduler",
                            )
                        ]
                    )
                }
            },
            "EncryptionConfig": [
                {"Resources": ["secrets"], "Provider": {"KeyArn": Match.any_value()}}
            ],
            "AccessConfig": Match.object_like(
                {"AuthenticationMode": Match.string_like_regexp("API")}
            ),
        },
    )
    default.template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


@pytest.mark.parametrize(("access", "public"), [("public-and-private", True), ("private", False)])
def test_endpoint_access_follows_settings(
    platform_synth: Any, tmp_path: Any, access: str, public: bool
) -> None:
    from platform_synth import synth_profile

    s = (
        platform_synth("default")
        if public
        else synth_profile("default", tmp_path, {"endpoint_access": access})
    )
    s.template.has_resource_properties(
        "AWS::EKS::Cluster",
        {
            "ResourcesVpcConfig": Match.object_like(
                {"EndpointPublicAccess": public, "EndpointPrivateAccess": True}
            )
        },
    )


def test_core_addons_are_installed(default: Synth) -> None:
    names = {r["Properties"]["AddonName"] for r in default.resources("AWS::EKS::Addon").values()}
    assert names >= {"vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"}


def test_vpc_has_s3_gateway_and_ecr_interface_endpoints(default: Synth) -> None:
    endpoints = default.resources("AWS::EC2::VPCEndpoint").values()
    services = {json.dumps(e["Properties"]["ServiceName"]) for e in endpoints}
    kinds = {e["Properties"].get("VpcEndpointType", "Gateway") for e in endpoints}
    assert any(".s3" in s for s in services)
    assert any("ecr.api" in s for s in services) and any("ecr.dkr" in s for s in services)
    assert kinds == {"Gateway", "Interface"}


def test_neuron_chart_is_pinned_and_lists_configured_trn2_types(default: Synth) -> None:
    chart = _helm(default, NEURON_CHART.chart)
    assert chart["Repository"] == "oci://public.ecr.aws/neuron/neuron-helm-chart"
    assert chart["Version"] == NEURON_CHART.version
    values = chart["Values"]
    assert "trn2.48xlarge" in values["neuronInstances"]
    assert values["devicePlugin"]["enabled"] is True
    assert {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"} in values[
        "devicePlugin"
    ]["tolerations"]
    assert values["scheduler"]["enabled"] is True
    assert values["scheduler"]["customScheduler"]["fullnameOverride"] == NEURON_SCHEDULER_NAME
    assert values["npd"]["enabled"] is True


def test_neuron_monitor_runs_on_trn2_nodes_despite_the_taint(default: Synth) -> None:
    (ds,) = [
        m
        for m in default.manifests()
        if m["kind"] == "DaemonSet" and m["metadata"]["name"] == "neuron-monitor"
    ]
    spec = ds["spec"]["template"]["spec"]
    assert {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"} in spec[
        "tolerations"
    ]
    (container,) = spec["containers"]
    assert container["image"] == NEURON_MONITOR_IMAGE
    # As aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml runs image 1.3.0.
    assert container["command"] == ["/opt/bin/entrypoint.sh"]
    assert container["args"] == [
        "--port",
        "8000",
        "--neuron-monitor-config",
        "/opt/aws/neuron/bin/neuron-monitor.conf",
    ]
    assert {"name": "GOMEMLIMIT", "value": "160MiB"} in container["env"]
    assert container["resources"]["requests"] == {"cpu": "256m", "memory": "128Mi"}


def test_cluster_autoscaler_chart_is_pinned_with_auto_discovery(default: Synth) -> None:
    chart = _helm(default, CLUSTER_AUTOSCALER_CHART.chart)
    assert chart["Repository"] == CLUSTER_AUTOSCALER_CHART.repository
    assert chart["Version"] == CLUSTER_AUTOSCALER_CHART.version
    assert chart["Namespace"] == "kube-system"
    values = chart["Values"]
    assert values["autoDiscovery"]["clusterName"] == "trnspec"
    assert values["image"]["tag"] == CLUSTER_AUTOSCALER_IMAGE.tags["1.36"]
    assert values["rbac"]["serviceAccount"]["name"] == cluster_autoscaler.SERVICE_ACCOUNT


def test_cluster_autoscaler_role_is_least_privilege_through_pod_identity(default: Synth) -> None:
    default.template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {"Namespace": "kube-system", "ServiceAccount": "cluster-autoscaler"},
    )
    default.template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Action": ["sts:AssumeRole", "sts:TagSession"],
                            "Principal": {"Service": "pods.eks.amazonaws.com"},
                        }
                    )
                ]
            },
            "Description": "Cluster Autoscaler (Pod Identity)",
        },
    )
    (policy,) = [
        p
        for k, p in default.resources("AWS::IAM::Policy").items()
        if k.startswith("ClusterAutoscalerPodIdentityRole")
    ]
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    scale = statements["ScaleOwnGroupsOnly"]
    assert sorted(scale["Action"]) == [
        "autoscaling:SetDesiredCapacity",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    ]
    assert scale["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/trnspec": "owned"}
    }
    mutating = [
        a
        for s in statements.values()
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        if not a.split(":")[1].startswith(("Describe", "Get"))
    ]
    assert sorted(mutating) == sorted(scale["Action"])
    assert statements["ReadNodegroups"]["Action"] == "eks:DescribeNodegroup"


def test_outputs_name_the_cluster_kubeconfig_command_and_nodegroups(default: Synth) -> None:
    outputs = default.raw["Outputs"]
    assert set(outputs["ClusterName"]["Value"]) == {"Ref"}
    assert "aws eks update-kubeconfig --name trnspec --region" in json.dumps(
        outputs["UpdateKubeconfigCommand"]["Value"]
    )
    assert outputs["NodegroupNames"]["Value"] == "trnspec-system,trnspec-trn2"


def test_default_profile_is_env_agnostic(default: Synth) -> None:
    assert default.stack.account.startswith("${Token")
    assert default.stack.region.startswith("${Token")


def test_karpenter_profile_has_no_trn2_managed_nodegroups_but_nodepools(
    karpenter_synth: Synth,
) -> None:
    names = [
        r["Properties"]["NodegroupName"]
        for r in karpenter_synth.resources("AWS::EKS::Nodegroup").values()
    ]
    assert names == ["trnspec-system"]
    chart = _helm(karpenter_synth, KARPENTER_CHART.chart)
    assert chart["Repository"] == KARPENTER_CHART.repository
    assert chart["Version"] == KARPENTER_CHART.version
    assert chart["Values"]["settings"]["featureGates"]["reservedCapacity"] is True
    karpenter_synth.template.has_resource_properties("AWS::EKS::AccessEntry", {"Type": "EC2_LINUX"})
    karpenter_synth.template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {"Namespace": "kube-system", "ServiceAccount": "karpenter"},
    )
    assert not karpenter_synth.resources("Custom::AWS")  # no ASG tagging without ASGs


def test_stack_exposes_what_a_serving_stack_needs(default: Synth) -> None:
    stack = default.stack
    assert stack.cluster.cluster_name
    assert stack.vpc is not None
    assert stack.settings.cluster_name == "trnspec"
    assert [ng.nodegroup_name for ng in stack.trn2_nodegroups] == ["trnspec-trn2"]
    assert stack.kubectl_provider is not None


def test_the_named_admin_gets_a_cluster_admin_access_entry(default: Synth) -> None:
    """The person deploying (platform_synth.ADMIN_ARN here) is cluster admin through an access
    entry of their own, not through the creator's entry (CloudFormation's execution role)."""
    (entry,) = [
        r["Properties"]
        for r in default.resources("AWS::EKS::AccessEntry").values()
        if r["Properties"]["PrincipalArn"] == ADMIN_ARN
    ]
    (policy,) = entry["AccessPolicies"]
    assert policy["AccessScope"] == {"Type": "cluster"}
    assert cfn_text(policy["PolicyArn"]).endswith(
        ":cluster-access-policy/AmazonEKSClusterAdminPolicy"
    )


def test_the_platform_builds_each_installed_add_on_of_the_registry_after_what_it_requires(
    default: Synth, karpenter_synth: Synth
) -> None:
    """The stack only composes: it builds the registry's installed set, one construct per add-on
    directly under the stack, each deployed after the add-ons it declares it requires."""
    for synth in (default, karpenter_synth):
        platform = synth.stack
        assert set(platform.addons) == platform.addon_names
        for name, construct in platform.addons.items():
            assert construct.node.scope is platform, name
            for required in ADDONS[name].requires:
                assert platform.addons[required] in construct.node.dependencies, (name, required)
    assert {"cluster_autoscaler", "prometheus", "ebs_csi"} <= default.stack.addon_names
    assert "karpenter" in karpenter_synth.stack.addon_names
