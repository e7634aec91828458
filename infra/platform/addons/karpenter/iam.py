"""Karpenter's controller IAM policy: the documented controller policy, scoped to this
cluster's tag where EC2 allows, passing only the node role it launches instances with."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from infra.platform.addons.statements import allow, regional_arn

#: What Karpenter reads to pick instance types, zones, images and prices (on every resource).
DISCOVER = (
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
)
#: The instance profiles Karpenter makes for the node role.
MANAGE_INSTANCE_PROFILES = (
    "iam:CreateInstanceProfile",
    "iam:TagInstanceProfile",
    "iam:AddRoleToInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
    "iam:DeleteInstanceProfile",
    "iam:GetInstanceProfile",
    "iam:ListInstanceProfiles",
)
#: What Karpenter creates, each tagged as this cluster's on creation.
CREATE_OWNED = ("ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:CreateTags")


def controller_statements(
    stack: Stack, cluster_name: str, node_role: iam.IRole
) -> list[iam.PolicyStatement]:
    """Karpenter's documented controller policy, scoped to this cluster's tag where EC2 allows."""
    owned = {"StringEquals": {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}}
    request_owned = {
        "StringEquals": {f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    }
    # EC2 names images and snapshots without an account; the rest of any account's (shared).
    shared, any_account = regional_arn(stack, "ec2", ""), regional_arn(stack, "ec2", "*")
    launch_from = [
        f"{shared}:image/*",
        f"{shared}:snapshot/*",
        *(f"{any_account}:{r}/*" for r in ("security-group", "subnet", "capacity-reservation")),
    ]
    owned_kinds = (
        "fleet",
        "instance",
        "volume",
        "network-interface",
        "launch-template",
        "spot-instances-request",
    )
    managed = [f"{any_account}:instance/*", f"{any_account}:launch-template/*"]
    ami_parameters = f"{regional_arn(stack, 'ssm', '')}:parameter/aws/service/*"
    profiles = f"arn:{stack.partition}:iam::{stack.account}:instance-profile/*"
    cluster = stack.format_arn(service="eks", resource="cluster", resource_name=cluster_name)
    pass_to_ec2 = {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
    manage = ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate", "ec2:CreateTags"]
    return [
        allow("LaunchFromSharedResources", ["ec2:RunInstances", "ec2:CreateFleet"], launch_from),
        allow(
            "CreateOwnedResources",
            CREATE_OWNED,
            [f"{any_account}:{kind}/*" for kind in owned_kinds],
            request_owned,
        ),
        allow("ManageOwnedResources", manage, managed, owned),
        allow("Discover", DISCOVER),
        allow("ReadAmiParameters", ["ssm:GetParameter"], [ami_parameters]),
        allow("PassNodeRole", ["iam:PassRole"], [node_role.role_arn], pass_to_ec2),
        allow("ManageInstanceProfiles", MANAGE_INSTANCE_PROFILES, [profiles]),
        allow("ReadCluster", ["eks:DescribeCluster"], [cluster]),
    ]
