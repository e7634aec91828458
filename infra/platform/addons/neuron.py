"""Neuron on Kubernetes: the official Helm chart (device plugin, scheduler extension, node
problem detector) and AWS's neuron-monitor DaemonSet (Prometheus exporter)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct
from trnspec.hardware.topology import INSTANCE_TYPES

from infra.compliance.k8s_scan import skip_annotations
from infra.contracts import NEURON_MONITOR_POD_LABELS, NEURON_MONITOR_PORT, NEURON_SCHEDULER_NAME
from infra.platform.addons.addon import Addon, AddonScope, always
from infra.platform.addons.controller import KUBE_SYSTEM
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.pins import NEURON_CHART, NEURON_KUBE_SCHEDULER, NEURON_MONITOR_IMAGE
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.platform.cluster.neuron_node import NEURON_TAINT_EFFECT, NEURON_TAINT_KEY
from infra.settings import NeuronSettings

#: The image's entrypoint and arguments as AWS's published DaemonSet runs them
#: (aws-neuron/aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml, image 1.3.0): the script
#: starts neuron-monitor with the config baked into the image and serves its Prometheus exporter.
MONITOR_COMMAND = ("/opt/bin/entrypoint.sh",)
MONITOR_CONFIG = "/opt/aws/neuron/bin/neuron-monitor.conf"
#: Requests, limits and Go memory limit of the same published DaemonSet.
MONITOR_RESOURCES = {
    "requests": {"cpu": "256m", "memory": "128Mi"},
    "limits": {"cpu": "500m", "memory": "256Mi"},
}
MONITOR_GOMEMLIMIT = "160MiB"


def monitor_args(port: int) -> list[str]:
    """Arguments of the published DaemonSet, with our metrics port."""
    return ["--port", str(port), "--neuron-monitor-config", MONITOR_CONFIG]


#: The neuron-monitor DaemonSet (this module): it reads every Neuron device's counters on
#: the node, which the device plugin does not hand to an unprivileged container, and AWS ships
#: it privileged (aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml).
_PRIVILEGED = "neuron-monitor reads all Neuron devices of the node through the driver"
NEURON_MONITOR_SKIPS: dict[str, str] = {
    "CKV_K8S_16": f"privileged: {_PRIVILEGED} (as AWS's own DaemonSet)",
    "CKV_K8S_20": f"privileged implies privilege escalation: {_PRIVILEGED}",
    "CKV_K8S_22": "AWS's image is not documented to run on a read-only root filesystem",
    "CKV_K8S_23": f"runs as root like AWS's DaemonSet: {_PRIVILEGED}",
    "CKV_K8S_28": "privileged containers keep NET_RAW; the pod exposes only its metrics port",
    "CKV_K8S_29": f"a security context is set (privileged): {_PRIVILEGED}",
    "CKV_K8S_31": "seccomp does not apply to a privileged container",
    "CKV_K8S_37": "privileged containers hold all capabilities; dropping some has no effect",
    "CKV_K8S_40": f"runs as root (UID 0): {_PRIVILEGED}",
    "CKV_K8S_43": (
        "public.ecr.aws/neuron/neuron-monitor is pinned by version tag: its digest could not be "
        "resolved offline here; record it with `crane digest` before production"
    ),
    "CKV_K8S_15": "the version tag is pinned; IfNotPresent keeps node restarts off the registry",
}


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
    kubernetes_version: str
    """Cluster minor: picks the scheduler extension's kube-scheduler build."""
    timeout_minutes: int
    """How long the deploy waits for the chart's pods to be ready."""


def chart_values(
    settings: NeuronSettings, instance_types: tuple[str, ...], kubernetes_version: str
) -> dict[str, Any]:
    """Helm values: affinity list, tolerations for our taint, optional parts on or off, and a
    kube-scheduler of the cluster's own minor for the scheduler extension."""
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
                "image": {
                    "repository": NEURON_KUBE_SCHEDULER.repository,
                    "tag": NEURON_KUBE_SCHEDULER.tag_for(kubernetes_version),
                },
            },
        },
        "npd": {"enabled": settings.node_problem_detector},
    }


def monitor_manifest(instance_types: tuple[str, ...]) -> dict[str, Any]:
    """AWS's neuron-monitor DaemonSet (entrypoint, arguments, resources as published) on every
    Neuron node, tolerating the Trn2 taint and in kube-system instead of its own namespace."""
    instances = sorted(set(INSTANCE_TYPES) | set(instance_types))
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "neuron-monitor",
            "namespace": KUBE_SYSTEM,
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
                    "affinity": {"nodeAffinity": _instance_type_affinity(instances)},
                    "tolerations": [NEURON_TOLERATION],
                    "containers": [_monitor_container()],
                },
            },
        },
    }


def _instance_type_affinity(instances: list[str]) -> dict[str, Any]:
    """Required node affinity: only nodes of these instance types."""
    term = {
        "matchExpressions": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": instances}
        ]
    }
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}


def _monitor_container() -> dict[str, Any]:
    """The neuron-monitor container as AWS publishes it, serving on our metrics port."""
    return {
        "name": "neuron-monitor",
        "image": NEURON_MONITOR_IMAGE,
        "command": list(MONITOR_COMMAND),
        "args": monitor_args(NEURON_MONITOR_PORT),
        "env": [{"name": "GOMEMLIMIT", "value": MONITOR_GOMEMLIMIT}],
        "ports": [{"name": "metrics", "containerPort": NEURON_MONITOR_PORT, "protocol": "TCP"}],
        "resources": {k: dict(v) for k, v in MONITOR_RESOURCES.items()},
        # Reads device counters through the Neuron driver.
        "securityContext": {"privileged": True},
        # The exporter's port answers while the pipeline runs.
        "readinessProbe": {"tcpSocket": {"port": NEURON_MONITOR_PORT}, "periodSeconds": 10},
        "livenessProbe": {
            "tcpSocket": {"port": NEURON_MONITOR_PORT},
            "initialDelaySeconds": 30,
            "periodSeconds": 30,
            "failureThreshold": 4,
        },
    }


class Neuron(Construct):
    """Makes `aws.amazon.com/neuron` schedulable on Trn2 nodes and exports their metrics."""

    def __init__(self, scope: Construct, construct_id: str, props: NeuronProps) -> None:
        super().__init__(scope, construct_id)
        self.chart = helm_release(
            self,
            "Chart",
            HelmReleaseProps(
                cluster=props.cluster,
                pin=NEURON_CHART,
                release="neuron",
                namespace=KUBE_SYSTEM,
                values=chart_values(props.settings, props.instance_types, props.kubernetes_version),
                timeout_minutes=props.timeout_minutes,
            ),
        )
        self.monitor: eks.KubernetesManifest | None = None
        if props.settings.monitor:
            self.monitor = eks.KubernetesManifest(
                self,
                "Monitor",
                cluster=props.cluster,
                manifest=[monitor_manifest(props.instance_types)],
            )


def build(scope: AddonScope) -> Neuron:
    """The Neuron chart and neuron-monitor for every Trn2 type the pools use."""
    settings = scope.settings
    return Neuron(
        scope.stack,
        "Neuron",
        NeuronProps(
            cluster=scope.cluster,
            settings=settings.neuron,
            instance_types=tuple(p.instance_type for p in settings.trn2_pools),
            kubernetes_version=settings.kubernetes_version,
            timeout_minutes=scope.timeout_minutes,
        ),
    )


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(name="neuron", installed=always, build=build)
