"""What the cluster-wide controllers share: they run in kube-system, and the ones that call AWS
get a role of their own for their service account through EKS Pod Identity."""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.platform.cluster.pod_identity import PodIdentityRole, PodIdentityRoleProps

#: Where every add-on's controllers run.
KUBE_SYSTEM = "kube-system"


def controller_identity(
    scope: Construct,
    construct_id: str,
    cluster: eks.ICluster,
    service_account: str,
    description: str,
) -> PodIdentityRole:
    """The role the controller's service account (in kube-system) assumes; the controller's
    chart must wait for its `association`."""
    return PodIdentityRole(
        scope,
        construct_id,
        PodIdentityRoleProps(
            cluster=cluster,
            namespace=KUBE_SYSTEM,
            service_account=service_account,
            description=description,
        ),
    )
