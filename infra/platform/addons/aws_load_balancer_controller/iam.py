"""The AWS Load Balancer Controller's IAM policy: the controller's published
docs/install/iam_policy.json (kubernetes-sigs/aws-load-balancer-controller) restricted to what an
NLB for a Service needs (no Cognito, ACM, WAF, WAF Regional, Shield or IAM server certificate
statements), ARNs scoped to this region and account; creation and deletion stay bound to the
`elbv2.k8s.aws/cluster` tag the controller sets, as published."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from infra.platform.addons.statements import allow, regional_arn

#: Tag the controller sets on everything it creates.
CLUSTER_TAG = "elbv2.k8s.aws/cluster"

#: The published policy's read-only actions (on every resource).
DESCRIBE = (
    "ec2:DescribeAccountAttributes",
    "ec2:DescribeAddresses",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeInternetGateways",
    "ec2:DescribeVpcs",
    "ec2:DescribeVpcPeeringConnections",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeInstances",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeTags",
    "ec2:GetSecurityGroupsForVpc",
    "ec2:DescribeIpamPools",
    "ec2:DescribeRouteTables",
    "elasticloadbalancing:DescribeLoadBalancers",
    "elasticloadbalancing:DescribeLoadBalancerAttributes",
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeListenerCertificates",
    "elasticloadbalancing:DescribeSSLPolicies",
    "elasticloadbalancing:DescribeRules",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTargetGroupAttributes",
    "elasticloadbalancing:DescribeTargetHealth",
    "elasticloadbalancing:DescribeTags",
    "elasticloadbalancing:DescribeTrustStores",
    "elasticloadbalancing:DescribeListenerAttributes",
    "elasticloadbalancing:DescribeCapacityReservation",
)
#: What the controller changes on the balancers and target groups it tagged.
MANAGE_OWN_BALANCERS = (
    "elasticloadbalancing:ModifyLoadBalancerAttributes",
    "elasticloadbalancing:SetIpAddressType",
    "elasticloadbalancing:SetSecurityGroups",
    "elasticloadbalancing:SetSubnets",
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:ModifyTargetGroup",
    "elasticloadbalancing:ModifyTargetGroupAttributes",
    "elasticloadbalancing:DeleteTargetGroup",
    "elasticloadbalancing:ModifyListenerAttributes",
    "elasticloadbalancing:ModifyCapacityReservation",
    "elasticloadbalancing:ModifyIpPools",
)


def controller_statements(stack: Stack) -> list[iam.PolicyStatement]:
    ec2_arn = regional_arn(stack, "ec2")
    elb = regional_arn(stack, "elasticloadbalancing")
    sg = f"{ec2_arn}:security-group/*"
    tagged = {"Null": {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}
    requested = {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"}}
    retag = {
        "Null": {f"aws:RequestTag/{CLUSTER_TAG}": "true", f"aws:ResourceTag/{CLUSTER_TAG}": "false"}
    }
    balancers = [f"{elb}:targetgroup/*/*", f"{elb}:loadbalancer/net/*/*"]
    listeners = [f"{elb}:listener/net/*/*/*"]
    add_remove_tags = ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"]
    ingress = ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"]
    elb_linked_role = {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}
    tag_on_create = {
        "StringEquals": {
            "elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]
        },
        **requested,
    }
    return [
        allow("ElbServiceLinkedRole", ["iam:CreateServiceLinkedRole"], conditions=elb_linked_role),
        allow("Describe", DESCRIBE),
        allow("CreateSecurityGroups", ["ec2:CreateSecurityGroup"], [sg, f"{ec2_arn}:vpc/*"]),
        allow(
            "TagNewSecurityGroups",
            ["ec2:CreateTags"],
            [sg],
            {"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, **requested},
        ),
        allow("RetagOwnSecurityGroups", ["ec2:CreateTags", "ec2:DeleteTags"], [sg], retag),
        allow("ManageOwnSecurityGroups", [*ingress, "ec2:DeleteSecurityGroup"], [sg], tagged),
        # The published policy grants ingress changes on any security group: the controller
        # opens the node/pod security group to its NLB's security group.
        allow("OpenNodeSecurityGroupsToOwnBalancers", ingress, [sg]),
        allow(
            "CreateTaggedBalancers",
            ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
            conditions=requested,
        ),
        allow(
            "Listeners",
            [
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:ModifyListener",
            ],
            [f"{elb}:loadbalancer/net/*/*", *listeners],
        ),
        allow("RetagOwnBalancers", add_remove_tags, balancers, retag),
        allow("TagListeners", add_remove_tags, listeners),
        allow("ManageOwnBalancers", MANAGE_OWN_BALANCERS, balancers, tagged),
        allow("TagOnCreate", ["elasticloadbalancing:AddTags"], balancers, tag_on_create),
        allow(
            "RegisterTargets",
            ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
            [f"{elb}:targetgroup/*/*"],
        ),
    ]
