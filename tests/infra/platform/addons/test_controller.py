"""A controller add-on's role and chart (infra/platform/addons/controller.py), the IAM statements
every add-on writes (statements.py) and the node autoscalers' one declaration (addon.py)."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_eks_v2 as eks

from infra.platform.addons.addon import ONE_NODE_AUTOSCALER, WorkloadNeeds, node_autoscaler
from infra.platform.addons.controller import (
    KUBE_SYSTEM,
    ControllerChartProps,
    ControllerIdentity,
    controller_chart,
)
from infra.platform.addons.helm import HelmReleaseProps
from infra.platform.addons.pins import CLUSTER_AUTOSCALER_CHART
from infra.platform.addons.statements import allow, regional_arn
from infra.settings import load_settings

ACCOUNT, REGION = "123456789012", "us-east-2"


def _stack() -> Stack:
    return Stack(App(), "S", env=Environment(account=ACCOUNT, region=REGION))


def _release(stack: Stack, namespace: str) -> HelmReleaseProps:
    cluster = eks.Cluster.from_cluster_attributes(stack, "Cluster", cluster_name="c")
    return HelmReleaseProps(
        cluster=cluster,
        pin=CLUSTER_AUTOSCALER_CHART,
        release="cluster-autoscaler",
        namespace=namespace,
        values={},
        timeout_minutes=10,
    )


def test_a_controller_chart_outside_kube_system_is_refused_before_anything_is_built() -> None:
    stack = _stack()
    props = ControllerChartProps(
        _release(stack, "tools"), ControllerIdentity("cluster-autoscaler", "CA"), []
    )
    with pytest.raises(ValueError, match=f"release in tools.*install the chart in {KUBE_SYSTEM}"):
        controller_chart(stack, props)
    assert stack.node.try_find_child("PodIdentity") is None


@pytest.mark.parametrize(
    ("profile", "chart", "service_account"),
    [
        ("default", "cluster-autoscaler", "cluster-autoscaler"),
        ("karpenter", "karpenter", "karpenter"),
    ],
)
def test_a_controller_chart_waits_for_the_association_of_its_service_account(
    platform_synth: Any, profile: str, chart: str, service_account: str
) -> None:
    synth = platform_synth(profile)
    (release,) = [
        r
        for r in synth.resources("Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Chart"] == chart
    ]
    (association,) = [
        logical_id
        for logical_id, r in synth.resources("AWS::EKS::PodIdentityAssociation").items()
        if r["Properties"]["ServiceAccount"] == service_account
    ]
    assert association in release["DependsOn"]


def test_allow_writes_every_resource_by_default_and_conditions_only_when_given() -> None:
    plain = allow("Describe", ("ec2:DescribeVolumes",)).to_statement_json()
    assert plain == {
        "Sid": "Describe",
        "Effect": "Allow",
        "Action": "ec2:DescribeVolumes",
        "Resource": "*",
    }
    owned = {"StringEquals": {"aws:ResourceTag/owner": "me"}}
    scoped = allow("Delete", ["ec2:DeleteVolume"], ["arn:v"], owned).to_statement_json()
    assert scoped["Condition"] == owned and scoped["Resource"] == "arn:v"


def test_regional_arn_names_the_stack_region_and_the_account_asked_for() -> None:
    stack = _stack()
    assert regional_arn(stack, "ec2").endswith(f":ec2:{REGION}:{ACCOUNT}")
    assert regional_arn(stack, "ec2", "*").endswith(f":ec2:{REGION}:*")
    assert regional_arn(stack, "ssm", "").endswith(f":ssm:{REGION}:")


@pytest.mark.parametrize("setting", ["cluster-autoscaler", "karpenter"])
def test_a_node_autoscaler_is_installed_exactly_when_the_profile_names_it(setting: str) -> None:
    addon = node_autoscaler("karpenter", "karpenter", lambda scope: scope.stack, "other")
    settings = load_settings("default", {"autoscaler": setting})
    needs = WorkloadNeeds(
        prometheus_namespace=None, load_balancer_controller=False, storage_class="gp3"
    )
    assert addon.installed(settings, needs) is (setting == "karpenter")
    assert addon.excludes == frozenset({"other"}) and addon.reason == ONE_NODE_AUTOSCALER
