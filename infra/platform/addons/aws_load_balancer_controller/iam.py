"""The AWS Load Balancer Controller's IAM policy: the controller's published
docs/install/iam_policy.json (kubernetes-sigs/aws-load-balancer-controller) restricted to what an
NLB for a Service needs (no Cognito, ACM, WAF, WAF Regional, Shield or IAM server certificate
statements), ARNs scoped to this region and account; creation and deletion stay bound to the
`elbv2.k8s.aws/cluster` tag the controller sets, as published."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

#: Tag the controller sets on everything it creates.
CLUSTER_TAG = "elbv2.k8s.aws/cluster"


def controller_statements(stack: Stack) -> list[iam.PolicyStatement]:
    ec2_arn = f"arn:{stack.partition}:ec2:{stack.region}:{stack.account}"
    elb = f"arn:{stack.partition}:elasticloadbalancing:{stack.region}:{stack.account}"
    sg = f"{ec2_arn}:security-group/*"
    tagged = {"Null": {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}
    requested = {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"}}
    retag = {
        "Null": {f"aws:RequestTag/{CLUSTER_TAG}": "true", f"aws:ResourceTag/{CLUSTER_TAG}": "false"}
    }
    balancers = [f"{elb}:targetgroup/*/*", f"{elb}:loadbalancer/net/*/*"]
    return [
        iam.PolicyStatement(
            sid="ElbServiceLinkedRole",
            actions=["iam:CreateServiceLinkedRole"],
            resources=["*"],
            conditions={
                "StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}
            },
        ),
        iam.PolicyStatement(
            sid="Describe",
            actions=[
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
            ],
            resources=["*"],
        ),
        iam.PolicyStatement(
            sid="CreateSecurityGroups",
            actions=["ec2:CreateSecurityGroup"],
            resources=[sg, f"{ec2_arn}:vpc/*"],
        ),
        iam.PolicyStatement(
            sid="TagNewSecurityGroups",
            actions=["ec2:CreateTags"],
            resources=[sg],
            conditions={"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, **requested},
        ),
        iam.PolicyStatement(
            sid="RetagOwnSecurityGroups",
            actions=["ec2:CreateTags", "ec2:DeleteTags"],
            resources=[sg],
            conditions=retag,
        ),
        iam.PolicyStatement(
            sid="ManageOwnSecurityGroups",
            actions=[
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:RevokeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
            ],
            resources=[sg],
            conditions=tagged,
        ),
        iam.PolicyStatement(
            sid="OpenNodeSecurityGroupsToOwnBalancers",
            # The published policy grants ingress changes on any security group: the controller
            # opens the node/pod security group to its NLB's security group.
            actions=["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
            resources=[sg],
        ),
        iam.PolicyStatement(
            sid="CreateTaggedBalancers",
            actions=[
                "elasticloadbalancing:CreateLoadBalancer",
                "elasticloadbalancing:CreateTargetGroup",
            ],
            resources=["*"],
            conditions=requested,
        ),
        iam.PolicyStatement(
            sid="Listeners",
            actions=[
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:ModifyListener",
            ],
            resources=[f"{elb}:loadbalancer/net/*/*", f"{elb}:listener/net/*/*/*"],
        ),
        iam.PolicyStatement(
            sid="RetagOwnBalancers",
            actions=["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            resources=balancers,
            conditions=retag,
        ),
        iam.PolicyStatement(
            sid="TagListeners",
            actions=["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            resources=[f"{elb}:listener/net/*/*/*"],
        ),
        iam.PolicyStatement(
            sid="ManageOwnBalancers",
            actions=[
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
            ],
            resources=balancers,
            conditions=tagged,
        ),
        iam.PolicyStatement(
            sid="TagOnCreate",
            actions=["elasticloadbalancing:AddTags"],
            resources=balancers,
            conditions={
                "StringEquals": {
                    "elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]
                },
                **requested,
            },
        ),
        iam.PolicyStatement(
            sid="RegisterTargets",
            actions=[
                "elasticloadbalancing:RegisterTargets",
                "elasticloadbalancing:DeregisterTargets",
            ],
            resources=[f"{elb}:targetgroup/*/*"],
        ),
    ]
