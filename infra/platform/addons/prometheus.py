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

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.contracts import KUBE_PROMETHEUS_STACK_FULLNAME
from infra.platform.addons.addon import Addon
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.pins import KUBE_PROMETHEUS_STACK_CHART

#: Its relations to the other add-ons (checked at synth, infra/platform/addons/selection.py).
ADDON = Addon(
    name="prometheus",
    requires=frozenset({"ebs_csi"}),
    reason="its volume is a PVC of the gp3 StorageClass the EBS CSI driver provisions",
)


@dataclass(frozen=True)
class PrometheusProps:
    """Inputs of kube-prometheus-stack."""

    cluster: eks.ICluster
    """Cluster to install into."""
    namespace: str
    """Namespace of Prometheus, the operator and Grafana."""
    node_selector: dict[str, str]
    """Where they run (the system nodes)."""
    storage_class: str
    """StorageClass of Prometheus' volume (the platform's gp3 class)."""
    volume_gib: int
    """Size of Prometheus' volume."""
    retention_days: int
    """How long samples are kept (Prometheus also drops the oldest blocks near a full disk)."""
    timeout_minutes: int
    """How long the deploy waits for the release to be ready."""


def kube_prometheus_stack_values(props: PrometheusProps) -> dict[str, Any]:
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


class Prometheus(Construct):
    """kube-prometheus-stack on a persistent volume; attribute `chart`."""

    def __init__(self, scope: Construct, construct_id: str, props: PrometheusProps) -> None:
        super().__init__(scope, construct_id)
        self.chart = helm_release(
            self,
            "Chart",
            HelmReleaseProps(
                cluster=props.cluster,
                pin=KUBE_PROMETHEUS_STACK_CHART,
                release="kps",
                namespace=props.namespace,
                create_namespace=True,
                values=kube_prometheus_stack_values(props),
                timeout_minutes=props.timeout_minutes,
            ),
        )
