"""KEDA: turns the workload's ScaledObject (queue depth in Prometheus) into an HPA.

Cluster-wide (its CRDs, operator and external-metrics API server serve every namespace), so the
platform owns it: destroying a workload never removes the autoscaling of the others.
"""

from __future__ import annotations

from typing import Any

from infra.contracts import KEDA_NAMESPACE
from infra.platform.addons.addon import Addon, AddonScope, always
from infra.platform.addons.helm import HelmAddon
from infra.platform.addons.pins import KEDA_CHART
from infra.platform.cluster.control_plane import SYSTEM_LABEL


def keda_values(node_selector: dict[str, str]) -> dict[str, Any]:
    return {
        # Controllers belong on the system nodes. The metrics API server serves from one
        # replica at a time; a second one only shortens failover, which matters because the
        # HPA of every ScaledObject reads through it.
        "nodeSelector": dict(node_selector),
        "metricsServer": {"replicaCount": 2},
        "podDisruptionBudget": {"metricServer": {"minAvailable": 1}},
    }


def build(scope: AddonScope) -> HelmAddon:
    """The KEDA chart (CRDs, operator, metrics API server) on the system nodes."""
    values = keda_values(SYSTEM_LABEL)
    release = scope.release(KEDA_CHART, "keda", KEDA_NAMESPACE, values, create_namespace=True)
    return HelmAddon(scope.stack, "Keda", release)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(name="keda", installed=always, build=build)
