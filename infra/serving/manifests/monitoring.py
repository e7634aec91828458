"""Scrape targets for Prometheus Operator: vLLM's /metrics and neuron-monitor's exporter.

Each serving Deployment (the main one and, in a calibration deployment, the speculative arm) has
its own ServiceMonitor that keeps only the targets of its ClusterIP Service (named like the
Deployment): the internal NLB Service selects the same pods, and without the `keep` every pod
would be scraped once per Service, doubling every sum. Prometheus Operator labels each target
with `service` (the Service's name), `pod` and `namespace`; both arms serve the same model name,
so `service` is what tells their series apart (the KEDA query and the per-arm panels select on
it).

A Prometheus scrapes a monitor only if its serviceMonitorSelector / podMonitorSelector matches the
monitor's labels: the platform's selects every monitor (infra/platform/addons/prometheus), a
stock kube-prometheus-stack only those labelled `release: <its release name>`; on such a cluster
`serving.monitor_labels` carries that label (`manifests --check` shows the monitors' labels).
"""

from __future__ import annotations

from typing import Any

from trnspec.boundary import json_io

from infra.contracts import (
    GRAFANA_DASHBOARD_LABEL,
    METRICS_PATH,
    NEURON_MONITOR_POD_LABELS,
    NEURON_MONITOR_PORT,
    PART_OF,
    PART_OF_LABEL,
)
from infra.serving.manifests.pod import SERVE_COMPONENT, Manifest, metadata, selector_labels
from infra.serving.manifests.spec import WorkloadSpec
from infra.settings.serving import ServingSettings

SCRAPE_INTERVAL = "15s"
DASHBOARD_CONFIG_MAP = "trnspec-grafana-dashboard"
DASHBOARD_KEY = "trnspec-grafana.json"


#: The target label Prometheus Operator sets to the scraped Service's name.
SERVICE_TARGET_LABEL = "service"


def server_service_monitor(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    """vLLM's /metrics of `spec`'s pods, through its ClusterIP Service `spec.name` only; labelled
    `serving.monitor_labels` besides its own, for a Prometheus that selects monitors by label."""
    meta = metadata(spec, spec.name, SERVE_COMPONENT)
    meta["labels"] = {**settings.monitor_labels, **meta["labels"]}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": selector_labels(spec, SERVE_COMPONENT)},
            "namespaceSelector": {"matchNames": [spec.namespace]},
            "endpoints": [
                {
                    "port": "http",
                    "path": METRICS_PATH,
                    "interval": SCRAPE_INTERVAL,
                    "relabelings": [
                        {
                            "sourceLabels": ["__meta_kubernetes_service_name"],
                            "regex": spec.name,
                            "action": "keep",
                        }
                    ],
                }
            ],
        },
    }


def neuron_monitor_pod_monitor(settings: ServingSettings) -> Manifest:
    """neuron-monitor runs as a DaemonSet in its own namespace; its container port is unnamed."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {
            "name": "neuron-monitor",
            "namespace": settings.monitoring_namespace,
            "labels": {**settings.monitor_labels, PART_OF_LABEL: PART_OF},
        },
        "spec": {
            "selector": {"matchLabels": dict(NEURON_MONITOR_POD_LABELS)},
            "namespaceSelector": {"any": True},
            "podMetricsEndpoints": [
                {
                    "portNumber": NEURON_MONITOR_PORT,
                    "path": METRICS_PATH,
                    "interval": SCRAPE_INTERVAL,
                    # Add the node name so NeuronCore and HBM panels can be joined to pods.
                    "relabelings": [
                        {
                            "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                            "targetLabel": "node",
                        }
                    ],
                }
            ],
        },
    }


def dashboard_config_map(settings: ServingSettings, dashboard: dict[str, Any]) -> Manifest:
    """The committed Grafana dashboard, picked up by Grafana's dashboard sidecar."""
    key, value = GRAFANA_DASHBOARD_LABEL
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DASHBOARD_CONFIG_MAP,
            "namespace": settings.monitoring_namespace,
            "labels": {key: value, PART_OF_LABEL: PART_OF},
        },
        "data": {DASHBOARD_KEY: json_io.dumps(dashboard, sort_keys=True, newline=False)},
    }
