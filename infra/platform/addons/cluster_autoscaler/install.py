"""Cluster Autoscaler: the official chart with a least-privilege Pod Identity role."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from constructs import Construct
from trnspec.config.scale_down import EMPTY_NODE_REMOVAL_MINUTES

from infra.platform.addons.addon import AddonScope, node_autoscaler
from infra.platform.addons.cluster_autoscaler.iam import autoscaler_statements
from infra.platform.addons.controller import (
    KUBE_SYSTEM,
    ControllerChartProps,
    ControllerIdentity,
    controller_chart,
)
from infra.platform.addons.helm import HelmReleaseProps
from infra.platform.addons.pins import CLUSTER_AUTOSCALER_CHART, CLUSTER_AUTOSCALER_IMAGE
from infra.platform.cluster.asg_tags import AsgNodeTemplateTags, AsgNodeTemplateTagsProps
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.platform.cluster.neuron_node import node_template_tags
from infra.platform.cluster.trn2_nodegroup import Trn2Nodegroup

SERVICE_ACCOUNT = "cluster-autoscaler"
IDENTITY = ControllerIdentity(SERVICE_ACCOUNT, "Cluster Autoscaler (Pod Identity)")


@dataclass(frozen=True)
class ClusterAutoscalerProps:
    """Inputs of the Cluster Autoscaler."""

    release: HelmReleaseProps
    """The chart's release (in kube-system, values from `chart_values`)."""
    cluster_name: str
    """Literal name: auto-discovery tag and IAM condition."""
    nodegroups: tuple[Trn2Nodegroup, ...]
    """Trn2 groups whose ASGs get node-template tags."""


def chart_values(cluster_name: str, kubernetes_version: str, region: str) -> dict[str, Any]:
    """Auto-discovery of this cluster's groups, the image of the cluster's minor (the
    autoscaler's scheduler simulation is vendored per minor), on the system nodes."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "image": {"tag": CLUSTER_AUTOSCALER_IMAGE.tags[kubernetes_version]},
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        "nodeSelector": dict(SYSTEM_LABEL),
        "extraArgs": {
            "balance-similar-node-groups": True,
            "skip-nodes-with-system-pods": False,
            "expander": "least-waste",
            # Trn2 nodes take minutes to boot and pull multi-GB images.
            "max-node-provision-time": "25m",
            "scale-down-unneeded-time": f"{EMPTY_NODE_REMOVAL_MINUTES}m",
        },
    }


class ClusterAutoscaler(Construct):
    """Auto-discovers the cluster's node groups and scales Trn2 groups from and to zero."""

    def __init__(self, scope: Construct, construct_id: str, props: ClusterAutoscalerProps) -> None:
        super().__init__(scope, construct_id)
        statements = autoscaler_statements(Stack.of(self), props.cluster_name)
        controller = controller_chart(
            self, ControllerChartProps(props.release, IDENTITY, statements)
        )
        self.identity, self.role, self.chart = (
            controller.identity,
            controller.identity.role,
            controller.chart,
        )
        self.asg_tags = [
            self._node_template_tags(props.cluster_name, ng) for ng in props.nodegroups
        ]

    def _node_template_tags(self, cluster_name: str, ng: Trn2Nodegroup) -> AsgNodeTemplateTags:
        """Tags the group's ASG with what its nodes offer, so it scales up from zero."""
        tagger = AsgNodeTemplateTags(
            self,
            f"NodeTemplateTags-{ng.pool.name}",
            AsgNodeTemplateTagsProps(
                cluster_name=cluster_name,
                nodegroup_name=ng.nodegroup_name,
                tags=node_template_tags(ng.pool),
            ),
        )
        tagger.node.add_dependency(ng.nodegroup)
        return tagger


def build(scope: AddonScope) -> ClusterAutoscaler:
    """The autoscaler over the platform's managed Trn2 node groups."""
    name, version = scope.settings.cluster_name, scope.settings.kubernetes_version
    values = chart_values(name, version, Stack.of(scope.stack).region)
    release = scope.release(CLUSTER_AUTOSCALER_CHART, "cluster-autoscaler", KUBE_SYSTEM, values)
    props = ClusterAutoscalerProps(release=release, cluster_name=name, nodegroups=scope.nodegroups)
    return ClusterAutoscaler(scope.stack, "ClusterAutoscaler", props)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = node_autoscaler("cluster_autoscaler", "cluster-autoscaler", build, other="karpenter")
