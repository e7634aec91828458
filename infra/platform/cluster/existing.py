"""An EKS cluster made elsewhere, imported so the serving stack can apply its manifests to it.

aws_eks_v2's `Cluster.from_cluster_attributes` gives an ICluster whose `kubectl_provider` is only
what it is handed (an imported cluster ignores `kubectl_provider_options`), so this construct
builds the provider first, against a bare import of the same name, then imports the cluster again
with it. The provider is the one the platform's own cluster gets: a Lambda with the pinned
kubectl-v36 layer. Its role is either `kubectl_role_arn` (already a cluster admin) or a new role,
given an EKS access entry with AmazonEKSClusterAdminPolicy here; `ready` is what every
manifest must wait for (the access entry, when there is one).

Public API endpoint only: a private endpoint needs the Lambda in the cluster's subnets, which
this construct does not wire (docs/platform.md, "Existing cluster").
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk.lambda_layer_kubectl_v36 import KubectlV36Layer
from constructs import Construct, IDependable

#: The EKS access policy that lets the kubectl Lambda apply the workload's objects (namespaces,
#: RBAC-free workload kinds, CRD instances: cluster scope).
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


@dataclass(frozen=True)
class ExistingClusterProps:
    """Inputs of one imported cluster."""

    cluster_name: str
    """The EKS cluster's name."""
    kubectl_role_arn: str | None
    """Role the kubectl Lambda runs as (trusts lambda.amazonaws.com, already a cluster admin);
    None: a new role with an access entry made here."""


class ExistingCluster(Construct):
    """The imported cluster with a kubectl provider of its own (read-only attributes: `cluster`,
    `kubectl_provider`, `access_entry` (None with `kubectl_role_arn`), `ready`)."""

    def __init__(self, scope: Construct, construct_id: str, props: ExistingClusterProps) -> None:
        super().__init__(scope, construct_id)
        bare = eks.Cluster.from_cluster_attributes(self, "Lookup", cluster_name=props.cluster_name)
        role = (
            iam.Role.from_role_arn(self, "KubectlRole", props.kubectl_role_arn)
            if props.kubectl_role_arn is not None
            else None
        )
        self.kubectl_provider = eks.KubectlProvider(
            self,
            "KubectlProvider",
            cluster=bare,
            kubectl_layer=KubectlV36Layer(self, "KubectlLayer"),
            role=role,
        )
        self.cluster = eks.Cluster.from_cluster_attributes(
            self,
            "Cluster",
            cluster_name=props.cluster_name,
            kubectl_provider=self.kubectl_provider,
        )
        self.access_entry: eks.AccessEntry | None = None
        if role is None:
            provider_role = self.kubectl_provider.role
            assert provider_role is not None  # a created provider always has its handler's role
            self.access_entry = eks.AccessEntry(
                self,
                "KubectlAccess",
                cluster=self.cluster,
                principal=provider_role.role_arn,
                access_policies=[
                    eks.AccessPolicy.from_access_policy_name(
                        CLUSTER_ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
                    )
                ],
            )
        self.ready: IDependable = self.access_entry or self.kubectl_provider
