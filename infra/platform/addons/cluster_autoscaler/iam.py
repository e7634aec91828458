"""The Cluster Autoscaler's IAM policy: discover the node groups, scale only the Auto Scaling
groups tagged as owned by this cluster."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from infra.platform.addons.statements import allow

#: Read-only discovery of the groups, their instances and the instance types they launch.
DISCOVER = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "autoscaling:DescribeTags",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
)


def autoscaler_statements(stack: Stack, cluster_name: str) -> list[iam.PolicyStatement]:
    """Read-only discovery everywhere; scaling only this cluster's own groups."""
    nodegroups = stack.format_arn(
        service="eks", resource="nodegroup", resource_name=f"{cluster_name}/*"
    )
    owned = {"StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned"}}
    scale = ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    return [
        allow("Discover", DISCOVER),
        allow("ReadNodegroups", ["eks:DescribeNodegroup"], [nodegroups]),
        allow("ScaleOwnGroupsOnly", scale, conditions=owned),
    ]
