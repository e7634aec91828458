"""Karpenter: controller (chart, Pod Identity role) plus one NodePool + EC2NodeClass per pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.platform.addons.addon import AddonScope, node_autoscaler
from infra.platform.addons.controller import (
    KUBE_SYSTEM,
    ControllerChartProps,
    ControllerIdentity,
    controller_chart,
)
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.karpenter.iam import controller_statements
from infra.platform.addons.karpenter.node_pools import node_class, node_pool
from infra.platform.addons.pins import KARPENTER_CHART, KARPENTER_CRD_CHART
from infra.platform.cluster.control_plane import SYSTEM_LABEL, node_role
from infra.settings import Trn2PoolSettings

SERVICE_ACCOUNT = "karpenter"
IDENTITY = ControllerIdentity(
    SERVICE_ACCOUNT, "Karpenter controller (Pod Identity)", construct_id="ControllerIdentity"
)


@dataclass(frozen=True)
class KarpenterProps:
    """Inputs of Karpenter."""

    crds: HelmReleaseProps
    """Release of Karpenter's CRDs (in kube-system)."""
    controller: HelmReleaseProps
    """Release of the controller (in kube-system, without the CRDs, values from
    `controller_values`)."""
    cluster_name: str
    """Literal name: discovery tags, IAM conditions."""
    pools: tuple[Trn2PoolSettings, ...]
    """One NodePool + EC2NodeClass each."""
    tags: dict[str, str]
    """Tags for the instances Karpenter launches."""
    ami_alias: str
    """AL2023 alias (`al2023@v<release>`): Karpenter picks its Neuron variant for trn2 types."""


def controller_values(cluster_name: str, region: str) -> dict[str, Any]:
    """The controller's chart values: this cluster, reserved capacity, on the system nodes."""
    return {
        "settings": {
            "clusterName": cluster_name,
            "featureGates": {"reservedCapacity": True},
        },
        # Explicit region: otherwise the controller asks instance metadata, which depends on
        # the system nodes' hop limit.
        "controller": {"env": [{"name": "AWS_REGION", "value": region}]},
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "nodeSelector": dict(SYSTEM_LABEL),
        "replicas": 2,
    }


class Karpenter(Construct):
    """Karpenter controller on the system nodes and the Trn2 NodePools it serves."""

    def __init__(self, scope: Construct, construct_id: str, props: KarpenterProps) -> None:
        super().__init__(scope, construct_id)
        cluster = props.controller.cluster
        self.node_role = node_role(self, "NodeRole")
        self.node_access = eks.AccessEntry(
            self,
            "NodeAccess",
            cluster=cluster,
            principal=self.node_role.role_arn,
            access_entry_type=eks.AccessEntryType.EC2_LINUX,
            access_policies=[],
        )
        self._releases(props)
        self.node_pools = eks.KubernetesManifest(
            self, "NodePools", cluster=cluster, manifest=self._pool_manifests(props)
        )
        # The CRDs arrive with their chart; the controller validates and reconciles the pools.
        self.node_pools.node.add_dependency(self.crds)
        self.node_pools.node.add_dependency(self.chart)

    def _releases(self, props: KarpenterProps) -> None:
        """The CRDs as their own release, so `helm upgrade` moves them with the controller (Helm
        installs a chart's crds/ directory once and never upgrades it), then the controller
        with its Pod Identity role."""
        self.crds = helm_release(self, "Crds", props.crds)
        statements = controller_statements(Stack.of(self), props.cluster_name, self.node_role)
        controller = controller_chart(
            self, ControllerChartProps(props.controller, IDENTITY, statements)
        )
        self.controller_identity = controller.identity
        self.controller_role = controller.identity.role
        self.chart = controller.chart
        self.chart.node.add_dependency(self.crds)

    def _pool_manifests(self, props: KarpenterProps) -> list[dict[str, Any]]:
        """An EC2NodeClass and a NodePool per Trn2 pool."""
        role = self.node_role.role_name
        return [
            doc
            for pool in props.pools
            for doc in (
                node_class(pool, props.cluster_name, role, props.tags, props.ami_alias),
                node_pool(pool),
            )
        ]


def build(scope: AddonScope) -> Karpenter:
    """The controller and one NodePool + EC2NodeClass per Trn2 pool."""
    settings = scope.settings
    values = controller_values(settings.cluster_name, Stack.of(scope.stack).region)
    props = KarpenterProps(
        crds=scope.release(KARPENTER_CRD_CHART, "karpenter-crd", KUBE_SYSTEM, {}),
        controller=scope.release(KARPENTER_CHART, "karpenter", KUBE_SYSTEM, values, skip_crds=True),
        cluster_name=settings.cluster_name,
        pools=settings.trn2_pools,
        tags=dict(settings.tags),
        ami_alias=settings.karpenter_ami_alias,
    )
    return Karpenter(scope.stack, "Karpenter", props)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = node_autoscaler("karpenter", "karpenter", build, other="cluster_autoscaler")
