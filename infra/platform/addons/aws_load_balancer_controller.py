"""AWS Load Balancer Controller: provisions the workload's internal NLB (`serving.internal_nlb`).

Installed only when a workload asks for the NLB. Its role is the controller's published policy
(kubernetes-sigs/aws-load-balancer-controller docs/install/iam_policy.json) restricted to what an
NLB for a Service needs: the ALB-only statements (Cognito, ACM, WAF, WAF Regional, Shield, IAM
server certificates) are left out, and ARNs are scoped to this region and account. Creation and
deletion stay bound to the `elbv2.k8s.aws/cluster` tag the controller sets, as published.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.platform.addons.addon import Addon
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.pins import AWS_LOAD_BALANCER_CONTROLLER_CHART
from infra.platform.cluster.pod_identity import PodIdentityRole, PodIdentityRoleProps

#: Its relations to the other add-ons (checked at synth, infra/platform/addons/selection.py).
ADDON = Addon(name="aws_load_balancer_controller")

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "aws-load-balancer-controller"
CLUSTER_TAG = "elbv2.k8s.aws/cluster"


@dataclass(frozen=True)
class LoadBalancerControllerProps:
    """Inputs of the controller."""

    cluster: eks.Cluster
    """Cluster to install into."""
    cluster_name: str
    """Literal cluster name (the chart's clusterName)."""
    vpc: ec2.IVpc
    """The cluster's VPC (set explicitly: no instance-metadata lookup)."""
    node_selector: dict[str, str]
    """Where the controller runs (the system nodes)."""
    timeout_minutes: int
    """How long the deploy waits for the controller to be ready."""


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


def controller_values(props: LoadBalancerControllerProps, region: str) -> dict[str, Any]:
    return {
        "clusterName": props.cluster_name,
        # Region and VPC explicit: the controller would otherwise ask instance metadata.
        "region": region,
        "vpcId": props.vpc.vpc_id,
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "nodeSelector": dict(props.node_selector),
        "replicaCount": 2,
    }


class LoadBalancerController(Construct):
    """Chart plus Pod Identity role (attributes: `chart`, `identity`)."""

    def __init__(
        self, scope: Construct, construct_id: str, props: LoadBalancerControllerProps
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.identity = PodIdentityRole(
            self,
            "PodIdentity",
            PodIdentityRoleProps(
                cluster=props.cluster,
                namespace=NAMESPACE,
                service_account=SERVICE_ACCOUNT,
                description="AWS Load Balancer Controller (Pod Identity)",
            ),
        )
        self.policy = iam.Policy(
            self, "Policy", statements=controller_statements(stack), roles=[self.identity.role]
        )
        self.chart = helm_release(
            self,
            "Chart",
            HelmReleaseProps(
                cluster=props.cluster,
                pin=AWS_LOAD_BALANCER_CONTROLLER_CHART,
                release="aws-load-balancer-controller",
                namespace=NAMESPACE,
                values=controller_values(props, stack.region),
                timeout_minutes=props.timeout_minutes,
            ),
        )
        self.chart.node.add_dependency(self.identity.association)
        self.chart.node.add_dependency(self.policy)
