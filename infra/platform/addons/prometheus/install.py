"""In-cluster Prometheus (kube-prometheus-stack): scrapes vLLM and neuron-monitor, answers KEDA.

Why in-cluster rather than Amazon Managed Prometheus:
- the autoscaling loop (vLLM /metrics -> Prometheus -> KEDA -> HPA) stays inside the cluster: no
  SigV4 auth in KEDA's trigger, no scraper or remote-write agent, no per-sample cost, and scaling
  keeps working when a regional managed endpoint is unreachable;
- the same chart brings Prometheus Operator (ServiceMonitor/PodMonitor, so scrape targets are
  declared next to the workload) and Grafana, whose sidecar loads the committed dashboard.
The cost is running Prometheus ourselves: its TSDB lives on a gp3 volume (size and retention are
settings), so a reschedule keeps the history. Teams with their own Prometheus set
`serving.prometheus: existing`; then this chart is not installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.contracts import KUBE_PROMETHEUS_STACK_FULLNAME
from infra.platform.addons.addon import Addon, AddonScope, WorkloadNeeds
from infra.platform.addons.helm import HelmAddon
from infra.platform.addons.pins import KUBE_PROMETHEUS_STACK_CHART
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.settings import DeploymentSettings


@dataclass(frozen=True)
class PrometheusValues:
    """What kube-prometheus-stack's values are made of."""

    node_selector: dict[str, str]
    """Where Prometheus, the operator and Grafana run (the system nodes)."""
    storage_class: str
    """StorageClass of Prometheus' volume (the platform's gp3 class)."""
    volume_gib: int
    """Size of Prometheus' volume."""
    retention_days: int
    """How long samples are kept (Prometheus also drops the oldest blocks near a full disk)."""


def kube_prometheus_stack_values(props: PrometheusValues) -> dict[str, Any]:
    pin = {"nodeSelector": dict(props.node_selector)}
    return {
        "fullnameOverride": KUBE_PROMETHEUS_STACK_FULLNAME,
        "alertmanager": {"enabled": False},
        "prometheusOperator": {**pin, "admissionWebhooks": {"patch": pin}},
        "kube-state-metrics": pin,
        "prometheus": {
            "prometheusSpec": {
                **pin,
                "retention": f"{props.retention_days}d",
                # Keep 10 % headroom on the volume: size-based retention before the disk fills.
                "retentionSize": f"{int(props.volume_gib * 0.9)}GB",
                "storageSpec": {
                    "volumeClaimTemplate": {
                        "spec": {
                            "storageClassName": props.storage_class,
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": f"{props.volume_gib}Gi"}},
                        }
                    }
                },
                # Select ServiceMonitors/PodMonitors from every release and namespace, so the
                # workload's own objects are scraped without the chart's release label.
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
            }
        },
        "grafana": {
            "enabled": True,
            **pin,
            # No default password: the Grafana chart generates one into a Secret.
            "sidecar": {"dashboards": {"enabled": True, "searchNamespace": "ALL"}},
        },
    }


def installed(settings: DeploymentSettings, needs: WorkloadNeeds) -> bool:
    """When the workload uses an in-cluster Prometheus (`serving.prometheus: in-cluster`)."""
    return needs.prometheus_namespace is not None


def build(scope: AddonScope) -> HelmAddon:
    """kube-prometheus-stack on a persistent volume, in the workload's monitoring namespace."""
    namespace = scope.needs.prometheus_namespace
    if namespace is None:  # `installed` is False then; the registry never builds it
        raise ValueError("prometheus: the workload names no in-cluster Prometheus namespace")
    values = PrometheusValues(
        node_selector=dict(SYSTEM_LABEL),
        storage_class=scope.needs.storage_class,
        volume_gib=scope.settings.addons.prometheus_volume_gib,
        retention_days=scope.settings.addons.prometheus_retention_days,
    )
    chart = KUBE_PROMETHEUS_STACK_CHART
    release = scope.release(
        chart, "kps", namespace, kube_prometheus_stack_values(values), create_namespace=True
    )
    return HelmAddon(scope.stack, "Prometheus", release)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(
    name="prometheus",
    installed=installed,
    build=build,
    requires=frozenset({"ebs_csi"}),
    reason="its volume is a PVC of the gp3 StorageClass the EBS CSI driver provisions",
)
