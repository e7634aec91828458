"""What the cluster-wide controllers share: they run in kube-system, and the ones that call AWS
get a role of their own for their service account through EKS Pod Identity, installed by one
helper (`controller_chart`): the role and its association, the role's statements, and the
controller's chart, which waits for the association (and for a standalone policy when there is
one) so the controller never starts without its credentials."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.platform.addons.helm import HelmReleaseProps, helm_release
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


@dataclass(frozen=True)
class ControllerChartProps:
    """A controller chart whose service account calls AWS through its own role."""

    release: HelmReleaseProps
    """The chart's release (in kube-system)."""
    service_account: str
    """The service account the chart creates and the role is bound to."""
    description: str
    """IAM role description."""
    statements: Sequence[iam.PolicyStatement]
    """The role's permissions."""
    identity_id: str = "PodIdentity"
    """Construct id of the role and its association."""
    policy_id: str | None = None
    """Construct id of a standalone policy holding `statements` (the chart then waits for it
    too); None puts them in the role's own default policy."""


@dataclass(frozen=True)
class ControllerChart:
    """What `controller_chart` built."""

    identity: PodIdentityRole
    """The role and its Pod Identity association."""
    chart: eks.HelmChart
    """The release, waiting for the association."""
    policy: iam.Policy | None
    """The standalone policy (`policy_id`), or None."""


def controller_chart(scope: Construct, props: ControllerChartProps) -> ControllerChart:
    """Pod Identity role + its statements + the chart (construct id "Chart") that waits for the
    role's association, all under `scope`."""
    identity = controller_identity(
        scope, props.identity_id, props.release.cluster, props.service_account, props.description
    )
    policy: iam.Policy | None = None
    if props.policy_id is None:
        for statement in props.statements:
            identity.role.add_to_policy(statement)
    else:
        policy = iam.Policy(
            scope, props.policy_id, statements=list(props.statements), roles=[identity.role]
        )
    chart = helm_release(scope, "Chart", props.release)
    chart.node.add_dependency(identity.association)
    if policy is not None:
        chart.node.add_dependency(policy)
    return ControllerChart(identity=identity, chart=chart, policy=policy)
