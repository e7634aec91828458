"""The Cluster Autoscaler's IAM policy: discover the node groups, scale only the Auto Scaling
groups tagged as owned by this cluster."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam


def autoscaler_statements(stack: Stack, cluster_name: str) -> list[iam.PolicyStatement]:
    """Read-only discovery everywhere; scaling only this cluster's own groups."""
    return [
        iam.PolicyStatement(
            sid="Discover",
            actions=[
                "autoscaling:DescribeAutoScalingGroups",
                "autoscaling:DescribeAutoScalingInstances",
                "autoscaling:DescribeLaunchConfigurations",
                "autoscaling:DescribeScalingActivities",
                "autoscaling:DescribeTags",
                "ec2:DescribeImages",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplateVersions",
                "ec2:GetInstanceTypesFromInstanceRequirements",
            ],
            resources=["*"],
        ),
        iam.PolicyStatement(
            sid="ReadNodegroups",
            actions=["eks:DescribeNodegroup"],
            resources=[
                stack.format_arn(
                    service="eks", resource="nodegroup", resource_name=f"{cluster_name}/*"
                )
            ],
        ),
        iam.PolicyStatement(
            sid="ScaleOwnGroupsOnly",
            actions=[
                "autoscaling:SetDesiredCapacity",
                "autoscaling:TerminateInstanceInAutoScalingGroup",
            ],
            resources=["*"],
            conditions={
                "StringEquals": {
                    f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned"
                }
            },
        ),
    ]
