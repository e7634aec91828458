"""AWS's neuron-monitor DaemonSet (the Prometheus exporter of every Neuron node's counters), as
AWS publishes it (aws-neuron/aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml), tolerating
the Trn2 taint and in kube-system."""

from __future__ import annotations

from typing import Any

from trnspec.hardware.topology import INSTANCE_TYPES

from infra.compliance.k8s_scan import skip_annotations
from infra.contracts import NEURON_MONITOR_POD_LABELS, NEURON_MONITOR_PORT
from infra.platform.addons.controller import KUBE_SYSTEM
from infra.platform.addons.pins import NEURON_MONITOR_IMAGE
from infra.platform.cluster.neuron_node import NEURON_TAINT_EFFECT, NEURON_TAINT_KEY

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
