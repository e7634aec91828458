"""The platform stack: network, cluster, Trn2 pools, one node autoscaler and every cluster-wide
add-on (Neuron, KEDA, Prometheus, EBS CSI, the load-balancer controller), so destroying a
workload stack never removes the cluster's machinery."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Environment, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.aws_lambda import ILayerVersion
from constructs import Construct

from infra.outputs import PlatformOutputs, update_kubeconfig_command
from infra.platform.addons.aws_load_balancer_controller import (
    LoadBalancerController,
    LoadBalancerControllerProps,
)
from infra.platform.addons.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerProps
from infra.platform.addons.ebs_csi import EbsCsi, EbsCsiProps
from infra.platform.addons.karpenter import Karpenter, KarpenterProps
from infra.platform.addons.keda import Keda, KedaProps
from infra.platform.addons.neuron import Neuron, NeuronProps
from infra.platform.addons.prometheus import Prometheus, PrometheusProps
from infra.platform.addons.selection import ADDONS, WorkloadNeeds, installed_addons
from infra.platform.cluster.control_plane import SYSTEM_LABEL, Cluster, ClusterProps, node_role
from infra.platform.cluster.network import Network, NetworkProps
from infra.platform.cluster.trn2_nodegroup import Trn2Nodegroup, Trn2NodegroupProps
from infra.settings import DeploymentSettings


class PlatformStack(Stack):
    """EKS for Trn2 serving. Exposes `cluster`, `vpc`, `settings`, `trn2_nodegroups` and
    `kubectl_provider` so a serving stack can add the workload onto this cluster."""

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
        private = network.private_subnets
        core = Cluster(
            self,
            "Eks",
            ClusterProps(
                cluster_name=settings.cluster_name,
                kubernetes_version=settings.kubernetes_version,
                endpoint_access=settings.endpoint_access,
                admin_principal_arns=settings.admin_principal_arns,
                system_nodes=settings.system_nodes,
                tags=dict(settings.tags),
                vpc=network.vpc,
                subnets=private,
            ),
        )
        self._cluster = core.cluster
        self._kubectl_layer = core.kubectl_layer

        self.addon_names = installed_addons(settings, needs)
        timeout = settings.addons.helm_timeout_minutes
        self._nodegroups: tuple[Trn2Nodegroup, ...] = ()
        # The node autoscaler, chosen once (infra/platform/addons/selection.py names the same
        # choice).
        managed_nodegroups = "cluster_autoscaler" in self.addon_names
        if managed_nodegroups:
            trn2_role = node_role(self, "Trn2NodeRole")
            self._nodegroups = tuple(
                Trn2Nodegroup(
                    self,
                    f"Trn2-{pool.name}",
                    Trn2NodegroupProps(
                        pool=pool,
                        cluster=core.cluster,
                        cluster_name=settings.cluster_name,
                        vpc=network.vpc,
                        subnets=private,
                        node_role=trn2_role,
                    ),
                )
                for pool in settings.trn2_pools
            )
            self.autoscaler: Construct = ClusterAutoscaler(
                self,
                "ClusterAutoscaler",
                ClusterAutoscalerProps(
                    cluster=core.cluster,
                    cluster_name=settings.cluster_name,
                    kubernetes_version=settings.kubernetes_version,
                    nodegroups=self._nodegroups,
                    timeout_minutes=timeout,
                ),
            )
        else:
            self.autoscaler = Karpenter(
                self,
                "Karpenter",
                KarpenterProps(
                    cluster=core.cluster,
                    cluster_name=settings.cluster_name,
                    pools=settings.trn2_pools,
                    tags=dict(settings.tags),
                    ami_alias=settings.karpenter_ami_alias,
                    timeout_minutes=timeout,
                ),
            )
        self.neuron = Neuron(
            self,
            "Neuron",
            NeuronProps(
                cluster=core.cluster,
                settings=settings.neuron,
                instance_types=tuple(p.instance_type for p in settings.trn2_pools),
                kubernetes_version=settings.kubernetes_version,
                timeout_minutes=timeout,
            ),
        )
        self.ebs_csi = EbsCsi(
            self,
            "EbsCsi",
            EbsCsiProps(cluster=core.cluster, storage_class=needs.storage_class),
        )
        self.keda = Keda(
            self,
            "Keda",
            KedaProps(
                cluster=core.cluster, node_selector=dict(SYSTEM_LABEL), timeout_minutes=timeout
            ),
        )
        self.prometheus: Prometheus | None = None
        if needs.prometheus_namespace is not None:
            self.prometheus = Prometheus(
                self,
                "Prometheus",
                PrometheusProps(
                    cluster=core.cluster,
                    namespace=needs.prometheus_namespace,
                    node_selector=dict(SYSTEM_LABEL),
                    storage_class=needs.storage_class,
                    volume_gib=settings.addons.prometheus_volume_gib,
                    retention_days=settings.addons.prometheus_retention_days,
                    timeout_minutes=timeout,
                ),
            )
        self.load_balancer_controller: LoadBalancerController | None = None
        if needs.load_balancer_controller:
            self.load_balancer_controller = LoadBalancerController(
                self,
                "LoadBalancerController",
                LoadBalancerControllerProps(
                    cluster=core.cluster,
                    cluster_name=settings.cluster_name,
                    vpc=network.vpc,
                    node_selector=dict(SYSTEM_LABEL),
                    timeout_minutes=timeout,
                ),
            )
        autoscaler = "cluster_autoscaler" if managed_nodegroups else "karpenter"
        built: dict[str, Construct | None] = {
            autoscaler: self.autoscaler,
            "neuron": self.neuron,
            "ebs_csi": self.ebs_csi,
            "keda": self.keda,
            "prometheus": self.prometheus,
            "aws_load_balancer_controller": self.load_balancer_controller,
        }
        # Every add-on waits for its pods: they need the system nodes, and the controllers with
        # an AWS role need the Pod Identity agent.
        for addon in built.values():
            if addon is not None:
                addon.node.add_dependency(core.system_nodegroup)
                addon.node.add_dependency(core.addons["eks-pod-identity-agent"])
        # Then for the add-ons each one declares it requires (infra/platform/addons/*.py `ADDON`).
        for name, addon in built.items():
            if addon is not None:
                for required in sorted(ADDONS[name].requires):
                    dependency = built[required]
                    if dependency is None:  # composition.check_addons refuses this first
                        raise ValueError(f"add-on {name} requires {required}, not installed")
                    addon.node.add_dependency(dependency)
        self._outputs()

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
