"""Karpenter's controller IAM policy: the documented controller policy, scoped to this
cluster's tag where EC2 allows, passing only the node role it launches instances with."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam


def controller_statements(
    stack: Stack, cluster_name: str, node_role: iam.IRole
) -> list[iam.PolicyStatement]:
    """Karpenter's documented controller policy, scoped to this cluster's tag where EC2 allows."""
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    request_owned = {f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    region = stack.region
    ec2_arn = f"arn:{stack.partition}:ec2:{region}"
    return [
        iam.PolicyStatement(
            sid="LaunchFromSharedResources",
            actions=["ec2:RunInstances", "ec2:CreateFleet"],
            resources=[
                f"{ec2_arn}::image/*",
                f"{ec2_arn}::snapshot/*",
                f"{ec2_arn}:*:security-group/*",
                f"{ec2_arn}:*:subnet/*",
                f"{ec2_arn}:*:capacity-reservation/*",
            ],
        ),
        iam.PolicyStatement(
            sid="CreateOwnedResources",
            actions=[
                "ec2:RunInstances",
                "ec2:CreateFleet",
                "ec2:CreateLaunchTemplate",
                "ec2:CreateTags",
            ],
            resources=[
                f"{ec2_arn}:*:fleet/*",
                f"{ec2_arn}:*:instance/*",
                f"{ec2_arn}:*:volume/*",
                f"{ec2_arn}:*:network-interface/*",
                f"{ec2_arn}:*:launch-template/*",
                f"{ec2_arn}:*:spot-instances-request/*",
            ],
            conditions={"StringEquals": request_owned},
        ),
        iam.PolicyStatement(
            sid="ManageOwnedResources",
            actions=["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate", "ec2:CreateTags"],
            resources=[f"{ec2_arn}:*:instance/*", f"{ec2_arn}:*:launch-template/*"],
            conditions={"StringEquals": owned},
        ),
        iam.PolicyStatement(
            sid="Discover",
            actions=[
                "ec2:DescribeAvailabilityZones",
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
                "pricing:GetProducts",
            ],
            resources=["*"],
        ),
        iam.PolicyStatement(
            sid="ReadAmiParameters",
            actions=["ssm:GetParameter"],
            resources=[f"arn:{stack.partition}:ssm:{region}::parameter/aws/service/*"],
        ),
        iam.PolicyStatement(
            sid="PassNodeRole",
            actions=["iam:PassRole"],
            resources=[node_role.role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
        iam.PolicyStatement(
            sid="ManageInstanceProfiles",
            actions=[
                "iam:CreateInstanceProfile",
                "iam:TagInstanceProfile",
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
                "iam:GetInstanceProfile",
                "iam:ListInstanceProfiles",
            ],
            resources=[f"arn:{stack.partition}:iam::{stack.account}:instance-profile/*"],
        ),
        iam.PolicyStatement(
            sid="ReadCluster",
            actions=["eks:DescribeCluster"],
            resources=[
                stack.format_arn(service="eks", resource="cluster", resource_name=cluster_name)
            ],
        ),
    ]
