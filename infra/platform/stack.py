"""The platform stack: network, cluster, Trn2 pools, one node autoscaler and every cluster-wide
add-on (Neuron, KEDA, Prometheus, EBS CSI, the load-balancer controller), so destroying a
workload stack never removes the cluster's machinery. It only composes: the add-ons it builds are
the registry's (infra/platform/addons/registry.py), each built by its own module."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Environment, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.aws_lambda import ILayerVersion
from constructs import Construct

from infra.outputs import PlatformOutputs, update_kubeconfig_command
from infra.platform.addons.addon import AddonScope, WorkloadNeeds
from infra.platform.addons.registry import ADDONS, installed_addons
from infra.platform.cluster.control_plane import SYSTEM_LABEL, Cluster, ClusterProps, node_role
from infra.platform.cluster.network import Network, NetworkProps
from infra.platform.cluster.trn2_nodegroup import Trn2Nodegroup, Trn2NodegroupProps
from infra.settings import DeploymentSettings


class PlatformStack(Stack):
    """EKS for Trn2 serving. Exposes `cluster`, `vpc`, `settings`, `trn2_nodegroups` and
    `kubectl_provider` so a serving stack can add the workload onto this cluster, and `addons`
    (the installed add-ons' constructs by name)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        settings: DeploymentSettings,
        needs: WorkloadNeeds,
        **kwargs: Any,
    ) -> None:
        env = None
        if settings.account or settings.region:
            env = Environment(account=settings.account, region=settings.region)
        super().__init__(scope, construct_id, env=env, **kwargs)
        self._settings = settings
        for key, value in settings.tags.items():
            Tags.of(self).add(key, value)
        network = Network(
            self, "Network", NetworkProps(settings=settings.vpc, cluster_name=settings.cluster_name)
        )
        self._vpc = network.vpc
        core = self._core(network)
        self._cluster = core.cluster
        self._kubectl_layer = core.kubectl_layer
        # Which add-ons, decided once from the settings (infra/platform/addons/registry.py).
        self.addon_names = installed_addons(settings, needs)
        # Managed Trn2 node groups are what the Cluster Autoscaler scales; Karpenter launches
        # its own nodes from NodePools instead.
        self._nodegroups: tuple[Trn2Nodegroup, ...] = ()
        if "cluster_autoscaler" in self.addon_names:
            self._nodegroups = self._trn2_nodegroups(network, core)
        addon_scope = AddonScope(
            stack=self,
            cluster=core.cluster,
            settings=settings,
            needs=needs,
            vpc=network.vpc,
            nodegroups=self._nodegroups,
        )
        self.addons: dict[str, Construct] = {
            name: addon.build(addon_scope)
            for name, addon in ADDONS.items()
            if name in self.addon_names
        }
        self._order_addons(core)
        self._outputs()

    def _core(self, network: Network) -> Cluster:
        """The EKS control plane, its core add-ons and the system node group."""
        s = self._settings
        return Cluster(
            self,
            "Eks",
            ClusterProps(
                cluster_name=s.cluster_name,
                kubernetes_version=s.kubernetes_version,
                endpoint_access=s.endpoint_access,
                admin_principal_arns=s.admin_principal_arns,
                system_nodes=s.system_nodes,
                tags=dict(s.tags),
                vpc=network.vpc,
                subnets=network.private_subnets,
            ),
        )

    def _trn2_nodegroups(self, network: Network, core: Cluster) -> tuple[Trn2Nodegroup, ...]:
        """One managed node group per Trn2 pool, sharing one node role."""
        trn2_role = node_role(self, "Trn2NodeRole")
        return tuple(
            Trn2Nodegroup(
                self,
                f"Trn2-{pool.name}",
                Trn2NodegroupProps(
                    pool=pool,
                    cluster=core.cluster,
                    cluster_name=self._settings.cluster_name,
                    vpc=network.vpc,
                    subnets=network.private_subnets,
                    node_role=trn2_role,
                ),
            )
            for pool in self._settings.trn2_pools
        )

    def _order_addons(self, core: Cluster) -> None:
        """Every add-on waits for its pods' prerequisites: the system nodes, and the Pod Identity
        agent for the controllers with an AWS role; then for the add-ons it declares it requires
        (infra/platform/addons/*.py `ADDON`)."""
        for addon in self.addons.values():
            addon.node.add_dependency(core.system_nodegroup)
            addon.node.add_dependency(core.addons["eks-pod-identity-agent"])
        for name, addon in self.addons.items():
            for required in sorted(ADDONS[name].requires):
                dependency = self.addons.get(required)
                if dependency is None:  # composition.check_addons refuses this first
                    raise ValueError(f"add-on {name} requires {required}, not installed")
                addon.node.add_dependency(dependency)

    def _outputs(self) -> None:
        s = self._settings
        CfnOutput(self, PlatformOutputs.CLUSTER_NAME, value=self._cluster.cluster_name)
        CfnOutput(
            self,
            PlatformOutputs.UPDATE_KUBECONFIG_COMMAND,
            value=update_kubeconfig_command(s.cluster_name, self.region),
        )
        names = [f"{s.cluster_name}-system", *(ng.nodegroup_name for ng in self._nodegroups)]
        CfnOutput(self, PlatformOutputs.NODEGROUP_NAMES, value=",".join(names))

    @property
    def settings(self) -> DeploymentSettings:
        return self._settings

    @property
    def cluster(self) -> eks.Cluster:
        return self._cluster

    @property
    def vpc(self) -> ec2.IVpc:
        return self._vpc

    @property
    def trn2_nodegroups(self) -> tuple[Trn2Nodegroup, ...]:
        """Managed Trn2 groups (empty with Karpenter, whose NodePools launch nodes instead)."""
        return self._nodegroups

    @property
    def kubectl_provider(self) -> eks.IKubectlProvider | None:
        """The provider that applies Helm charts and manifests (kubectl-v36 layer)."""
        return self._cluster.kubectl_provider

    @property
    def kubectl_layer(self) -> ILayerVersion:
        """The kubectl-v36 Lambda layer, for a serving stack that imports the cluster."""
        return self._kubectl_layer

    @property
    def system_node_selector(self) -> dict[str, str]:
        """Label selecting the system node group, for controllers a serving stack adds."""
        return dict(SYSTEM_LABEL)
