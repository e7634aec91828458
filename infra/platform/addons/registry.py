"""The add-on registry: every add-on the platform can install, which ones a profile installs
(decided once, from the settings, pure) and whether that set keeps every declared relation.

The workload's settings say what it will ask of the cluster (an in-cluster Prometheus, an NLB,
a StorageClass); the platform installs exactly that, plus what every profile needs. The platform
stack builds the installed add-ons by iterating `ADDONS`, and the same set feeds the
compatibility check, so a version check never misses an installed add-on nor refuses one that is
not installed.
"""

from __future__ import annotations

from infra.platform.addons import (
    aws_load_balancer_controller,
    cluster_autoscaler,
    ebs_csi,
    karpenter,
    keda,
    keda_http,
    neuron,
    prometheus,
)
from infra.platform.addons.addon import Addon, WorkloadNeeds
from infra.settings import DeploymentSettings

#: Every add-on's declaration, by name, in the order the platform stack builds them.
ADDONS: dict[str, Addon] = {
    a.name: a
    for a in (
        cluster_autoscaler.ADDON,
        karpenter.ADDON,
        neuron.ADDON,
        ebs_csi.ADDON,
        keda.ADDON,
        keda_http.ADDON,
        prometheus.ADDON,
        aws_load_balancer_controller.ADDON,
    )
}


def installed_addons(settings: DeploymentSettings, needs: WorkloadNeeds) -> frozenset[str]:
    """Names (as in infra/platform/addons/pins.py) of the add-ons the platform installs."""
    return frozenset(name for name, addon in ADDONS.items() if addon.installed(settings, needs))


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
