"""Which add-ons a profile installs, decided once from the settings (pure, no CDK).

The workload's settings say what it will ask of the cluster (an in-cluster Prometheus, an NLB,
a StorageClass); the platform installs exactly that, plus what every profile needs. The same
selection feeds the platform stack and the compatibility check, so a version check never
misses an installed add-on nor refuses one that is not installed.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.platform.addons import (
    aws_load_balancer_controller,
    cluster_autoscaler,
    ebs_csi,
    karpenter,
    keda,
    neuron,
    prometheus,
)
from infra.platform.addons.addon import Addon
from infra.settings import DeploymentSettings
from infra.settings.serving import ServingSettings

#: Every add-on's declaration, by name.
ADDONS: dict[str, Addon] = {
    a.name: a
    for a in (
        neuron.ADDON,
        cluster_autoscaler.ADDON,
        karpenter.ADDON,
        keda.ADDON,
        prometheus.ADDON,
        ebs_csi.ADDON,
        aws_load_balancer_controller.ADDON,
    )
}


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


def workload_needs(serving: ServingSettings) -> WorkloadNeeds:
    return WorkloadNeeds(
        prometheus_namespace=(
            serving.monitoring_namespace if serving.prometheus == "in-cluster" else None
        ),
        load_balancer_controller=serving.internal_nlb,
        storage_class=serving.ebs_storage_class,
    )


def installed_addons(settings: DeploymentSettings, needs: WorkloadNeeds) -> frozenset[str]:
    """Names (as in infra/platform/addons/pins.py) of the add-ons the platform installs."""
    names = {"neuron", "keda", "ebs_csi"}
    # The one place the node autoscaler is chosen (the platform stack builds what this names).
    names.add("karpenter" if settings.autoscaler == "karpenter" else "cluster_autoscaler")
    if needs.prometheus_namespace is not None:
        names.add("prometheus")
    if needs.load_balancer_controller:
        names.add("aws_load_balancer_controller")
    return frozenset(names)


def addon_problems(names: frozenset[str], addons: dict[str, Addon] | None = None) -> list[str]:
    """One line per broken relation among the installed add-ons `names`: a required add-on
    missing, an excluded one present, or a name no module declares."""
    declared = ADDONS if addons is None else addons
    lines: list[str] = []
    for name in sorted(names):
        addon = declared.get(name)
        if addon is None:
            lines.append(
                f"add-on {name}: no module of infra/platform/addons declares it; add its ADDON"
            )
            continue
        for missing in sorted(addon.requires - names):
            lines.append(
                f"add-on {name} requires {missing}, which is not installed ({addon.reason}); "
                f"install {missing} or remove {name}"
            )
        for clash in sorted(addon.excludes & names):
            lines.append(
                f"add-on {name} excludes {clash}, which is installed too ({addon.reason}); "
                "install only one of them"
            )
    return lines
