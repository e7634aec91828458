"""Puts the serving workload's manifests and its cluster add-ons (KEDA, Prometheus) on the cluster.

Prometheus choice: in-cluster kube-prometheus-stack by default, not Amazon Managed Prometheus.
- The autoscaling loop (vLLM /metrics -> Prometheus -> KEDA -> HPA) then stays inside the cluster:
  no SigV4 auth in KEDA's trigger, no scraper or remote-write agent to run, no per-sample cost,
  and scaling keeps working when a regional managed endpoint is unreachable.
- The same chart brings Prometheus Operator (ServiceMonitor/PodMonitor, so scrape targets are
  declared next to the workload) and Grafana, whose sidecar loads the committed dashboard.
- The cost is running Prometheus ourselves (15 days of retention on the system nodes). Teams that
  already run a Prometheus (AMP through a collector, or their own) set `prometheus: existing`
  with its URL: then no chart is installed, KEDA queries that URL, and pods carry the common
  `prometheus.io/*` scrape annotations instead of Operator objects.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IConstruct

from infra.serving_settings import ServingSettings
from infra.workload.constants import (
    KEDA_CHART,
    KEDA_CHART_REPOSITORY,
    KEDA_CHART_VERSION,
    KEDA_NAMESPACE,
    KUBE_PROMETHEUS_STACK_CHART,
    KUBE_PROMETHEUS_STACK_FULLNAME,
    KUBE_PROMETHEUS_STACK_REPOSITORY,
    KUBE_PROMETHEUS_STACK_VERSION,
)
from infra.workload.manifests import WorkloadManifests


def keda_values(node_selector: dict[str, str]) -> dict[str, Any]:
    return {
        # Controllers belong on the system nodes. The metrics API server serves from one
        # replica at a time; a second one only shortens failover, which matters because the
        # HPA of every ScaledObject reads through it.
        "nodeSelector": dict(node_selector),
        "metricsServer": {"replicaCount": 2},
        "podDisruptionBudget": {"metricServer": {"minAvailable": 1}},
    }


def kube_prometheus_stack_values(node_selector: dict[str, str]) -> dict[str, Any]:
    pin = {"nodeSelector": dict(node_selector)}
    return {
        "fullnameOverride": KUBE_PROMETHEUS_STACK_FULLNAME,
        "alertmanager": {"enabled": False},
        "prometheusOperator": {**pin, "admissionWebhooks": {"patch": pin}},
        "kube-state-metrics": pin,
        "prometheus": {
            "prometheusSpec": {
                **pin,
                "retention": "15d",
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


class ServingWorkload(Construct):
    """Applies the manifests in dependency order: namespace, identities, workload, CRD users.

    The KEDA ScaledObject waits for the KEDA chart (its CRD) and the monitoring objects for
    kube-prometheus-stack (Prometheus Operator CRDs); the pods wait for their service accounts.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: eks.ICluster,
        manifests: WorkloadManifests,
        settings: ServingSettings,
        service_accounts: list[IConstruct],
        system_node_selector: dict[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        pin = system_node_selector or {}
        self.namespace = eks.KubernetesManifest(
            self, "Namespace", cluster=cluster, manifest=[manifests.namespace]
        )
        for account in service_accounts:
            account.node.add_dependency(self.namespace)

        self.keda = eks.HelmChart(
            self,
            "Keda",
            cluster=cluster,
            chart=KEDA_CHART,
            repository=KEDA_CHART_REPOSITORY,
            version=KEDA_CHART_VERSION,
            release="keda",
            namespace=KEDA_NAMESPACE,
            create_namespace=True,
            values=keda_values(pin),
            wait=True,
            timeout=Duration.minutes(10),
        )

        self.prometheus: eks.HelmChart | None = None
        if settings.prometheus == "in-cluster":
            self.prometheus = eks.HelmChart(
                self,
                "KubePrometheusStack",
                cluster=cluster,
                chart=KUBE_PROMETHEUS_STACK_CHART,
                repository=KUBE_PROMETHEUS_STACK_REPOSITORY,
                version=KUBE_PROMETHEUS_STACK_VERSION,
                release="kps",
                namespace=settings.monitoring_namespace,
                create_namespace=True,
                values=kube_prometheus_stack_values(pin),
                wait=True,
                timeout=Duration.minutes(15),
            )

        self.core = eks.KubernetesManifest(
            self, "Workload", cluster=cluster, manifest=manifests.core, prune=True
        )
        self.core.node.add_dependency(self.namespace)
        for account in service_accounts:
            self.core.node.add_dependency(account)

        self.autoscaling = eks.KubernetesManifest(
            self, "Autoscaling", cluster=cluster, manifest=manifests.keda
        )
        self.autoscaling.node.add_dependency(self.keda)
        self.autoscaling.node.add_dependency(self.core)

        self.monitoring: eks.KubernetesManifest | None = None
        if manifests.monitoring:
            self.monitoring = eks.KubernetesManifest(
                self, "Monitoring", cluster=cluster, manifest=manifests.monitoring
            )
            self.monitoring.node.add_dependency(self.namespace)
            if self.prometheus is not None:
                self.monitoring.node.add_dependency(self.prometheus)
