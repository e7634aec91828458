"""An IAM role that one Kubernetes service account assumes through EKS Pod Identity.

Pod Identity rather than IRSA: no OIDC provider to manage, and the trust policy names the
`pods.eks.amazonaws.com` service (with session tags, which the agent sets) instead of a per-cluster
issuer; the association binds the role to exactly one namespace/service account. The cluster's
`eks-pod-identity-agent` add-on (infra/platform/cluster/control_plane.py) must be installed.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct


@dataclass(frozen=True)
class PodIdentityRoleProps:
    """Inputs of one Pod Identity role."""

    cluster: eks.ICluster
    """Cluster whose agent hands out the role."""
    namespace: str
    """Namespace of the service account."""
    service_account: str
    """The one service account that assumes the role."""
    description: str
    """IAM role description."""


class PodIdentityRole(Construct):
    """A role plus its Pod Identity association (read-only attributes: `role`, `association`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        props: PodIdentityRoleProps,
    ) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com").with_session_tags(),
            description=props.description,
        )
        self.association = eks.CfnPodIdentityAssociation(
            self,
            "Association",
            cluster_name=props.cluster.cluster_name,
            namespace=props.namespace,
            service_account=props.service_account,
            role_arn=self.role.role_arn,
        )
