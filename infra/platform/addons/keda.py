"""KEDA: turns the workload's ScaledObject (queue depth in Prometheus) into an HPA.

Cluster-wide (its CRDs, operator and external-metrics API server serve every namespace), so the
platform owns it: destroying a workload never removes the autoscaling of the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.contracts import KEDA_NAMESPACE
from infra.platform.addons.addon import Addon
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.pins import KEDA_CHART

#: Its relations to the other add-ons (checked at synth, infra/platform/addons/selection.py).
ADDON = Addon(name="keda")


@dataclass(frozen=True)
class KedaProps:
    """Inputs of KEDA."""

    cluster: eks.ICluster
    """Cluster to install into."""
    node_selector: dict[str, str]
    """Where the operator and metrics server run (the system nodes)."""
    timeout_minutes: int
    """How long the deploy waits for KEDA to be ready."""


def keda_values(node_selector: dict[str, str]) -> dict[str, Any]:
    return {
        # Controllers belong on the system nodes. The metrics API server serves from one
        # replica at a time; a second one only shortens failover, which matters because the
        # HPA of every ScaledObject reads through it.
        "nodeSelector": dict(node_selector),
        "metricsServer": {"replicaCount": 2},
        "podDisruptionBudget": {"metricServer": {"minAvailable": 1}},
    }


class Keda(Construct):
    """The KEDA chart (CRDs, operator, metrics API server); attribute `chart`."""

    def __init__(self, scope: Construct, construct_id: str, props: KedaProps) -> None:
        super().__init__(scope, construct_id)
        self.chart = helm_release(
            self,
            "Chart",
            HelmReleaseProps(
                cluster=props.cluster,
                pin=KEDA_CHART,
                release="keda",
                namespace=KEDA_NAMESPACE,
                create_namespace=True,
                values=keda_values(props.node_selector),
                timeout_minutes=props.timeout_minutes,
            ),
        )
