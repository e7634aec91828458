"""Which add-ons a profile installs, decided once from the settings (pure, no CDK).

The workload's settings say what it will ask of the cluster (an in-cluster Prometheus, an NLB,
a StorageClass); the platform installs exactly that, plus what every profile needs. The same
selection feeds the platform stack and the compatibility check, so a version check never
misses an installed add-on nor refuses one that is not installed.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.serving_settings import ServingSettings
from infra.settings import DeploymentSettings


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
    """Names (as in infra/addons/pins.py) of the add-ons the platform installs."""
    names = {"neuron", "keda", "ebs_csi"}
    # The one place the node autoscaler is chosen (the platform stack builds what this names).
    names.add("karpenter" if settings.autoscaler == "karpenter" else "cluster_autoscaler")
    if needs.prometheus_namespace is not None:
        names.add("prometheus")
    if needs.load_balancer_controller:
        names.add("aws_load_balancer_controller")
    return frozenset(names)
