"""Cluster Autoscaler: the official chart with a least-privilege Pod Identity role."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.platform.addons.addon import Addon
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.pins import CLUSTER_AUTOSCALER_CHART, CLUSTER_AUTOSCALER_IMAGE
from infra.platform.cluster.asg_tags import AsgNodeTemplateTags, AsgNodeTemplateTagsProps
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.platform.cluster.neuron_node import node_template_tags
from infra.platform.cluster.pod_identity import PodIdentityRole, PodIdentityRoleProps
from infra.platform.cluster.trn2_nodegroup import Trn2Nodegroup

#: Its relations to the other add-ons (checked at synth, infra/platform/addons/selection.py).
ADDON = Addon(
    name="cluster_autoscaler",
    excludes=frozenset({"karpenter"}),
    reason="both launch Trn2 nodes for the same pending pods; `autoscaler` picks one",
)

CHART_REPOSITORY = CLUSTER_AUTOSCALER_CHART.repository
CHART = CLUSTER_AUTOSCALER_CHART.chart
CHART_VERSION = CLUSTER_AUTOSCALER_CHART.version
#: The autoscaler minor must match the cluster minor (its scheduler simulation is vendored).
IMAGE_TAGS = CLUSTER_AUTOSCALER_IMAGE.tags
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"


@dataclass(frozen=True)
class ClusterAutoscalerProps:
    """Inputs of the Cluster Autoscaler."""

    cluster: eks.Cluster
    """Cluster to install into."""
    cluster_name: str
    """Literal name: auto-discovery tag and IAM condition."""
    kubernetes_version: str
    """Picks the matching autoscaler image."""
    nodegroups: tuple[Trn2Nodegroup, ...]
    """Trn2 groups whose ASGs get node-template tags."""
    timeout_minutes: int = 15
    """How long the deploy waits for the autoscaler to be ready."""


class ClusterAutoscaler(Construct):
    """Auto-discovers the cluster's node groups and scales Trn2 groups from and to zero."""

    def __init__(self, scope: Construct, construct_id: str, props: ClusterAutoscalerProps) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.identity = PodIdentityRole(
            self,
            "PodIdentity",
            PodIdentityRoleProps(
                cluster=props.cluster,
                namespace=NAMESPACE,
                service_account=SERVICE_ACCOUNT,
                description="Cluster Autoscaler (Pod Identity)",
            ),
        )
        self.role = self.identity.role
        self.role.add_to_policy(
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
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadNodegroups",
                actions=["eks:DescribeNodegroup"],
                resources=[
                    stack.format_arn(
                        service="eks",
                        resource="nodegroup",
                        resource_name=f"{props.cluster_name}/*",
                    )
                ],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ScaleOwnGroupsOnly",
                actions=[
                    "autoscaling:SetDesiredCapacity",
                    "autoscaling:TerminateInstanceInAutoScalingGroup",
                ],
                resources=["*"],
                conditions={
                    "StringEquals": {
                        f"aws:ResourceTag/k8s.io/cluster-autoscaler/{props.cluster_name}": "owned"
                    }
                },
            )
        )
        self.chart = helm_release(
            self,
            "Chart",
            HelmReleaseProps(
                cluster=props.cluster,
                pin=CLUSTER_AUTOSCALER_CHART,
                release="cluster-autoscaler",
                namespace=NAMESPACE,
                values={
                    "cloudProvider": "aws",
                    "awsRegion": stack.region,
                    "autoDiscovery": {"clusterName": props.cluster_name},
                    "image": {"tag": IMAGE_TAGS[props.kubernetes_version]},
                    "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
                    "nodeSelector": dict(SYSTEM_LABEL),
                    "extraArgs": {
                        "balance-similar-node-groups": True,
                        "skip-nodes-with-system-pods": False,
                        "expander": "least-waste",
                        # Trn2 nodes take minutes to boot and pull multi-GB images.
                        "max-node-provision-time": "25m",
                        "scale-down-unneeded-time": "15m",
                    },
                },
                timeout_minutes=props.timeout_minutes,
            ),
        )
        self.chart.node.add_dependency(self.identity.association)
        self.asg_tags = [
            AsgNodeTemplateTags(
                self,
                f"NodeTemplateTags-{ng.pool.name}",
                AsgNodeTemplateTagsProps(
                    cluster_name=props.cluster_name,
                    nodegroup_name=ng.nodegroup_name,
                    tags=node_template_tags(ng.pool),
                ),
            )
            for ng in props.nodegroups
        ]
        for tagger, ng in zip(self.asg_tags, props.nodegroups, strict=True):
            tagger.node.add_dependency(ng.nodegroup)
