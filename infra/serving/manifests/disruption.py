"""PodDisruptionBudget for the serving pods."""

from __future__ import annotations

from infra.serving.manifests.pod import SERVE_COMPONENT, Manifest, metadata, selector_labels
from infra.serving.manifests.spec import WorkloadSpec


def pod_disruption_budget(spec: WorkloadSpec) -> Manifest:
    """At most one serving pod is evicted at a time.

    `maxUnavailable: 1` rather than `minAvailable`: with one replica, minAvailable would block
    every node drain and the node autoscaler's scale-down forever. Pods that never became ready
    (a stuck load) may always be evicted.
    """
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(spec, spec.name, SERVE_COMPONENT),
        "spec": {
            "maxUnavailable": 1,
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
            "selector": {"matchLabels": selector_labels(spec, SERVE_COMPONENT)},
        },
    }
