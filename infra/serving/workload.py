"""Puts the serving workload's manifests on the cluster, after what each group needs.

The cluster-wide controllers these manifests use (KEDA for the ScaledObject, Prometheus Operator
for the monitors, the load-balancer controller for the NLB Service) belong to the platform stack
(infra/platform/addons/), which deploys first and waits for each of them to be ready: destroying
this workload never removes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IConstruct

from infra.serving.manifests.manifests import WorkloadManifests


@dataclass(frozen=True)
class ServingWorkloadProps:
    """Inputs of the workload's manifests."""

    cluster: eks.ICluster
    """Cluster to apply them to."""
    manifests: WorkloadManifests
    """The workload's objects, grouped by what each group needs first."""
    service_accounts: tuple[IConstruct, ...]
    """The identities (service accounts) the pods run as: created after the namespace, before
    the pods."""


class ServingWorkload(Construct):
    """Applies the manifests in dependency order: namespace, identities, workload, CRD users.

    The pods wait for their service accounts, the ScaledObject for the Deployment it scales; the
    CRDs both need are installed (and waited for) by the platform stack this stack follows.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        props: ServingWorkloadProps,
    ) -> None:
        super().__init__(scope, id)
        cluster, manifests, service_accounts = (
            props.cluster,
            props.manifests,
            props.service_accounts,
        )
        self.namespace = eks.KubernetesManifest(
            self, "Namespace", cluster=cluster, manifest=[manifests.namespace]
        )
        for account in service_accounts:
            account.node.add_dependency(self.namespace)

        self.core = eks.KubernetesManifest(
            self, "Workload", cluster=cluster, manifest=manifests.core, prune=True
        )
        self.core.node.add_dependency(self.namespace)
        for account in service_accounts:
            self.core.node.add_dependency(account)

        self.autoscaling = eks.KubernetesManifest(
            self, "Autoscaling", cluster=cluster, manifest=manifests.keda
        )
        self.autoscaling.node.add_dependency(self.core)

        self.monitoring: eks.KubernetesManifest | None = None
        if manifests.monitoring:
            self.monitoring = eks.KubernetesManifest(
                self, "Monitoring", cluster=cluster, manifest=manifests.monitoring
            )
            self.monitoring.node.add_dependency(self.namespace)
