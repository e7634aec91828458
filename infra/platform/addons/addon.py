"""What an add-on declares: when the platform installs it, how it is built, the add-ons it needs
and the ones it cannot share a cluster with (the cdk-eks-blueprints rule: each add-on states its
dependencies and conflicts, checked at synth). Each module of infra/platform/addons declares one
`ADDON`; `registry.ADDONS` lists them, `registry.installed_addons` picks a profile's set and
`registry.addon_problems` checks that set against every declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.platform.addons.helm import HelmReleaseProps
from infra.platform.addons.pins import ChartPin
from infra.platform.cluster.trn2_nodegroup import Trn2Nodegroup
from infra.settings import DeploymentSettings
from infra.settings.serving import ServingSettings


@dataclass(frozen=True)
class WorkloadNeeds:
    """What the serving workload asks of the cluster besides Trn2 nodes."""

    prometheus_namespace: str | None
    """Namespace of the in-cluster Prometheus the workload's monitors and KEDA trigger use, or
    None when it points at an existing Prometheus."""
    load_balancer_controller: bool
    """The workload exposes an internal NLB (a Service the AWS Load Balancer Controller owns)."""
    storage_class: str
    """Name of the gp3 StorageClass (`serving.ebs_storage_class`)."""
    wake_on_traffic: bool = False
    """The workload scales to zero and wakes on a request (`serving.scale_to_zero`): the KEDA
    HTTP add-on's interceptor holds requests while it scales up."""
    longest_request_seconds: int = 0
    """Longest a request stays open through the interceptor (0 without `wake_on_traffic`): held
    while no replica is ready, then answered; a terminating interceptor drains that long."""


def longest_request_seconds(serving: ServingSettings) -> int:
    """The wake route's worst case: held `wake.hold_seconds` (mode hold), then answered within
    the longer of the server's own drain bound (`max_request_seconds`, the longest request it
    finishes) and the route's wait for headers (`wake.response_header_seconds`)."""
    wake = serving.wake
    held = wake.hold_seconds if wake.mode == "hold" else 0
    return held + max(serving.max_request_seconds, wake.response_header_seconds)


def workload_needs(serving: ServingSettings) -> WorkloadNeeds:
    return WorkloadNeeds(
        prometheus_namespace=(
            serving.monitoring_namespace if serving.prometheus == "in-cluster" else None
        ),
        load_balancer_controller=serving.internal_nlb,
        storage_class=serving.ebs_storage_class,
        wake_on_traffic=serving.scale_to_zero,
        longest_request_seconds=longest_request_seconds(serving) if serving.scale_to_zero else 0,
    )


@dataclass(frozen=True)
class AddonScope:
    """What an add-on is built from: the platform stack and what it has built before."""

    stack: Construct
    """Where the add-on's construct goes (its id names the add-on in the template)."""
    cluster: eks.Cluster
    """Cluster to install into."""
    settings: DeploymentSettings
    """The deployment settings (cluster name and version, pools, add-on settings)."""
    needs: WorkloadNeeds
    """What the workload asks of the cluster."""
    vpc: ec2.IVpc
    """The cluster's VPC."""
    nodegroups: tuple[Trn2Nodegroup, ...]
    """The managed Trn2 node groups (empty when Karpenter launches the nodes)."""

    @property
    def timeout_minutes(self) -> int:
        """How long the deploy waits for each Helm release (`addons.helm_timeout_minutes`)."""
        return self.settings.addons.helm_timeout_minutes

    def release(
        self,
        pin: ChartPin,
        release: str,
        namespace: str,
        values: dict[str, Any],
        *,
        create_namespace: bool = False,
        skip_crds: bool = False,
    ) -> HelmReleaseProps:
        """A release of `pin` on this cluster, waited for as long as the settings say."""
        return HelmReleaseProps(
            cluster=self.cluster,
            pin=pin,
            release=release,
            namespace=namespace,
            values=values,
            timeout_minutes=self.timeout_minutes,
            create_namespace=create_namespace,
            skip_crds=skip_crds,
        )


@dataclass(frozen=True)
class Addon:
    """One add-on's name (as in infra/platform/addons/pins.py), when it is installed, how it is
    built and its relations to the others."""

    name: str
    installed: Callable[[DeploymentSettings, WorkloadNeeds], bool]
    """Whether a profile installs it (from its settings and its workload's needs)."""
    build: Callable[[AddonScope], Construct]
    """Adds the add-on to the platform stack; returns its construct."""
    requires: frozenset[str] = frozenset()
    """Add-ons that must be installed too; the platform stack deploys them first."""
    excludes: frozenset[str] = frozenset()
    """Add-ons that must not be installed on the same cluster."""
    reason: str = ""
    """Why (for the message when a relation is broken)."""


#: Why the two node autoscalers exclude each other.
ONE_NODE_AUTOSCALER = "both launch Trn2 nodes for the same pending pods; `autoscaler` picks one"


def always(settings: DeploymentSettings, needs: WorkloadNeeds) -> bool:
    """Installed by every profile."""
    return True


def node_autoscaler(
    name: str, setting: str, build: Callable[[AddonScope], Construct], other: str
) -> Addon:
    """The add-on `name`, one of the two node autoscalers: installed when the profile's
    `autoscaler` is `setting`, never beside the `other` one."""

    def installed(settings: DeploymentSettings, needs: WorkloadNeeds) -> bool:
        return settings.autoscaler == setting

    return Addon(
        name=name,
        installed=installed,
        build=build,
        excludes=frozenset({other}),
        reason=ONE_NODE_AUTOSCALER,
    )
