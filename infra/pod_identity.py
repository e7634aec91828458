"""An IAM role that one Kubernetes service account assumes through EKS Pod Identity.

Pod Identity rather than IRSA: no OIDC provider to manage, and the trust policy names the
`pods.eks.amazonaws.com` service (with session tags, which the agent sets) instead of a per-cluster
issuer; the association binds the role to exactly one namespace/service account. The cluster's
`eks-pod-identity-agent` add-on (infra/cluster.py) must be installed.
"""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct


class PodIdentityRole(Construct):
    """A role plus its Pod Identity association (read-only attributes: `role`, `association`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.ICluster,
        namespace: str,
        service_account: str,
        description: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com").with_session_tags(),
            description=description,
        )
        self.association = eks.CfnPodIdentityAssociation(
            self,
            "Association",
            cluster_name=cluster.cluster_name,
            namespace=namespace,
            service_account=service_account,
            role_arn=self.role.role_arn,
        )
