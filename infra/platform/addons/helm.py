"""A Helm release of a pinned chart that makes `cdk deploy` wait for it to come up.

`wait` makes the kubectl provider run `helm upgrade --install --wait --timeout T`: Helm returns
only when the release's Deployments, DaemonSets and Jobs are ready, so a controller that never
starts fails its CloudFormation resource (named after the add-on) and the stack rolls back,
instead of reporting success while every pod that needs it stays Pending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.contracts import MAX_HELM_TIMEOUT_MINUTES
from infra.platform.addons.pins import ChartPin

# A release must be ready, and Helm must have said so, before the kubectl provider's handler
# Lambda is killed: MAX_HELM_TIMEOUT_MINUTES leaves HELM_TIMEOUT_MARGIN_SECONDS of it
# (infra/contracts.py).


@dataclass(frozen=True)
class HelmReleaseProps:
    """One release of a pinned chart."""

    cluster: eks.ICluster
    """Cluster to install into."""
    pin: ChartPin
    """Chart, repository and version (infra/platform/addons/pins.py)."""
    release: str
    """Helm release name."""
    namespace: str
    """Namespace of the release."""
    values: dict[str, Any]
    """Helm values (keys the chart reads at the pinned version)."""
    timeout_minutes: int
    """How long the deploy waits for the release to be ready."""
    create_namespace: bool = False
    """Create the namespace if missing."""
    skip_crds: bool = False
    """Leave the chart's crds/ directory alone (CRDs come from their own release)."""


def helm_release(scope: Construct, construct_id: str, props: HelmReleaseProps) -> eks.HelmChart:
    """Install `props.pin` and wait for it (at most `props.timeout_minutes`)."""
    if not 1 <= props.timeout_minutes <= MAX_HELM_TIMEOUT_MINUTES:
        raise ValueError(
            f"timeout_minutes={props.timeout_minutes}: use 1..{MAX_HELM_TIMEOUT_MINUTES} "
            "(Helm must report before the kubectl provider's Lambda is killed)"
        )
    return eks.HelmChart(
        scope,
        construct_id,
        cluster=props.cluster,
        chart=props.pin.chart,
        repository=props.pin.repository,
        version=props.pin.version,
        release=props.release,
        namespace=props.namespace,
        create_namespace=props.create_namespace or None,
        skip_crds=props.skip_crds or None,
        values=props.values,
        wait=True,
        timeout=Duration.minutes(props.timeout_minutes),
    )


class HelmAddon(Construct):
    """An add-on that is one pinned Helm release, waited for (read-only attribute `chart`)."""

    def __init__(self, scope: Construct, construct_id: str, props: HelmReleaseProps) -> None:
        super().__init__(scope, construct_id)
        self.chart = helm_release(self, "Chart", props)
