"""The platform stack: composes network, cluster, Trn2 pools, Neuron and one node autoscaler."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Environment, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.aws_lambda import ILayerVersion
from constructs import Construct

from infra.cluster import SYSTEM_LABEL, Cluster, ClusterProps, node_role
from infra.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerProps
from infra.karpenter import Karpenter, KarpenterProps
from infra.network import Network, NetworkProps
from infra.neuron import Neuron, NeuronProps
from infra.outputs import PlatformOutputs, update_kubeconfig_command
from infra.settings import DeploymentSettings
from infra.trn2_nodegroup import Trn2Nodegroup, Trn2NodegroupProps


class PlatformStack(Stack):
    """EKS for Trn2 serving. Exposes `cluster`, `vpc`, `settings`, `trn2_nodegroups` and
    `kubectl_provider` so a serving stack can add the workload onto this cluster."""

    def __init__(
        self, scope: Construct, construct_id: str, settings: DeploymentSettings, **kwargs: Any
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
            self, "Eks", ClusterProps(settings=settings, vpc=network.vpc, subnets=private)
        )
        self._cluster = core.cluster
        self._kubectl_layer = core.kubectl_layer

        self._nodegroups: tuple[Trn2Nodegroup, ...] = ()
        if settings.autoscaler == "cluster-autoscaler":
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
                ),
            )
        self.neuron = Neuron(
            self,
            "Neuron",
            NeuronProps(
                cluster=core.cluster,
                settings=settings.neuron,
                instance_types=tuple(p.instance_type for p in settings.trn2_pools),
            ),
        )
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
