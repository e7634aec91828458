"""Neuron on Kubernetes: the official Helm chart (device plugin, scheduler extension, node
problem detector) and AWS's neuron-monitor DaemonSet (Prometheus exporter)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct
from trnspec.hardware.topology import INSTANCE_TYPES

from infra.contracts import NEURON_SCHEDULER_NAME
from infra.platform.addons.addon import Addon, AddonScope, always
from infra.platform.addons.controller import KUBE_SYSTEM
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.neuron.monitor import NEURON_TOLERATION, monitor_manifest
from infra.platform.addons.pins import NEURON_CHART, NEURON_KUBE_SCHEDULER
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.settings import NeuronSettings


@dataclass(frozen=True)
class NeuronProps:
    """Inputs of the Neuron components."""

    release: HelmReleaseProps
    """The Neuron chart's release (in kube-system, values from `chart_values`)."""
    monitor: bool
    """Install neuron-monitor (`neuron.monitor`)."""
    instance_types: tuple[str, ...]
    """Trn2 types the pools use; neuron-monitor's node affinity must include each."""


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


class Neuron(Construct):
    """Makes `aws.amazon.com/neuron` schedulable on Trn2 nodes and exports their metrics."""

    def __init__(self, scope: Construct, construct_id: str, props: NeuronProps) -> None:
        super().__init__(scope, construct_id)
        self.chart = helm_release(self, "Chart", props.release)
        self.monitor: eks.KubernetesManifest | None = None
        if props.monitor:
            self.monitor = eks.KubernetesManifest(
                self,
                "Monitor",
                cluster=props.release.cluster,
                manifest=[monitor_manifest(props.instance_types)],
            )


def build(scope: AddonScope) -> Neuron:
    """The Neuron chart and neuron-monitor for every Trn2 type the pools use."""
    settings = scope.settings
    instance_types = tuple(p.instance_type for p in settings.trn2_pools)
    values = chart_values(settings.neuron, instance_types, settings.kubernetes_version)
    release = scope.release(NEURON_CHART, "neuron", KUBE_SYSTEM, values)
    props = NeuronProps(release, settings.neuron.monitor, instance_types)
    return Neuron(scope.stack, "Neuron", props)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(name="neuron", installed=always, build=build)
