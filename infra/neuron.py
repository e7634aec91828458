"""Neuron on Kubernetes: the official Helm chart (device plugin, scheduler extension, node
problem detector) and the neuron-monitor Prometheus exporter as a DaemonSet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct
from trnspec.topology import INSTANCE_TYPES

from infra.cluster import SYSTEM_LABEL
from infra.neuron_node import NEURON_TAINT_EFFECT, NEURON_TAINT_KEY
from infra.settings import NeuronSettings
from infra.workload.constants import (
    NEURON_MONITOR_POD_LABELS,
    NEURON_MONITOR_PORT,
    NEURON_SCHEDULER_NAME,
)
from infra.workload.scan_skips import NEURON_MONITOR_SKIPS, skip_annotations

CHART_REPOSITORY = "oci://public.ecr.aws/neuron/neuron-helm-chart"
CHART = "neuron-helm-chart"
#: Chart 1.10.0 ships device plugin / scheduler 2.32.0.0 and lists trn2 types by default.
CHART_VERSION = "1.10.0"
NAMESPACE = "kube-system"
MONITOR_IMAGE = "public.ecr.aws/neuron/neuron-monitor:1.3.0"

NEURON_TOLERATION = {"key": NEURON_TAINT_KEY, "operator": "Exists", "effect": NEURON_TAINT_EFFECT}


@dataclass(frozen=True)
class NeuronProps:
    """Inputs of the Neuron components."""

    cluster: eks.Cluster
    """Cluster to install into."""
    settings: NeuronSettings
    """Which optional components to install."""
    instance_types: tuple[str, ...]
    """Trn2 types the pools use; the chart's node affinity must include each."""


def chart_values(settings: NeuronSettings, instance_types: tuple[str, ...]) -> dict[str, Any]:
    """Helm values: affinity list, tolerations for our taint, optional parts on or off."""
    instances = sorted(set(INSTANCE_TYPES) | set(instance_types))
    return {
        "neuronInstances": instances,
        "devicePlugin": {
            "enabled": True,
            "tolerations": [
                {"key": "CriticalAddonsOnly", "operator": "Exists"},
                NEURON_TOLERATION,
            ],
        },
        "scheduler": {
            "enabled": settings.scheduler_extension,
            "nodeSelector": dict(SYSTEM_LABEL),
            "customScheduler": {
                "fullnameOverride": NEURON_SCHEDULER_NAME,
                "nodeSelector": dict(SYSTEM_LABEL),
            },
        },
        "npd": {"enabled": settings.node_problem_detector},
    }


def monitor_manifest(instance_types: tuple[str, ...]) -> dict[str, Any]:
    """neuron-monitor piped into its Prometheus exporter on every Neuron node."""
    instances = sorted(set(INSTANCE_TYPES) | set(instance_types))
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "neuron-monitor",
            "namespace": NAMESPACE,
            "labels": dict(NEURON_MONITOR_POD_LABELS),
            # checkov findings that follow from privileged device access, with the reasons.
            "annotations": skip_annotations(NEURON_MONITOR_SKIPS),
        },
        "spec": {
            "selector": {"matchLabels": dict(NEURON_MONITOR_POD_LABELS)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {
                    "labels": dict(NEURON_MONITOR_POD_LABELS),
                    "annotations": {
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": str(NEURON_MONITOR_PORT),
                    },
                },
                "spec": {
                    "priorityClassName": "system-node-critical",
                    # It never calls the Kubernetes API.
                    "automountServiceAccountToken": False,
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {
                                                "key": "node.kubernetes.io/instance-type",
                                                "operator": "In",
                                                "values": instances,
                                            }
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                    "tolerations": [NEURON_TOLERATION],
                    "containers": [
                        {
                            "name": "neuron-monitor",
                            "image": MONITOR_IMAGE,
                            "command": ["/bin/sh", "-c"],
                            "args": [
                                "neuron-monitor | neuron-monitor-prometheus.py "
                                f"--port {NEURON_MONITOR_PORT}"
                            ],
                            "ports": [
                                {
                                    "name": "metrics",
                                    "containerPort": NEURON_MONITOR_PORT,
                                    "protocol": "TCP",
                                }
                            ],
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "128Mi"},
                                "limits": {"cpu": "500m", "memory": "256Mi"},
                            },
                            # Reads device counters through the Neuron driver.
                            "securityContext": {"privileged": True},
                            # The exporter's port answers while the pipeline runs.
                            "readinessProbe": {
                                "tcpSocket": {"port": NEURON_MONITOR_PORT},
                                "periodSeconds": 10,
                            },
                            "livenessProbe": {
                                "tcpSocket": {"port": NEURON_MONITOR_PORT},
                                "initialDelaySeconds": 30,
                                "periodSeconds": 30,
                                "failureThreshold": 4,
                            },
                        }
                    ],
                },
            },
        },
    }


class Neuron(Construct):
    """Makes `aws.amazon.com/neuron` schedulable on Trn2 nodes and exports their metrics."""

    def __init__(self, scope: Construct, construct_id: str, props: NeuronProps) -> None:
        super().__init__(scope, construct_id)
        self.chart = eks.HelmChart(
            self,
            "Chart",
            cluster=props.cluster,
            chart=CHART,
            repository=CHART_REPOSITORY,
            version=CHART_VERSION,
            release="neuron",
            namespace=NAMESPACE,
            values=chart_values(props.settings, props.instance_types),
        )
        self.monitor: eks.KubernetesManifest | None = None
        if props.settings.monitor:
            self.monitor = eks.KubernetesManifest(
                self,
                "Monitor",
                cluster=props.cluster,
                manifest=[monitor_manifest(props.instance_types)],
            )
