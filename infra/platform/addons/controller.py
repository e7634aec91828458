"""What the cluster-wide controllers share: they run in kube-system, and the ones that call AWS
get a role of their own for their service account through EKS Pod Identity, installed by one
helper (`controller_chart`): the role and its association, the role's statements, and the
controller's chart, which waits for the association (and for a standalone policy when there is
one) so the controller never starts without its credentials. Each controller declares its
`ControllerIdentity` once; `ControllerAddon` is an add-on that is nothing but that chart."""

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


@dataclass(frozen=True)
class ControllerIdentity:
    """Who a controller is to AWS: the service account its chart creates in kube-system and the
    role bound to it."""

    service_account: str
    """The service account the chart creates and the role is bound to."""
    description: str
    """IAM role description."""
    construct_id: str = "PodIdentity"
    """Construct id of the role and its association."""
    policy_id: str | None = None
    """Construct id of a standalone policy holding the role's statements (the chart then waits
    for it too); None puts them in the role's own default policy."""


@dataclass(frozen=True)
class ControllerChartProps:
    """A controller chart whose service account calls AWS through its own role."""

    release: HelmReleaseProps
    """The chart's release (in kube-system)."""
    identity: ControllerIdentity
    """Its service account and role."""
    statements: Sequence[iam.PolicyStatement]
    """The role's permissions."""


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
    spec = props.identity
    if props.release.namespace != KUBE_SYSTEM:
        raise ValueError(
            f"{spec.service_account}: release in {props.release.namespace}, but the role is "
            f"bound to the service account in {KUBE_SYSTEM}; install the chart in {KUBE_SYSTEM}"
        )
    identity = PodIdentityRole(
        scope,
        spec.construct_id,
        PodIdentityRoleProps(
            cluster=props.release.cluster,
            namespace=KUBE_SYSTEM,
            service_account=spec.service_account,
            description=spec.description,
        ),
    )
    policy: iam.Policy | None = None
    if spec.policy_id is None:
        for statement in props.statements:
            identity.role.add_to_policy(statement)
    else:
        policy = iam.Policy(
            scope, spec.policy_id, statements=list(props.statements), roles=[identity.role]
        )
    chart = helm_release(scope, "Chart", props.release)
    chart.node.add_dependency(identity.association)
    if policy is not None:
        chart.node.add_dependency(policy)
    return ControllerChart(identity=identity, chart=chart, policy=policy)


class ControllerAddon(Construct):
    """An add-on that is one controller chart with its own role (attributes: `identity`,
    `chart`, `policy`)."""

    def __init__(self, scope: Construct, construct_id: str, props: ControllerChartProps) -> None:
        super().__init__(scope, construct_id)
        built = controller_chart(self, props)
        self.identity, self.chart, self.policy = built.identity, built.chart, built.policy
