"""Karpenter: controller (chart, Pod Identity role) plus one NodePool + EC2NodeClass per pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.platform.addons.addon import ONE_NODE_AUTOSCALER, Addon, AddonScope, WorkloadNeeds
from infra.platform.addons.controller import KUBE_SYSTEM, ControllerChartProps, controller_chart
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.karpenter.iam import controller_statements
from infra.platform.addons.karpenter.node_pools import node_class, node_pool
from infra.platform.addons.pins import KARPENTER_CHART, KARPENTER_CRD_CHART
from infra.platform.cluster.control_plane import SYSTEM_LABEL, node_role
from infra.settings import DeploymentSettings, Trn2PoolSettings

SERVICE_ACCOUNT = "karpenter"


@dataclass(frozen=True)
class KarpenterProps:
    """Inputs of Karpenter."""

    cluster: eks.Cluster
    """Cluster to install into."""
    cluster_name: str
    """Literal name: discovery tags, IAM conditions."""
    pools: tuple[Trn2PoolSettings, ...]
    """One NodePool + EC2NodeClass each."""
    tags: dict[str, str]
    """Tags for the instances Karpenter launches."""
    ami_alias: str
    """AL2023 alias (`al2023@v<release>`): Karpenter picks its Neuron variant for trn2 types."""
    timeout_minutes: int = 15
    """How long the deploy waits for each of Karpenter's releases to be ready."""


def controller_values(props: KarpenterProps, region: str) -> dict[str, Any]:
    """The controller's chart values: this cluster, reserved capacity, on the system nodes."""
    return {
        "settings": {
            "clusterName": props.cluster_name,
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
        stack = Stack.of(self)
        self.node_role = node_role(self, "NodeRole")
        self.node_access = eks.AccessEntry(
            self,
            "NodeAccess",
            cluster=props.cluster,
            principal=self.node_role.role_arn,
            access_entry_type=eks.AccessEntryType.EC2_LINUX,
            access_policies=[],
        )
        self._releases(props, stack)
        self.node_pools = eks.KubernetesManifest(
            self, "NodePools", cluster=props.cluster, manifest=self._pool_manifests(props)
        )
        # The CRDs arrive with their chart; the controller validates and reconciles the pools.
        self.node_pools.node.add_dependency(self.crds)
        self.node_pools.node.add_dependency(self.chart)

    def _releases(self, props: KarpenterProps, stack: Stack) -> None:
        """The CRDs as their own release, so `helm upgrade` moves them with the controller (Helm
        installs a chart's crds/ directory once and never upgrades it), then the controller
        with its Pod Identity role."""
        self.crds = helm_release(
            self,
            "Crds",
            HelmReleaseProps(
                cluster=props.cluster,
                pin=KARPENTER_CRD_CHART,
                release="karpenter-crd",
                namespace=KUBE_SYSTEM,
                values={},
                timeout_minutes=props.timeout_minutes,
            ),
        )
        controller = controller_chart(
            self,
            ControllerChartProps(
                release=HelmReleaseProps(
                    cluster=props.cluster,
                    pin=KARPENTER_CHART,
                    release="karpenter",
                    namespace=KUBE_SYSTEM,
                    skip_crds=True,
                    values=controller_values(props, stack.region),
                    timeout_minutes=props.timeout_minutes,
                ),
                service_account=SERVICE_ACCOUNT,
                description="Karpenter controller (Pod Identity)",
                statements=controller_statements(stack, props.cluster_name, self.node_role),
                identity_id="ControllerIdentity",
            ),
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


def installed(settings: DeploymentSettings, needs: WorkloadNeeds) -> bool:
    """The node autoscaler when the profile picks it (`autoscaler: karpenter`)."""
    return settings.autoscaler == "karpenter"


def build(scope: AddonScope) -> Karpenter:
    """The controller and one NodePool + EC2NodeClass per Trn2 pool."""
    settings = scope.settings
    props = KarpenterProps(
        cluster=scope.cluster,
        cluster_name=settings.cluster_name,
        pools=settings.trn2_pools,
        tags=dict(settings.tags),
        ami_alias=settings.karpenter_ami_alias,
        timeout_minutes=scope.timeout_minutes,
    )
    return Karpenter(scope.stack, "Karpenter", props)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(
    name="karpenter",
    installed=installed,
    build=build,
    excludes=frozenset({"cluster_autoscaler"}),
    reason=ONE_NODE_AUTOSCALER,
)
